package db_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/vfs"
	"github.com/stretchr/testify/require"
)

// An open iterator keeps the data block it rests on while point reads push
// it out of a small block cache: rocksdb.block-cache-pinned-usage counts
// it, the iterator still reads the right entries, and once it moves on and
// closes nothing is pinned.
func TestBlockCache_IteratorPinsEvictedBlock(t *testing.T) {
	d, err := db.Open("db", &db.Options{FS: vfs.NewMem(), CreateIfMissing: true, BlockCacheSize: 64 << 10, DisableAutoCompactions: true})
	require.NoError(t, err)
	defer d.Close()
	val := func(i int) []byte { return fmt.Appendf(nil, "value-%06d-%0200d", i, i) }
	const n = 5000
	for i := range n {
		require.NoError(t, d.Put(fmt.Appendf(nil, "k%06d", i), val(i), nil))
	}
	require.NoError(t, d.Flush())
	pinned := func() int64 {
		v, ok := d.GetProperty("rocksdb.block-cache-pinned-usage")
		require.True(t, ok)
		p, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err)
		return p
	}
	it := d.NewIterator(nil)
	it.Seek([]byte("k001000"))
	require.True(t, it.Valid())
	for i := 0; i < n; i += 3 { // evicts the iterator's block
		_, err := d.Get(fmt.Appendf(nil, "k%06d", i), nil)
		require.NoError(t, err)
	}
	require.Positive(t, pinned())
	for i := 1000; i < 1200; i++ {
		require.True(t, it.Valid())
		require.Equal(t, fmt.Sprintf("k%06d", i), string(it.Key()))
		require.Equal(t, string(val(i)), string(it.Value()))
		it.Next()
	}
	require.NoError(t, it.Close())
	require.Zero(t, pinned())
}
