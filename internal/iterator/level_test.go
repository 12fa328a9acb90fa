package iterator

import (
	"errors"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// testLevel splits kvs into consecutive non-empty files at random cut
// points (adjacent files may share a boundary user key), and rules some
// files out, as a filter would, by opening them as Empty.
type testLevel struct {
	t        *testing.T
	files    [][]kv
	bounds   []FileBounds
	filtered []bool
	open     int // iterators currently open
	opens    int // calls to openFile
	failOpen int // file whose open fails; -1 for none
}

func newTestLevel(t *testing.T, rng *rand.Rand, kvs []kv, filterRate float64) *testLevel {
	l := &testLevel{t: t, failOpen: -1}
	for start := 0; start < len(kvs); {
		end := start + 1 + rng.Intn(8)
		if end > len(kvs) {
			end = len(kvs)
		}
		f := kvs[start:end]
		l.files = append(l.files, f)
		l.bounds = append(l.bounds, FileBounds{Smallest: f[0].key, Largest: f[len(f)-1].key})
		l.filtered = append(l.filtered, rng.Float64() < filterRate)
		start = end
	}
	return l
}

// visible is what the level should yield: the entries of unfiltered files.
func (l *testLevel) visible() []kv {
	var out []kv
	for i, f := range l.files {
		if !l.filtered[i] {
			out = append(out, f...)
		}
	}
	return out
}

// countingIter tracks how many child iterators are open at once.
type countingIter struct {
	Iterator
	l *testLevel
}

func (c *countingIter) Close() error {
	c.l.open--
	return c.Iterator.Close()
}

func (l *testLevel) openFile(i int) (Iterator, error) {
	l.opens++
	if i == l.failOpen {
		return nil, errors.New("open failed")
	}
	l.open++
	require.LessOrEqual(l.t, l.open, 1, "a level keeps at most one file open")
	if l.filtered[i] {
		return &countingIter{Iterator: Empty(), l: l}, nil
	}
	return &countingIter{Iterator: newSliceIter(l.files[i]), l: l}, nil
}

func TestLevel_Randomized(t *testing.T) {
	rng := testRand(t)
	for round := 0; round < 50; round++ {
		userKeys := 1 + rng.Intn(40)
		kvs := randomKVs(rng, rng.Intn(150), userKeys)
		tl := newTestLevel(t, rng, kvs, []float64{0, 0.3, 0.8}[round%3])
		it := NewLevel(nil, tl.bounds, tl.openFile)
		checkAgainstModel(t, rng, it, tl.visible(), 500, userKeys)
		require.NoError(t, it.Close())
		require.Zero(t, tl.open, "Close closes the open child")
	}
}

// A level inside a merging iterator, several levels deep, against the
// merged model.
func TestLevel_UnderMerging(t *testing.T) {
	rng := testRand(t)
	for round := 0; round < 20; round++ {
		userKeys := 1 + rng.Intn(30)
		kvs := randomKVs(rng, rng.Intn(200), userKeys)
		var all []kv
		var iters []Iterator
		for _, part := range split(rng, kvs, 1+rng.Intn(4)) {
			tl := newTestLevel(t, rng, part, 0.2)
			all = append(all, tl.visible()...)
			iters = append(iters, NewLevel(nil, tl.bounds, tl.openFile))
		}
		sortKVs(all)
		m := NewMerging(nil, iters...)
		checkAgainstModel(t, rng, m, all, 400, userKeys)
		require.NoError(t, m.Close())
	}
}

func TestLevel_OpensLazily(t *testing.T) {
	kvs := randomKVs(rand.New(rand.NewSource(2)), 100, 50)
	tl := newTestLevel(t, rand.New(rand.NewSource(3)), kvs, 0)
	require.Greater(t, len(tl.files), 3)
	it := NewLevel(nil, tl.bounds, tl.openFile)
	require.Zero(t, tl.opens, "NewLevel opens nothing")
	target := tl.bounds[2].Largest.UserKey
	require.True(t, it.SeekGE(target))
	require.LessOrEqual(t, tl.opens, 2, "a seek opens the file holding the key (and the next if the key is its last)")
	require.NoError(t, it.Close())
}

func TestLevel_Errors(t *testing.T) {
	kvs := randomKVs(rand.New(rand.NewSource(4)), 60, 30)
	tl := newTestLevel(t, rand.New(rand.NewSource(5)), kvs, 0)
	require.Greater(t, len(tl.files), 2)
	tl.failOpen = 1
	it := NewLevel(nil, tl.bounds, tl.openFile)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	require.Equal(t, len(tl.files[0]), n, "the walk stops at the file that fails to open")
	require.Error(t, it.Error())
	require.True(t, it.Last())
	require.NoError(t, it.Error(), "a successful positioning call clears the error")
	require.NoError(t, it.Close())

	// A child's error surfaces, and is returned by Close.
	boom := errors.New("boom")
	it = NewLevel(nil, tl.bounds, func(i int) (Iterator, error) {
		if i == 1 {
			return NewError(boom), nil
		}
		return newSliceIter(tl.files[i]), nil
	})
	n = 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	require.Equal(t, len(tl.files[0]), n)
	require.ErrorIs(t, it.Error(), boom)
	require.ErrorIs(t, it.Close(), boom)
}

func TestLevel_Empty(t *testing.T) {
	it := NewLevel(nil, nil, func(int) (Iterator, error) { panic("no files") })
	require.False(t, it.First())
	require.False(t, it.Last())
	require.False(t, it.SeekGE([]byte("a")))
	require.False(t, it.SeekLT([]byte("a")))
	require.NoError(t, it.Close())
}

func TestEmptyAndError(t *testing.T) {
	e := Empty()
	require.Same(t, e, Empty())
	require.Zero(t, testing.AllocsPerRun(10, func() { _ = Empty() }))
	require.False(t, e.First())
	require.False(t, e.SeekGE([]byte("a")))
	require.NoError(t, e.Error())
	require.NoError(t, e.Close())

	boom := errors.New("boom")
	it := NewError(boom)
	require.False(t, it.Last())
	require.ErrorIs(t, it.Error(), boom)
	require.ErrorIs(t, it.Close(), boom)
}

func TestLevel_ResetChildReopens(t *testing.T) {
	kvs := randomKVs(rand.New(rand.NewSource(6)), 40, 20)
	tl := newTestLevel(t, rand.New(rand.NewSource(7)), kvs, 0)
	it := NewLevel(nil, tl.bounds, tl.openFile)
	require.True(t, it.First())
	opens := tl.opens
	require.True(t, it.First())
	require.Equal(t, opens, tl.opens, "a seek into the open file reuses it")
	it.ResetChild()
	require.Zero(t, tl.open)
	require.True(t, it.First())
	require.Equal(t, opens+1, tl.opens, "after ResetChild the file is opened again")
	require.NoError(t, it.Close())
}
