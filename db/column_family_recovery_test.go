package db_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// copyOpenDir copies the files of an open database's directory, as a crash
// would leave them (the WAL is in the page cache, readable).
func copyOpenDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	names, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range names {
		if e.Name() == "LOCK" || e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644))
	}
	return dst
}

// TestColumnFamilyPointInTimeInconsistency: under point-in-time recovery,
// replay stops at a damaged WAL; a family whose tables already hold a later
// WAL's writes would then be ahead of the recovered point, and Open fails
// with ErrCorruption naming it (RocksDB's "column family inconsistency").
// Without that family's flush, the same damage recovers to a prefix.
func TestColumnFamilyPointInTimeInconsistency(t *testing.T) {
	for _, flushA := range []bool{true, false} {
		dir := t.TempDir()
		d, err := db.Open(dir, &db.Options{CreateIfMissing: true, CreateMissingColumnFamilies: true,
			ColumnFamilies: map[string]*db.ColumnFamilyOptions{"a": nil}})
		require.NoError(t, err)
		a := d.ColumnFamily("a")
		sync := &db.WriteOptions{Sync: true}
		require.NoError(t, d.Put([]byte("d1"), []byte("v"), sync))
		require.NoError(t, a.Put([]byte("a1"), []byte("v"), sync))
		if flushA {
			require.NoError(t, a.Flush()) // a's log number moves past this WAL
		}
		require.NoError(t, d.Put([]byte("d2"), []byte("v"), sync))
		crashed := copyOpenDir(t, dir)
		require.NoError(t, d.Close())

		logs := filesMatching(t, crashed, "*.log")
		sort.Strings(logs)
		require.NotEmpty(t, logs)
		// The first record of the oldest WAL: default's d1.
		flipByte(t, logs[0], 10)
		d, err = db.Open(crashed, &db.Options{WALRecoveryMode: db.WALRecoveryPointInTime})
		if flushA {
			require.ErrorIs(t, err, db.ErrCorruption)
			require.ErrorContains(t, err, `column family "a"`)
			continue
		}
		require.NoError(t, err)
		_, err = d.Get([]byte("d1"), nil)
		require.ErrorIs(t, err, db.ErrNotFound)
		_, err = d.ColumnFamily("a").Get([]byte("a1"), nil)
		require.ErrorIs(t, err, db.ErrNotFound)
		require.NoError(t, d.Close())
	}
}
