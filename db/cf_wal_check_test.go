package db_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// TestColumnFamilyEmptyDefaultOldWALMissing: with families, a flush of
// one family deletes the WALs no family needs, while an empty family (here
// the default one) keeps the log number its last edit recorded (moved on
// in memory only, as RocksDB does). After a crash during a later flush or
// compaction (an unnamed table is left, made here by hand) Open must
// still open the database: the default family's recorded WAL being gone
// does not mean the MANIFEST lost edits. Found by the stress tool's
// power-loss mode with -column_families=4.
func TestColumnFamilyEmptyDefaultOldWALMissing(t *testing.T) {
	t.Skip("BUG: checkLogNumber takes the default family's recorded log number for a WAL that must exist; with several families an empty family's WAL is deleted without an edit, so Open reports a MANIFEST that 'ends early'")
	dir := t.TempDir()
	opts := &db.Options{CreateIfMissing: true, CreateMissingColumnFamilies: true,
		ColumnFamilies: map[string]*db.ColumnFamilyOptions{"cf1": {}}}
	d, err := db.Open(dir, opts)
	require.NoError(t, err)
	cf := d.ColumnFamily("cf1")
	require.NoError(t, cf.Put([]byte("a"), []byte("1"), nil))
	require.NoError(t, cf.Flush())
	require.NoError(t, cf.Put([]byte("b"), []byte("2"), nil))
	require.NoError(t, cf.Flush())
	require.NoError(t, d.Close())

	// What a crash during a flush or compaction leaves: a table no
	// version names, numbered after every WAL.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "000900.sst"), []byte("partial"), 0o644))
	d, err = db.Open(dir, opts)
	require.NoError(t, err)
	defer d.Close()
	v, err := d.ColumnFamily("cf1").Get([]byte("b"), nil)
	require.NoError(t, err)
	require.Equal(t, "2", string(v))
}
