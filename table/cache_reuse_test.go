package table

import (
	"fmt"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stretchr/testify/require"
)

// A closed reader leaves its blocks in the cache (they age out like any
// cold block), but a new reader, even of a file at the same offsets, keys
// its blocks by a fresh id and never gets them.
func TestCache_ClosedReaderBlocksNotReused(t *testing.T) {
	build := func(tag string) *memFile {
		model := make([]kv, 2000)
		for i := range model {
			model[i] = kv{base.MakeInternalKey([]byte(fmt.Sprintf("key%08d", i)), 1, base.KindSet),
				[]byte(fmt.Sprintf("%s-%06d", tag, i))}
		}
		f, _ := buildTable(t, model, nil, WriterOptions{BlockSize: 256})
		return f
	}
	fa, fb := build("a"), build("b")
	require.Equal(t, len(fa.b), len(fb.b), "same layout, so that the block offsets coincide")
	c := cache.New(64 << 20)

	get := func(r *Reader, i int) string {
		v, _, _, found, err := r.Get([]byte(fmt.Sprintf("key%08d", i)), base.MaxSeqNum)
		require.NoError(t, err)
		require.True(t, found)
		return string(v)
	}
	ra := openMem(t, fa, c)
	for i := 0; i < 2000; i += 7 {
		require.Equal(t, fmt.Sprintf("a-%06d", i), get(ra, i))
	}
	require.NoError(t, ra.Close())
	used := c.Stats().Used
	require.Positive(t, used, "the closed reader's blocks stay cached")

	rb := openMem(t, fb, c)
	defer rb.Close()
	require.NotEqual(t, ra.cacheID, rb.cacheID)
	for i := 0; i < 2000; i += 7 {
		require.Equal(t, fmt.Sprintf("b-%06d", i), get(rb, i))
	}
}
