package db_test

import (
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// TestColumnFamilyIteratorRefresh refreshes an iterator of a non-default
// family: it must go on reading that family, at the new sequence number,
// not the default family (found by the stress tool with
// -column_families=4).
func TestColumnFamilyIteratorRefreshOwnFamily(t *testing.T) {
	d, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	defer d.Close()
	cf, err := d.CreateColumnFamily("cf1", nil)
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("d"), []byte("default"), nil))
	require.NoError(t, cf.Put([]byte("a"), []byte("cf1-a"), nil))
	it := cf.NewIterator(nil)
	defer it.Close()
	it.SeekToFirst()
	require.True(t, it.Valid())
	require.Equal(t, "a", string(it.Key()))

	require.NoError(t, cf.Put([]byte("b"), []byte("cf1-b"), nil))
	require.NoError(t, it.Refresh())
	var got []string
	for it.SeekToFirst(); it.Valid(); it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	require.NoError(t, it.Err())
	require.Equal(t, []string{"a=cf1-a", "b=cf1-b"}, got)
}
