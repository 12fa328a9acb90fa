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

// TestColumnFamilyDropDeletesWALOpen: dropping a family deletes the WALs
// only it needed; the others' recorded log numbers may be older (moved on
// in memory only), so the drop records the oldest WAL still needed, and
// Open after a crash during a flush or compaction must not take the
// missing WAL for lost MANIFEST edits.
func TestColumnFamilyDropDeletesWALOpen(t *testing.T) {
	dir := t.TempDir()
	opts := &db.Options{CreateIfMissing: true, CreateMissingColumnFamilies: true,
		ColumnFamilies: map[string]*db.ColumnFamilyOptions{"cf1": {}, "cf2": {}}}
	d, err := db.Open(dir, opts)
	require.NoError(t, err)
	cf1, cf2 := d.ColumnFamily("cf1"), d.ColumnFamily("cf2")
	require.NoError(t, cf1.Put([]byte("a"), []byte("1"), nil)) // keeps the first WAL alive
	require.NoError(t, cf2.Put([]byte("b"), []byte("2"), nil))
	require.NoError(t, cf2.Flush())
	require.NoError(t, d.DropColumnFamily(cf1)) // the first WAL goes
	require.NoError(t, d.Close())

	require.NoError(t, os.WriteFile(filepath.Join(dir, "000900.sst"), []byte("partial"), 0o644))
	delete(opts.ColumnFamilies, "cf1")
	d, err = db.Open(dir, opts)
	require.NoError(t, err)
	defer d.Close()
	require.Nil(t, d.ColumnFamily("cf1"))
	v, err := d.ColumnFamily("cf2").Get([]byte("b"), nil)
	require.NoError(t, err)
	require.Equal(t, "2", string(v))
}
