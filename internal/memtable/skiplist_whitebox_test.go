package memtable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// TestSkiplist_LaggingPrev simulates a reader that runs between the two
// stores of an insert: the new node is linked forward but its successor's
// back link still names the old predecessor. Prev must not skip the node.
func TestSkiplist_LaggingPrev(t *testing.T) {
	m := New(1 << 12)
	for _, k := range []string{"a", "c", "b"} {
		require.NoError(t, m.Add(base.MakeInternalKey([]byte(k), 1, base.KindSet), nil))
	}
	s := m.points
	a := s.next(s.head, 0)
	b := s.next(a, 0)
	c := s.next(b, 0)
	require.Equal(t, "b", string(s.key(b)))
	s.a.store32(c+nodePrev, a) // as before "b" was fully inserted

	var it Iter
	it.Init(m)
	require.True(t, it.Last())
	require.Equal(t, "c", string(it.Key().UserKey))
	require.True(t, it.Prev())
	require.Equal(t, "b", string(it.Key().UserKey))
	require.True(t, it.Prev())
	require.Equal(t, "a", string(it.Key().UserKey))
	require.False(t, it.Prev())
}

// TestSkiplist_Towers checks the structural invariants of the list: every
// level is sorted and a subsequence of the level below, and back links are
// exact once the writer is quiet.
func TestSkiplist_Towers(t *testing.T) {
	m := New(1 << 20)
	for i := 0; i < 5000; i++ {
		k := base.MakeInternalKey([]byte{byte(i * 7), byte(i * 13)}, base.SeqNum(i), base.KindSet)
		require.NoError(t, m.Add(k, nil))
	}
	s := m.points
	require.Greater(t, int(s.height.Load()), 3)
	onLevel0 := map[uint32]bool{}
	for nd, p := s.next(s.head, 0), s.head; ; p, nd = nd, s.next(nd, 0) {
		require.Equal(t, p, s.a.load32(nd+nodePrev))
		if nd == s.tail {
			break
		}
		onLevel0[nd] = true
	}
	require.Len(t, onLevel0, 5000)
	for level := 0; level < maxHeight; level++ {
		prev := uint32(0)
		for nd := s.next(s.head, level); nd != s.tail; nd = s.next(nd, level) {
			require.True(t, onLevel0[nd])
			if prev != 0 {
				pk := base.InternalKey{UserKey: s.key(prev), Trailer: s.trailer(prev)}
				k := base.InternalKey{UserKey: s.key(nd), Trailer: s.trailer(nd)}
				require.Equal(t, -1, base.InternalCompare(pk, k))
			}
			prev = nd
		}
		if level >= int(s.height.Load()) {
			require.Zero(t, prev, "level %d above height has nodes", level)
		}
	}
}

// TestSkiplist_Hint inserts keys in orders that keep the writer's hint
// useful (ascending, descending, runs, versions of one key) and in orders
// that defeat it (random, alternating streams), switching between them.
// After every insert the hint must be the splice just after the new node;
// at the end the list must hold exactly the model's keys, in order, and an
// exact duplicate must be refused without changing the list or the hint's
// validity.
func TestSkiplist_Hint(t *testing.T) {
	ascending := func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = i
		}
		return s
	}
	descending := func(n int) []int {
		s := ascending(n)
		slices.Reverse(s)
		return s
	}
	orders := map[string][]int{
		"ascending":  ascending(3000),
		"descending": descending(3000),
		"random":     rand.New(rand.NewPCG(1, 1)).Perm(3000),
		"same key":   make([]int, 3000), // 3000 versions of key 0
		"streams": func() []int { // two interleaved ascending streams
			s := make([]int, 3000)
			for i := range s {
				s[i] = i/2 + (i%2)*1500
			}
			return s
		}(),
		"runs": func() []int { // ascending runs at scattered places
			s := make([]int, 3000)
			for i := range s {
				s[i] = (i/50*7)%60*50 + i%50
			}
			return s
		}(),
		"zigzag": func() []int { // outward from the middle, both sides
			s := make([]int, 3000)
			for i := range s {
				s[i] = 1500 + (i/2+1)*(1-2*(i%2))
			}
			return s
		}(),
	}
	names := slices.Sorted(maps.Keys(orders))
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			m := New(1 << 22)
			s := m.points
			var model []base.InternalKey
			add := func(k int, seq base.SeqNum) {
				ik := base.MakeInternalKey(fmt.Appendf(nil, "%08d", k), seq, base.KindSet)
				require.NoError(t, m.Add(ik, fmt.Appendf(nil, "v%d", seq)))
				// The node just inserted is the hint's level-0 pred.
				nd := s.hint.preds[0]
				require.Equal(t, ik.UserKey, s.key(nd))
				require.Equal(t, ik.Trailer, s.trailer(nd))
				height := 1
				for height < maxHeight && s.hint.preds[height] == nd {
					height++
				}
				require.Empty(t, s.checkHint(nd, height))
				model = append(model, ik)
			}
			seq := base.SeqNum(1)
			// The order under test, preceded and followed by another, so
			// that the hint is carried across a change of pattern.
			for _, pre := range []int{7, 2999, 1499} {
				add(pre, seq)
				seq++
			}
			for _, k := range orders[name] {
				add(k, seq)
				seq++
			}
			for _, k := range orders[names[(slices.Index(names, name)+1)%len(names)]][:500] {
				add(k, seq)
				seq++
			}
			// An exact duplicate is refused and the list does not change.
			dup := model[len(model)/2]
			used := m.ApproximateMemoryUsage()
			require.Error(t, m.Add(dup, nil))
			require.Equal(t, used, m.ApproximateMemoryUsage())
			add(3000, seq) // the hint still works after a refused insert

			slices.SortFunc(model, base.InternalCompare)
			var it Iter
			it.Init(m)
			i := 0
			for ok := it.First(); ok; ok = it.Next() {
				require.Less(t, i, len(model))
				require.Equal(t, model[i].UserKey, it.Key().UserKey, "entry %d", i)
				require.Equal(t, model[i].Trailer, it.Key().Trailer, "entry %d", i)
				require.Equal(t, fmt.Appendf(nil, "v%d", model[i].SeqNum()), it.Value())
				i++
			}
			require.Equal(t, len(model), i)
			for _, k := range model {
				v, _, got, found := m.Get(k.UserKey, k.SeqNum()+1)
				require.True(t, found, "%s", k)
				require.Equal(t, k.SeqNum(), got)
				require.Equal(t, fmt.Appendf(nil, "v%d", got), v)
			}
		})
	}
}

// TestSummarize_Order checks the promise the skiplist's searches rest on:
// where two summaries are valid and differ they order the keys as
// bytes.Compare does, and equal keys have equal summaries. The keys are
// built from the bytes that matter to the encoding (zeros, the padding
// db_bench uses, the extremes) at lengths around its 7 leading zeros and 28
// bits.
func TestSummarize_Order(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	alphabet := []byte{0, 0, 0, 1, 0x0f, 0x10, '0', 0x7f, 0x80, 0xff}
	keys := [][]byte{nil, {}, {0}, {0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 0, 0, 1}}
	for len(keys) < 600 {
		k := make([]byte, r.IntN(13))
		for i := range k {
			if r.IntN(4) == 0 {
				k[i] = byte(r.Uint32())
			} else {
				k[i] = alphabet[r.IntN(len(alphabet))]
			}
		}
		keys = append(keys, k)
	}
	decided := 0
	for _, a := range keys {
		sa := summarize(a)
		require.Equal(t, sa, summarize(slices.Clone(a)))
		for _, b := range keys {
			before, ok := summaryOrder(sa, summarize(b))
			if !ok {
				continue
			}
			decided++
			require.Equal(t, bytes.Compare(a, b) < 0, before, "%x vs %x", a, b)
			require.NotEqual(t, 0, bytes.Compare(a, b), "%x and %x are equal but their summaries differ", a, b)
		}
	}
	require.Greater(t, decided, len(keys)*len(keys)/4, "summaries should decide most pairs of these keys")

	// With a summary prefix: the same keys behind two prefixes, and the
	// keys alone, which lack them.
	for _, pfx := range []string{"u", "user", "\x00\x00"} {
		s := &skiplist{pfx: []byte(pfx)}
		var all [][]byte
		for i, k := range keys {
			all = append(all, k, append([]byte(pfx), k...))
			if i%3 == 0 {
				all = append(all, append([]byte(pfx[:len(pfx)-1]+"v"), k...))
			}
		}
		decided := 0
		for _, a := range all {
			sa := s.summarize(a)
			if !bytes.HasPrefix(a, s.pfx) {
				require.Zero(t, sa, "%x lacks the prefix %q", a, pfx)
			}
			for _, b := range all {
				before, ok := summaryOrder(sa, s.summarize(b))
				if ok {
					decided++
					require.Equal(t, bytes.Compare(a, b) < 0, before, "prefix %q: %x vs %x", pfx, a, b)
				}
			}
		}
		require.Greater(t, decided, len(all)*len(all)/20, "prefix %q", pfx)
	}
}

// TestSummarize_DecidesBenchKeys checks that the summaries tell db_bench's
// keys (a big-endian integer, then '0' padding) apart without loading
// them, at 1M and at 50M keys: this is what saves the search its cache
// misses.
func TestSummarize_DecidesBenchKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []uint64{1e6, 50e6} {
		ties := 0
		for i := 0; i < 10000; i++ {
			a, b := r.Uint64N(n), r.Uint64N(n)
			ka, kb := []byte("0000000000000000"), []byte("0000000000000000")
			binary.BigEndian.PutUint64(ka, a)
			binary.BigEndian.PutUint64(kb, b)
			before, ok := summaryOrder(summarize(ka), summarize(kb))
			if !ok {
				ties++
				continue
			}
			require.Equal(t, a < b, before)
		}
		require.Less(t, ties, 20, "at %d keys", n) // equal draws tie, about 1 in n/10000
	}
}
