package iterator

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// kvSliceIter is a sliceIter with NextKV (a KVNexter child, as table and
// memtable iterators are).
type kvSliceIter struct{ *sliceIter }

func (s kvSliceIter) NextKV() (base.InternalKey, []byte, bool) {
	if !s.Next() {
		return base.InternalKey{}, nil, false
	}
	return s.Key(), s.Value(), true
}

// countingKVIter is a level's file iterator with NextKV.
type countingKVIter struct {
	*countingIter
	kv kvSliceIter
}

func (c countingKVIter) NextKV() (base.InternalKey, []byte, bool) { return c.kv.NextKV() }

// kvLevel wraps tl.openFile so that the files' iterators are KVNexters.
func kvLevel(tl *testLevel) func(int) (Iterator, error) {
	return func(i int) (Iterator, error) {
		it, err := tl.openFile(i)
		if err != nil {
			return nil, err
		}
		c := it.(*countingIter)
		if s, ok := c.Iterator.(*sliceIter); ok {
			return countingKVIter{countingIter: c, kv: kvSliceIter{s}}, nil
		}
		return c, nil
	}
}

// blockedKVIter is a level's file iterator with NextKV that says, as a
// table's does per data block, when the entries of the chunk of blockLen
// entries it rests in are all below the upper bound it was given last
// (UpperBounded). The verdict is taken from that bound, so a level that
// failed to hand a new bound to a file it reuses makes the merge skip its
// own check with a stale one.
type blockedKVIter struct {
	countingKVIter
	s        *sliceIter
	blockLen int
	upper    []byte
}

func (b *blockedKVIter) SetUpperBound(upper []byte) { b.upper = upper }

func (b *blockedKVIter) NextInBounds() bool {
	if b.upper == nil || !b.s.valid || b.s.pos < 0 || b.s.pos >= len(b.s.kvs) {
		return false
	}
	end := min(len(b.s.kvs), (b.s.pos/b.blockLen+1)*b.blockLen)
	return bytes.Compare(b.s.kvs[end-1].key.UserKey, b.upper) < 0
}

// blockedLevel opens tl's files as blockedKVIters of chunks of 1 to 4.
func blockedLevel(rng *rand.Rand, tl *testLevel) func(int) (Iterator, error) {
	open := kvLevel(tl)
	return func(i int) (Iterator, error) {
		it, err := open(i)
		if err != nil {
			return nil, err
		}
		if c, ok := it.(countingKVIter); ok {
			return &blockedKVIter{countingKVIter: c, s: c.kv.sliceIter, blockLen: 1 + rng.Intn(4)}, nil
		}
		return it, nil
	}
}

// scanForward checks a forward walk from SeekGE(k) (First when k is nil)
// to exhaustion against want, the model's entries in order.
func scanForward(t *testing.T, m *Merging, k []byte, want []kv) {
	t.Helper()
	var got []string
	ok := false
	if k == nil {
		ok = m.First()
	} else {
		ok = m.SeekGE(k)
	}
	for ; ok; ok = m.Next() {
		got = append(got, m.Key().String()+"="+string(m.Value()))
	}
	require.NoError(t, m.Error())
	var exp []string
	for _, e := range want {
		if k == nil || bytes.Compare(e.key.UserKey, k) >= 0 {
			exp = append(exp, e.key.String()+"="+string(e.value))
		}
	}
	require.Equal(t, exp, got, "forward scan from %q", k)
}

// TestMerging_FastPathsRandomized drives the forward step's fast paths
// against the model: children that are levels handed to the merge
// directly (stepped through Level.NextKV, whose files' iterators are
// KVNexters or not, and which report when a file ends below the upper
// bound so that the merge skips its bound check), KVNexter slices and
// plain slices; keys in consecutive runs (the log case, where one child
// is the only one left in the heap for long stretches and others come
// back on Prev and seeks) or dealt at random; the bounds changed by
// SetBounds between phases, each phase random moves in both directions
// and full forward scans.
func TestMerging_FastPathsRandomized(t *testing.T) {
	rng := testRand(t)
	for round := 0; round < 150; round++ {
		userKeys := 1 + rng.Intn(60)
		kvs := randomKVs(rng, rng.Intn(300), userKeys)
		var parts [][]kv
		if round%2 == 0 {
			parts = split(rng, kvs, 1+rng.Intn(5))
		} else {
			parts = consecutiveRuns(rng, kvs, 80)
		}
		iters := make([]Iterator, len(parts))
		spans := make([]Span, len(parts))
		var levels []*Level
		for i, p := range parts {
			switch r := rng.Intn(5); {
			case r < 3 && len(p) > 0:
				tl := newTestLevel(t, rng, p, 0)
				open := tl.openFile
				switch r {
				case 0:
					open = kvLevel(tl)
				case 1:
					open = blockedLevel(rng, tl)
				}
				l := NewLevel(nil, tl.bounds, open)
				levels = append(levels, l)
				iters[i] = l
			case r == 3:
				iters[i] = kvSliceIter{newSliceIter(p)}
			default:
				iters[i] = newSliceIter(p)
			}
			if len(p) > 0 && rng.Intn(3) != 0 {
				spans[i] = Span{Smallest: p[0].key.UserKey, Largest: p[len(p)-1].key.UserKey}
			}
		}
		var m Merging
		m.Init(nil, iters...)
		m.SetSpans(spans)
		for phase := 0; phase < 4; phase++ {
			lower, upper := randomBound(rng, userKeys, false), randomBound(rng, userKeys, true)
			m.SetBounds(lower, upper)
			t.Logf("round %d phase %d: bounds [%q, %q)", round, phase, lower, upper)
			want := inBounds(kvs, lower, upper)
			checkAgainstModel(t, rng, &m, want, 200, userKeys)
			scanForward(t, &m, nil, want)
			scanForward(t, &m, []byte(fmt.Sprintf("k%03d", rng.Intn(userKeys+1))), want)
		}
		require.NoError(t, m.Close())
	}
}

// TestMerging_LevelBoundsApart: a level whose bounds a caller set apart
// from the merge's (here: none) says its files end below its own (absent)
// upper bound; the merge must still check the keys against its own.
func TestMerging_LevelBoundsApart(t *testing.T) {
	rng := testRand(t)
	var kvs []kv
	for i := 0; i < 40; i++ {
		kvs = append(kvs, kv{key: base.MakeInternalKey([]byte(fmt.Sprintf("k%03d", i)), base.SeqNum(100-i), base.KindSet), value: []byte(fmt.Sprint(i))})
	}
	tl := newTestLevel(t, rng, kvs, 0)
	l := NewLevel(nil, tl.bounds, kvLevel(tl))
	m := NewMerging(nil, l)
	upper := []byte("k020")
	m.SetBounds(nil, upper)
	l.SetBounds(nil, nil)
	scanForward(t, m, nil, inBounds(kvs, nil, upper))
	require.NoError(t, m.Close())
}

// TestMerging_LevelBoundsNarrowedOnOpenFile: the merge's upper bound is
// narrowed to a key inside the file the level has open; a seek that
// finds that file open again must not keep its earlier verdict that the
// whole file lies below the bound.
func TestMerging_LevelBoundsNarrowedOnOpenFile(t *testing.T) {
	var kvs []kv
	for i := 0; i < 40; i++ {
		kvs = append(kvs, kv{key: base.MakeInternalKey([]byte(fmt.Sprintf("k%03d", i)), base.SeqNum(100-i), base.KindSet), value: []byte(fmt.Sprint(i))})
	}
	tl := &testLevel{t: t, failOpen: -1}
	for start := 0; start < len(kvs); start += 10 {
		f := kvs[start : start+10]
		tl.files = append(tl.files, f)
		tl.bounds = append(tl.bounds, FileBounds{Smallest: f[0].key, Largest: f[len(f)-1].key})
		tl.filtered = append(tl.filtered, false)
	}
	rng := testRand(t)
	// The wide bound first: none, or one past which the files' iterators
	// that judge bounds per chunk (blockedLevel) were given, so that a
	// level reusing a file must hand it the narrower bound.
	for _, wide := range [][]byte{nil, []byte("k039")} {
		for _, open := range []func(int) (Iterator, error){tl.openFile, kvLevel(tl), blockedLevel(rng, tl)} {
			m := NewMerging(nil, NewLevel(nil, tl.bounds, open))
			m.SetBounds(nil, wide)
			scanForward(t, m, []byte("k012"), inBounds(kvs, nil, wide))
			// The level ends on its last file, open; a seek into it with a
			// bound inside it reuses the open file.
			upper := []byte("k035")
			m.SetBounds(nil, upper)
			scanForward(t, m, []byte("k031"), inBounds(kvs, nil, upper))
			// And the file before, left open by a walk that stops inside it.
			m.SetBounds(nil, wide)
			require.True(t, m.SeekGE([]byte("k021")))
			upper = []byte("k025")
			m.SetBounds(nil, upper)
			scanForward(t, m, []byte("k022"), inBounds(kvs, nil, upper))
			require.NoError(t, m.Close())
		}
	}
}
