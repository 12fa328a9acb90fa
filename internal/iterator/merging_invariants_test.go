package iterator

import (
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// TestMerging_CheckHeap: the invariants-build check accepts the heap in
// both directions while iterating, and panics on a heap out of order or a
// stale cached key.
func TestMerging_CheckHeap(t *testing.T) {
	rng := testRand(t)
	kvs := randomKVs(rng, 200, 50)
	parts := split(rng, kvs, 5)
	iters := make([]Iterator, len(parts))
	for i, p := range parts {
		iters[i] = newSliceIter(p)
	}
	m := NewMerging(nil, iters...)
	n := 0
	for ok := m.First(); ok; ok = m.Next() {
		require.NotPanics(t, m.checkHeap)
		n++
	}
	require.Equal(t, len(kvs), n)
	for ok := m.Last(); ok; ok = m.Prev() {
		require.NotPanics(t, m.checkHeap)
	}

	m = NewMerging(nil,
		newSliceIter([]kv{{base.MakeInternalKey([]byte("a"), 1, base.KindSet), nil}}),
		newSliceIter([]kv{{base.MakeInternalKey([]byte("b"), 1, base.KindSet), nil}}),
		newSliceIter([]kv{{base.MakeInternalKey([]byte("c"), 1, base.KindSet), nil}}),
	)
	require.True(t, m.First())
	require.NotPanics(t, m.checkHeap)
	m.heap[0], m.heap[1] = m.heap[1], m.heap[0] // "b" above "a"
	require.Panics(t, m.checkHeap)
	m.heap[0], m.heap[1] = m.heap[1], m.heap[0]
	m.items[m.heap[0]].key = base.MakeInternalKey([]byte("z"), 1, base.KindSet) // stale cache
	require.Panics(t, m.checkHeap)
}
