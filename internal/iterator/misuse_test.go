package iterator

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// stepAfterFalse calls Next and Prev a few times on it, which just returned
// false: each must return false without panicking (the children, slice
// iterators, panic if stepped while exhausted).
func stepAfterFalse(t *testing.T, it Iterator, what string) {
	t.Helper()
	for i := 0; i < 2; i++ {
		require.NotPanics(t, func() { require.False(t, it.Next(), "%s: Next", what) }, what)
		require.NotPanics(t, func() { require.False(t, it.Prev(), "%s: Prev", what) }, what)
	}
}

func TestMerging_StepAfterFalse(t *testing.T) {
	kvs := randomKVs(rand.New(rand.NewSource(7)), 30, 12)
	parts := split(rand.New(rand.NewSource(8)), kvs, 3)
	newM := func() *Merging {
		var its []Iterator
		for _, p := range parts {
			its = append(its, newSliceIter(p))
		}
		return NewMerging(nil, its...)
	}

	m := newM()
	stepAfterFalse(t, m, "unpositioned")
	for ok := m.First(); ok; ok = m.Next() {
	}
	stepAfterFalse(t, m, "forward end")
	for ok := m.Last(); ok; ok = m.Prev() {
	}
	stepAfterFalse(t, m, "backward end")
	require.False(t, m.SeekGE([]byte("\xff\xff")))
	stepAfterFalse(t, m, "SeekGE past the end")
	require.False(t, m.SeekLT([]byte("")))
	stepAfterFalse(t, m, "SeekLT before the start")
	require.True(t, m.First(), "usable again after a seek")
	require.NoError(t, m.Close())

	// After a child's error.
	its := []Iterator{newSliceIter(parts[0]), &sliceIter{kvs: parts[1], failFrom: 2}}
	m = NewMerging(nil, its...)
	require.True(t, m.First())
	for ok := true; ok; ok = m.Next() {
	}
	require.Error(t, m.Error())
	stepAfterFalse(t, m, "after an error")
	require.Error(t, m.Close())
}

func TestLevel_StepAfterFalse(t *testing.T) {
	kvs := randomKVs(rand.New(rand.NewSource(9)), 60, 30)
	tl := newTestLevel(t, rand.New(rand.NewSource(10)), kvs, 0)
	require.Greater(t, len(tl.files), 2)

	it := NewLevel(nil, tl.bounds, tl.openFile)
	stepAfterFalse(t, it, "unpositioned")
	for ok := it.First(); ok; ok = it.Next() {
	}
	stepAfterFalse(t, it, "forward end")
	for ok := it.Last(); ok; ok = it.Prev() {
	}
	stepAfterFalse(t, it, "backward end")
	require.False(t, it.SeekGE([]byte("\xff\xff")))
	stepAfterFalse(t, it, "SeekGE past the end")
	require.True(t, it.First())
	it.ResetChild()
	stepAfterFalse(t, it, "after ResetChild")
	require.NoError(t, it.Close())

	// A file that fails to open leaves no child: Next and Prev return false.
	tl.failOpen = 1
	it = NewLevel(nil, tl.bounds, tl.openFile)
	for ok := it.First(); ok; ok = it.Next() {
	}
	require.Error(t, it.Error())
	stepAfterFalse(t, it, "after a failed open")
	require.Error(t, it.Error(), "the open error is kept")
	require.Error(t, it.Close())
}
