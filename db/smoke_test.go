package db_test

import (
	"fmt"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

func TestSmoke(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, WriteBufferSize: 64 << 10, BloomBitsPerKey: 10})
	require.NoError(t, err)
	for i := 0; i < 5000; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("key%06d", i)), []byte(fmt.Sprintf("val%d", i)), nil))
	}
	require.NoError(t, d.Delete([]byte("key000010"), nil))
	require.NoError(t, d.DeleteRange([]byte("key000100"), []byte("key000200"), nil))
	v, err := d.Get([]byte("key000042"), nil)
	require.NoError(t, err)
	require.Equal(t, "val42", string(v))
	_, err = d.Get([]byte("key000010"), nil)
	require.ErrorIs(t, err, db.ErrNotFound)
	_, err = d.Get([]byte("key000150"), nil)
	require.ErrorIs(t, err, db.ErrNotFound)
	require.NoError(t, d.Flush())
	it := d.NewIterator(nil)
	n := 0
	for it.SeekToFirst(); it.Valid(); it.Next() {
		n++
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.Equal(t, 5000-1-100, n)
	t.Log(d.GetProperty(db.PropLevels))
	require.NoError(t, d.Close())

	d, err = db.Open(dir, nil)
	require.NoError(t, err)
	v, err = d.Get([]byte("key004999"), nil)
	require.NoError(t, err)
	require.Equal(t, "val4999", string(v))
	_, err = d.Get([]byte("key000150"), nil)
	require.ErrorIs(t, err, db.ErrNotFound)
	it = d.NewIterator(nil)
	n = 0
	for it.SeekToLast(); it.Valid(); it.Prev() {
		n++
	}
	require.NoError(t, it.Err())
	require.Equal(t, 5000-1-100, n)
	require.NoError(t, it.Close())
	require.NoError(t, d.Close())
}
