package db_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// TestTableCache_Eviction reads a database with more tables than
// MaxOpenFiles, so readers are evicted and reopened while in use by
// iterators and point reads.
func TestTableCache_Eviction(t *testing.T) {
	d, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true, MaxOpenFiles: 2,
		DisableAutoCompactions: true})
	require.NoError(t, err)
	defer d.Close()
	const tables, perTable = 6, 50
	for i := 0; i < tables; i++ {
		for j := 0; j < perTable; j++ {
			k := fmt.Sprintf("k%02d-%03d", j, i) // every table spans the key space
			require.NoError(t, d.Put([]byte(k), []byte(k), nil))
		}
		require.NoError(t, d.Flush())
	}
	it := d.NewIterator(nil)
	n := 0
	for it.SeekToFirst(); it.Valid(); it.Next() {
		// Point reads in the middle of the scan churn the table cache.
		v, err := d.Get(it.Key(), nil)
		require.NoError(t, err)
		require.Equal(t, it.Key(), v)
		n++
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.Equal(t, tables*perTable, n)
	opened, _ := d.GetProperty(db.PropTablesOpened)
	require.NotEqual(t, "6", opened, "readers were never evicted")
}

// TestTableCache_MaxOpenFilesOne runs a database with many disjoint tables
// at MaxOpenFiles=1: point reads and scans across every table, and repeated
// reads of one table, which must keep that table's reader open instead of
// evicting the entry just inserted and reopening the file each time.
func TestTableCache_MaxOpenFilesOne(t *testing.T) {
	d, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true, MaxOpenFiles: 1,
		DisableAutoCompactions: true})
	require.NoError(t, err)
	defer d.Close()
	const tables, perTable = 8, 40
	key := func(i, j int) []byte { return []byte(fmt.Sprintf("t%02d-%03d", i, j)) }
	for i := 0; i < tables; i++ {
		for j := 0; j < perTable; j++ {
			require.NoError(t, d.Put(key(i, j), key(j, i), nil))
		}
		require.NoError(t, d.Flush()) // table i holds exactly the keys t<i>-*
	}
	opened := func() int {
		s, ok := d.GetProperty(db.PropTablesOpened)
		require.True(t, ok)
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		return n
	}

	// Reads that alternate between tables, then a scan with point reads
	// of other tables in the middle.
	for j := 0; j < perTable; j++ {
		for i := 0; i < tables; i++ {
			v, err := d.Get(key(i, j), nil)
			require.NoError(t, err)
			require.Equal(t, key(j, i), v)
		}
	}
	it := d.NewIterator(nil)
	n := 0
	for it.SeekToFirst(); it.Valid(); it.Next() {
		i, j := n/perTable, n%perTable
		require.Equal(t, key(i, j), it.Key())
		require.Equal(t, key(j, i), it.Value())
		v, err := d.Get(key((i+3)%tables, j), nil)
		require.NoError(t, err)
		require.Equal(t, key(j, (i+3)%tables), v)
		n++
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.Equal(t, tables*perTable, n)
	// Backwards too.
	it = d.NewIterator(nil)
	for it.SeekToLast(); it.Valid(); it.Prev() {
		n--
		require.Equal(t, key(n/perTable, n%perTable), it.Key())
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.Zero(t, n)

	// Repeated reads of one table open it once.
	_, err = d.Get(key(0, 0), nil)
	require.NoError(t, err)
	before := opened()
	for j := 0; j < perTable; j++ {
		v, err := d.Get(key(5, j), nil)
		require.NoError(t, err)
		require.Equal(t, key(j, 5), v)
	}
	require.Equal(t, before+1, opened(), "the table's reader was not kept open")
}
