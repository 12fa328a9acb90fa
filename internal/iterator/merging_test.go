package iterator

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

var seedFlag = flag.Int64("seed", 0, "random seed for the randomized iterator tests (0: time)")

func testRand(t testing.TB) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -seed)", seed)
	return rand.New(rand.NewSource(seed))
}

// randomKVs returns n entries with distinct internal keys over a small set
// of user keys (so that user keys repeat with several versions), sorted.
func randomKVs(rng *rand.Rand, n, userKeys int) []kv {
	kvs := make([]kv, n)
	for i := range kvs {
		uk := []byte(fmt.Sprintf("k%03d", rng.Intn(userKeys)))
		kind := base.KindSet
		if rng.Intn(4) == 0 {
			kind = base.KindDelete
		}
		kvs[i] = kv{
			key:   base.MakeInternalKey(uk, base.SeqNum(i+1), kind),
			value: []byte(fmt.Sprintf("v%d", i)),
		}
	}
	sortKVs(kvs)
	return kvs
}

func sortKVs(kvs []kv) {
	sort.SliceStable(kvs, func(i, j int) bool { return base.InternalCompare(kvs[i].key, kvs[j].key) < 0 })
}

// model is a sorted slice with an iterator position, the reference for the
// randomized tests.
type model struct {
	kvs []kv
	pos int
}

func (m *model) valid() bool { return m.pos >= 0 && m.pos < len(m.kvs) }

func (m *model) seekGE(k []byte) bool {
	m.pos = sort.Search(len(m.kvs), func(i int) bool { return bytes.Compare(m.kvs[i].key.UserKey, k) >= 0 })
	return m.valid()
}

func (m *model) seekLT(k []byte) bool {
	m.pos = sort.Search(len(m.kvs), func(i int) bool { return bytes.Compare(m.kvs[i].key.UserKey, k) >= 0 }) - 1
	return m.valid()
}

// checkAgainstModel runs random operations on it and on the model, and
// compares every result.
func checkAgainstModel(t *testing.T, rng *rand.Rand, it Iterator, kvs []kv, ops, userKeys int) {
	t.Helper()
	m := &model{kvs: kvs}
	valid := false
	var trace []string
	for i := 0; i < ops; i++ {
		var got, want bool
		var op string
		switch r := rng.Intn(10); {
		case r < 3 && valid:
			op = "next"
			got, want = it.Next(), func() bool { m.pos++; return m.valid() }()
		case r < 6 && valid:
			op = "prev"
			got, want = it.Prev(), func() bool { m.pos--; return m.valid() }()
		case r < 7:
			k := []byte(fmt.Sprintf("k%03d", rng.Intn(userKeys+2)-1))
			op = "seek-ge " + string(k)
			got, want = it.SeekGE(k), m.seekGE(k)
		case r < 8:
			k := []byte(fmt.Sprintf("k%03d", rng.Intn(userKeys+2)-1))
			op = "seek-lt " + string(k)
			got, want = it.SeekLT(k), m.seekLT(k)
		case r < 9:
			op = "first"
			m.pos = 0
			got, want = it.First(), m.valid()
		default:
			op = "last"
			m.pos = len(m.kvs) - 1
			got, want = it.Last(), m.valid()
		}
		trace = append(trace, op)
		if len(trace) > 20 {
			trace = trace[1:]
		}
		require.NoError(t, it.Error(), "after %v", trace)
		require.Equal(t, want, got, "after %v", trace)
		valid = got
		if valid {
			require.Equal(t, m.kvs[m.pos].key.String(), it.Key().String(), "after %v", trace)
			require.Equal(t, string(m.kvs[m.pos].value), string(it.Value()), "after %v", trace)
		}
	}
}

// split deals kvs at random into n sorted children.
func split(rng *rand.Rand, kvs []kv, n int) [][]kv {
	parts := make([][]kv, n)
	for _, e := range kvs {
		i := rng.Intn(n)
		parts[i] = append(parts[i], e)
	}
	return parts
}

func TestMerging_Randomized(t *testing.T) {
	rng := testRand(t)
	for round := 0; round < 50; round++ {
		userKeys := 1 + rng.Intn(40)
		kvs := randomKVs(rng, rng.Intn(200), userKeys)
		parts := split(rng, kvs, 1+rng.Intn(6))
		iters := make([]Iterator, len(parts))
		for i, p := range parts {
			iters[i] = newSliceIter(p)
		}
		m := NewMerging(nil, iters...)
		checkAgainstModel(t, rng, m, kvs, 500, userKeys)
		require.NoError(t, m.Close())
	}
}

func TestMerging_NoChildren(t *testing.T) {
	m := NewMerging(nil)
	require.False(t, m.First())
	require.False(t, m.SeekLT([]byte("a")))
	require.NoError(t, m.Close())
}

// Identical internal keys in two children (misuse) still come out in a
// deterministic order: lower child index first going forward, the exact
// reverse going backward, including across direction switches.
func TestMerging_DuplicateKeysDeterministic(t *testing.T) {
	mk := func(child int, keys ...string) *sliceIter {
		var kvs []kv
		for _, k := range keys {
			kvs = append(kvs, kv{base.MakeInternalKey([]byte(k), 5, base.KindSet), []byte(fmt.Sprint(child))})
		}
		return newSliceIter(kvs)
	}
	m := NewMerging(nil, mk(0, "a", "b"), mk(1, "a", "b"), mk(2, "b"))
	var fwd []string
	for ok := m.First(); ok; ok = m.Next() {
		fwd = append(fwd, string(m.Key().UserKey)+string(m.Value()))
	}
	require.Equal(t, []string{"a0", "a1", "b0", "b1", "b2"}, fwd)
	var bwd []string
	for ok := m.Last(); ok; ok = m.Prev() {
		bwd = append(bwd, string(m.Key().UserKey)+string(m.Value()))
	}
	require.Equal(t, []string{"b2", "b1", "b0", "a1", "a0"}, bwd)
	// Switch directions in the middle of the duplicates.
	require.True(t, m.First())
	require.True(t, m.Next()) // a1
	require.True(t, m.Next()) // b0
	require.True(t, m.Prev())
	require.Equal(t, "a1", string(m.Key().UserKey)+string(m.Value()))
	require.True(t, m.Next())
	require.Equal(t, "b0", string(m.Key().UserKey)+string(m.Value()))
	require.NoError(t, m.Close())
}

func TestMerging_ErrorSurfaces(t *testing.T) {
	boom := errors.New("boom")
	good := newSliceIter([]kv{{base.MakeInternalKey([]byte("a"), 1, base.KindSet), nil}})
	m := NewMerging(nil, good, NewError(boom))
	require.False(t, m.First())
	require.ErrorIs(t, m.Error(), boom)
	require.False(t, m.SeekGE([]byte("a")))
	require.ErrorIs(t, m.Close(), boom)

	// An error in the middle of a walk.
	kvs := randomKVs(rand.New(rand.NewSource(1)), 50, 10)
	failing := newSliceIter(kvs[:25])
	failing.failFrom = 10
	m = NewMerging(nil, newSliceIter(kvs[25:]), failing)
	n := 0
	for ok := m.First(); ok; ok = m.Next() {
		n++
	}
	require.Error(t, m.Error())
	require.Less(t, n, 50)
	require.True(t, m.SeekGE([]byte("k000")) == false)
	require.Error(t, m.Close())
}

// An error from a positioning call is reported until the next successful
// one.
func TestMerging_ErrorResetsOnSuccess(t *testing.T) {
	flaky := &sliceIter{kvs: []kv{{base.MakeInternalKey([]byte("a"), 1, base.KindSet), nil}}}
	flaky.failFrom = 1
	m := NewMerging(nil, flaky)
	require.False(t, m.First())
	require.Error(t, m.Error())
	flaky.failFrom = 0
	require.True(t, m.First())
	require.NoError(t, m.Error())
	require.NoError(t, m.Close())
}

func TestMerging_InitReuses(t *testing.T) {
	m := NewMerging(nil, Empty(), Empty())
	require.False(t, m.First())
	require.NoError(t, m.Close())
	kvs := []kv{{base.MakeInternalKey([]byte("x"), 1, base.KindSet), []byte("v")}}
	m.Init(nil, newSliceIter(kvs))
	require.True(t, m.Last())
	require.Equal(t, "x", string(m.Key().UserKey))
	require.NoError(t, m.Close())
}

func BenchmarkMerging_Next(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	kvs := randomKVs(rng, 4000, 1000)
	parts := split(rng, kvs, 4)
	iters := make([]Iterator, 4)
	for i, p := range parts {
		s := newSliceIter(p)
		s.poison = false
		iters[i] = s
	}
	m := NewMerging(nil, iters...)
	m.First()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !m.Next() {
			m.First()
		}
	}
}

func TestMerging_NextDoesNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	kvs := randomKVs(rng, 400, 100)
	parts := split(rng, kvs, 4)
	iters := make([]Iterator, 4)
	for i, p := range parts {
		s := newSliceIter(p)
		s.poison = false
		iters[i] = s
	}
	m := NewMerging(nil, iters...)
	m.First()
	allocs := testing.AllocsPerRun(1000, func() {
		if !m.Next() {
			m.First()
		}
		_ = m.Key()
		_ = m.Value()
	})
	require.Zero(t, allocs)
	require.NoError(t, m.Close())
}
