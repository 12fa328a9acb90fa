package db_test

import (
	"fmt"
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
