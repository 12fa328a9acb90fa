package db_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/batch"
	"github.com/stratadb/strata/internal/record"
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

// Recovery skips a family's records in a WAL below its log number: they are
// in its tables already, and a replayed old Put would shadow the delete its
// later table holds (written without the WAL, so that no replay of the
// delete hides the damage). The WAL stays because the default family still
// needs it.
func TestColumnFamilyRecoverySkipsFlushedRecords(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, CreateMissingColumnFamilies: true,
		DisableAutoCompactions: true, ColumnFamilies: map[string]*db.ColumnFamilyOptions{"a": nil}})
	require.NoError(t, err)
	a := d.ColumnFamily("a")
	sync := &db.WriteOptions{Sync: true}
	require.NoError(t, d.Put([]byte("d"), []byte("default"), sync)) // pins the first WAL
	require.NoError(t, a.Put([]byte("k"), []byte("old"), sync))
	require.NoError(t, a.Flush())
	require.NoError(t, a.Delete([]byte("k"), &db.WriteOptions{DisableWAL: true}))
	require.NoError(t, a.Flush())
	require.NoError(t, a.Put([]byte("w"), []byte("in-wal"), sync))
	crashed := copyOpenDir(t, dir)
	require.NoError(t, d.Close())
	require.GreaterOrEqual(t, len(filesMatching(t, crashed, "*.log")), 2, "the first WAL is still there")

	for _, ro := range []bool{true, false} {
		c, err := db.Open(copyOpenDir(t, crashed), &db.Options{ReadOnly: ro})
		require.NoError(t, err)
		_, err = c.ColumnFamily("a").Get([]byte("k"), nil)
		require.ErrorIs(t, err, db.ErrNotFound, "ReadOnly=%v: a flushed Put was replayed over its delete", ro)
		v, err := c.ColumnFamily("a").Get([]byte("w"), nil)
		require.NoError(t, err)
		require.Equal(t, "in-wal", string(v))
		v, err = c.Get([]byte("d"), nil)
		require.NoError(t, err)
		require.Equal(t, "default", string(v))
		require.NoError(t, c.Close())
	}
}

// A WAL record for a family id the MANIFEST never created is
// ErrCorruption naming the WAL and the offset (not a dropped family's
// record, which is skipped).
func TestColumnFamilyRecoveryUnknownFamilyID(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, CreateMissingColumnFamilies: true,
		ColumnFamilies: map[string]*db.ColumnFamilyOptions{"a": nil}})
	require.NoError(t, err)
	require.NoError(t, d.ColumnFamily("a").Put([]byte("k"), []byte("v"), &db.WriteOptions{Sync: true}))
	crashed := copyOpenDir(t, dir)
	require.NoError(t, d.Close())

	// Rewrite the newest WAL with one more record, for family 9.
	logs := filesMatching(t, crashed, "*.log")
	sort.Strings(logs)
	wal := logs[len(logs)-1]
	num, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(wal), ".log"), 10, 64)
	require.NoError(t, err)
	raw, err := os.ReadFile(wal)
	require.NoError(t, err)
	var out bytes.Buffer
	w := record.NewWriter(&out, num)
	r := record.NewReader(bytes.NewReader(raw), num, wal)
	records := 0
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		_, err = w.WriteRecord(rec)
		require.NoError(t, err)
		records++
	}
	require.Positive(t, records)
	offset := w.Size()
	var b batch.Batch
	b.PutCF(9, []byte("x"), []byte("y"))
	b.SetSeq(1000)
	_, err = w.WriteRecord(b.Data())
	require.NoError(t, err)
	require.NoError(t, w.Flush())
	require.NoError(t, os.WriteFile(wal, out.Bytes(), 0o644))

	for _, ro := range []bool{true, false} {
		_, err = db.Open(copyOpenDir(t, crashed), &db.Options{ReadOnly: ro})
		require.ErrorIs(t, err, db.ErrCorruption, "ReadOnly=%v", ro)
		require.ErrorContains(t, err, filepath.Base(wal))
		require.ErrorContains(t, err, fmt.Sprintf("offset %d", offset))
		require.ErrorContains(t, err, "column family 9")
	}
}
