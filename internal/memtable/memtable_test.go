package memtable_test

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/iterator"
	"github.com/stratadb/strata/internal/memtable"
	"github.com/stretchr/testify/require"
)

var _ iterator.Iterator = (*memtable.Iter)(nil)

var seedFlag = flag.Uint64("memtable.seed", 0, "random seed (0: time-based)")

// newRand returns a seeded generator and logs the seed so that a failure can
// be replayed with -memtable.seed.
func newRand(t testing.TB) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -memtable.seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed))
}

type entry struct {
	key   base.InternalKey
	value []byte
}

// model is a sorted slice of entries: the reference the memtable is checked
// against.
type model []entry

func (m model) seekGE(ukey []byte) int {
	i, _ := slices.BinarySearchFunc(m, ukey, func(e entry, k []byte) int {
		if bytes.Compare(e.key.UserKey, k) < 0 {
			return -1
		}
		return 1
	})
	return i
}

func (m model) get(ukey []byte, snap base.SeqNum) (entry, bool) {
	for i := m.seekGE(ukey); i < len(m) && bytes.Equal(m[i].key.UserKey, ukey); i++ {
		if base.Visible(m[i].key.SeqNum(), snap) {
			return m[i], true
		}
	}
	return entry{}, false
}

var kinds = []base.Kind{base.KindSet, base.KindSet, base.KindDelete, base.KindMerge, base.KindSingleDelete}

func randUserKey(r *rand.Rand, n int) []byte {
	if r.IntN(50) == 0 {
		return []byte{}
	}
	return shapedKey(r.IntN(n) * 2) // even numbers: odd ones are absent
}

// shapedKey returns user key number i in one of four shapes, by i/2%4,
// whose summaries (see the skiplist's link words) behave differently: text
// with a shared prefix (summaries tie, keys decide), big-endian integers
// behind zero bytes as db_bench writes them (summaries decide), the same
// without padding and of varying length, and runs of zero bytes (no
// summary). The shapes interleave in key order, so searches cross them.
func shapedKey(i int) []byte {
	switch i / 2 % 4 {
	case 0:
		return fmt.Appendf(nil, "k%04d", i)
	case 1:
		k := []byte("0000000000000000")
		binary.BigEndian.PutUint64(k, uint64(i))
		return k
	case 2:
		k := binary.BigEndian.AppendUint64(nil, uint64(i)<<(i%3*8))
		return k[:4+i%5]
	default:
		return make([]byte, i%11)
	}
}

// fill adds n random entries to m and returns the model.
func fill(t *testing.T, r *rand.Rand, m *memtable.MemTable, n int) model {
	var md model
	seqs := r.Perm(n * 4)
	for i := 0; i < n; i++ {
		k := base.MakeInternalKey(randUserKey(r, n/4+1), base.SeqNum(seqs[i]), kinds[r.IntN(len(kinds))])
		v := fmt.Appendf(nil, "v%d-%d", seqs[i], r.IntN(1000))
		require.NoError(t, m.Add(k, v))
		md = append(md, entry{k.Clone(), v})
	}
	slices.SortFunc(md, func(a, b entry) int { return base.InternalCompare(a.key, b.key) })
	return md
}

func requireAt(t *testing.T, md model, i int, it *memtable.Iter, ok bool, op string) {
	t.Helper()
	if i < 0 || i >= len(md) {
		require.False(t, ok, "%s: want exhausted", op)
		return
	}
	require.True(t, ok, "%s: want %s", op, md[i].key)
	require.Equal(t, md[i].key.String(), it.Key().String(), op)
	require.Equal(t, string(md[i].value), string(it.Value()), op)
}

func TestMemTable_Model(t *testing.T) {
	// The summary prefix changes only how searches decide, never what
	// they find: keys with it, keys without it, and a prefix no key has.
	for _, pfx := range []string{"", "k", "k00", "\x00\x00\x00\x00\x00\x00", "zz"} {
		t.Run(fmt.Sprintf("prefix=%q", pfx), func(t *testing.T) { testModel(t, []byte(pfx)) })
	}
}

func testModel(t *testing.T, pfx []byte) {
	r := newRand(t)
	m := memtable.New(1 << 20)
	m.SetSummaryPrefix(pfx)
	require.True(t, m.Empty())
	md := fill(t, r, m, 2000)
	require.False(t, m.Empty())
	require.EqualValues(t, len(md), m.NumEntries())

	it := m.NewIter()
	// Full scans both ways.
	ok := it.First()
	for i := 0; i <= len(md); i++ {
		requireAt(t, md, i, it, ok, "next scan")
		ok = it.Next()
	}
	ok = it.Last()
	for i := len(md) - 1; i >= -1; i-- {
		requireAt(t, md, i, it, ok, "prev scan")
		ok = it.Prev()
	}

	// Random seeks followed by random walks.
	for round := 0; round < 500; round++ {
		k := shapedKey(r.IntN(len(md)/2 + 10))
		var i int
		var op string
		switch r.IntN(4) {
		case 0:
			i, ok, op = md.seekGE(k), it.SeekGE(k), fmt.Sprintf("SeekGE(%s)", k)
		case 1:
			i, ok, op = md.seekGE(k)-1, it.SeekLT(k), fmt.Sprintf("SeekLT(%s)", k)
		case 2:
			i, ok, op = 0, it.First(), "First"
		default:
			i, ok, op = len(md)-1, it.Last(), "Last"
		}
		requireAt(t, md, i, it, ok, op)
		for step := 0; ok && step < 20; step++ {
			if r.IntN(2) == 0 {
				i, ok, op = i+1, it.Next(), op+".Next"
			} else {
				i, ok, op = i-1, it.Prev(), op+".Prev"
			}
			requireAt(t, md, i, it, ok, op)
		}
	}

	// Get at random snapshots, including 0 and beyond every sequence number.
	for round := 0; round < 3000; round++ {
		k := randUserKey(r, len(md)/2+10)
		snap := base.SeqNum(r.IntN(len(md)*4 + 2))
		if round%100 == 0 {
			snap = base.MaxSeqNum + 1
		}
		want, wantOK := md.get(k, snap)
		v, kind, seq, found := m.Get(k, snap)
		require.Equal(t, wantOK, found, "Get(%q, %d)", k, snap)
		if found {
			require.Equal(t, string(want.value), string(v))
			require.Equal(t, want.key.Kind(), kind)
			require.Equal(t, want.key.SeqNum(), seq)
		}
	}
	require.NoError(t, it.Close())
}

func TestMemTable_CommonPrefix(t *testing.T) {
	m := memtable.New(1 << 16)
	require.Nil(t, m.CommonPrefix())
	add := func(k string, seq base.SeqNum) {
		require.NoError(t, m.Add(base.MakeInternalKey([]byte(k), seq, base.KindSet), nil))
	}
	add("user0042", 1)
	require.Nil(t, m.CommonPrefix(), "one key tells nothing")
	add("user0042", 2)
	require.Nil(t, m.CommonPrefix(), "nor one user key twice")
	add("user0777", 3)
	require.Equal(t, "user0", string(m.CommonPrefix()))
	add("usa", 4)
	require.Equal(t, "us", string(m.CommonPrefix()))
	add("b", 5)
	require.Equal(t, "", string(m.CommonPrefix()))
}

func TestMemTable_Empty(t *testing.T) {
	m := memtable.New(0)
	require.True(t, m.Empty())
	it := m.NewIter()
	require.False(t, it.First())
	require.False(t, it.Last())
	require.False(t, it.SeekGE(nil))
	require.False(t, it.SeekLT([]byte("z")))
	_, _, _, found := m.Get(nil, base.MaxSeqNum)
	require.False(t, found)
	lo, hi := m.SeqNumRange()
	require.Zero(t, lo)
	require.Zero(t, hi)
	require.False(t, m.HasTombstones())
	require.Nil(t, m.Tombstones(base.MaxSeqNum))
}

func TestMemTable_Stats(t *testing.T) {
	m := memtable.New(1 << 16)
	used := m.ApproximateMemoryUsage()
	require.NoError(t, m.Add(base.MakeInternalKey([]byte("a"), 7, base.KindSet), []byte("1")))
	require.NoError(t, m.Add(base.MakeInternalKey([]byte("b"), 3, base.KindDelete), nil))
	require.NoError(t, m.Add(base.MakeInternalKey([]byte("c"), 9, base.KindSingleDelete), nil))
	require.NoError(t, m.Add(base.MakeInternalKey([]byte("a"), 5, base.KindMerge), []byte("2")))
	require.NoError(t, m.AddRangeDel(base.Tombstone{Start: []byte("x"), End: []byte("y"), Seq: 12}))
	require.Greater(t, m.ApproximateMemoryUsage(), used)
	require.EqualValues(t, 4, m.NumEntries())
	require.EqualValues(t, 2, m.NumDeletes())
	require.EqualValues(t, 1, m.NumRangeDels())
	lo, hi := m.SeqNumRange()
	require.Equal(t, base.SeqNum(3), lo)
	require.Equal(t, base.SeqNum(12), hi)
}

func TestMemTable_AddErrors(t *testing.T) {
	m := memtable.New(1 << 16)
	k := base.MakeInternalKey([]byte("a"), 7, base.KindSet)
	require.NoError(t, m.Add(k, []byte("1")))
	used := m.ApproximateMemoryUsage()

	err := m.Add(k, []byte("2"))
	require.Error(t, err)
	require.True(t, errors.HasAssertionFailure(err), "%v", err)
	// Same user key and sequence, different kind: a different internal key.
	require.NoError(t, m.Add(base.MakeInternalKey([]byte("a"), 7, base.KindMerge), []byte("3")))

	err = m.Add(base.MakeInternalKey([]byte("a"), 8, base.KindRangeDelete), []byte("b"))
	require.True(t, errors.HasAssertionFailure(err), "%v", err)

	require.NoError(t, m.AddRangeDel(base.Tombstone{Start: []byte("a"), End: []byte("b"), Seq: 9}))
	err = m.AddRangeDel(base.Tombstone{Start: []byte("a"), End: []byte("c"), Seq: 9})
	require.True(t, errors.HasAssertionFailure(err), "%v", err)
	require.Greater(t, m.ApproximateMemoryUsage(), used)
	require.EqualValues(t, 2, m.NumEntries())
	require.EqualValues(t, 1, m.NumRangeDels())
}

func TestMemTable_ArenaFull(t *testing.T) {
	r := newRand(t)
	m := memtable.New(16 << 10)
	var md model
	for seq := base.SeqNum(1); ; seq++ {
		k := base.MakeInternalKey(fmt.Appendf(nil, "key%06d", r.IntN(1e6)), seq, base.KindSet)
		v := bytes.Repeat([]byte{'v'}, r.IntN(100))
		used, n := m.ApproximateMemoryUsage(), m.NumEntries()
		err := m.Add(k, v)
		if err != nil {
			require.ErrorIs(t, err, memtable.ErrArenaFull)
			require.Equal(t, used, m.ApproximateMemoryUsage(), "a failed Add must not use space")
			require.Equal(t, n, m.NumEntries())
			break
		}
		md = append(md, entry{k, v})
	}
	require.LessOrEqual(t, m.ApproximateMemoryUsage(), 16<<10)
	require.Greater(t, len(md), 50)
	slices.SortFunc(md, func(a, b entry) int { return base.InternalCompare(a.key, b.key) })
	it := m.NewIter()
	ok := it.First()
	for i := range md {
		requireAt(t, md, i, it, ok, "scan after full")
		ok = it.Next()
	}
	require.False(t, ok)

	// An entry larger than the whole arena fails the same way...
	big := make([]byte, 64<<10)
	err := m.Add(base.MakeInternalKey([]byte("big"), 1<<40, base.KindSet), big)
	require.ErrorIs(t, err, memtable.ErrArenaFull)
	err = memtable.New(0).AddRangeDel(base.Tombstone{Start: big, End: big, Seq: 1})
	require.ErrorIs(t, err, memtable.ErrArenaFull)
}

// TestSizeFor checks that a memtable of SizeFor bytes holds its entry
// whatever tower height the entry draws.
func TestSizeFor(t *testing.T) {
	for _, kv := range [][2]int{{0, 0}, {1, 0}, {3, 5}, {100, 1 << 16}, {1 << 12, 1}} {
		for i := 0; i < 50; i++ {
			m := memtable.New(memtable.SizeFor(kv[0], kv[1]))
			k := base.MakeInternalKey(make([]byte, kv[0]), 1, base.KindSet)
			require.NoError(t, m.Add(k, make([]byte, kv[1])), "%v", kv)
			m = memtable.New(memtable.SizeFor(kv[0], kv[1]))
			ts := base.Tombstone{Start: make([]byte, kv[0]), End: make([]byte, kv[1]), Seq: 1}
			require.NoError(t, m.AddRangeDel(ts), "%v", kv)
		}
	}
	// A key and a value of 2 GiB - 1 each fit no arena; on 32-bit platforms
	// SizeFor saturates at math.MaxInt.
	huge := memtable.SizeFor(math.MaxInt32, math.MaxInt32)
	if strconv.IntSize == 64 {
		require.Greater(t, int64(huge), int64(memtable.MaxArenaSize))
	} else {
		require.Equal(t, math.MaxInt, huge)
	}
}

func TestMemTable_Tombstones(t *testing.T) {
	r := newRand(t)
	m := memtable.New(1 << 20)
	// Point entries do not disturb the tombstone list, and vice versa.
	md := fill(t, r, m, 200)
	var all []base.Tombstone
	for _, seq := range r.Perm(300) {
		start := fmt.Appendf(nil, "t%03d", r.IntN(40))
		ts := base.Tombstone{Start: start, End: append(start[:len(start):len(start)], 'z'), Seq: base.SeqNum(seq + 1)}
		require.NoError(t, m.AddRangeDel(ts))
		all = append(all, ts)
	}
	require.True(t, m.HasTombstones())
	slices.SortFunc(all, func(a, b base.Tombstone) int {
		if c := bytes.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return -int(a.Seq - b.Seq)
	})
	for _, snap := range []base.SeqNum{0, 1, 2, 50, 150, 301, base.MaxSeqNum + 1} {
		var want []base.Tombstone
		for _, ts := range all {
			if base.Visible(ts.Seq, snap) {
				want = append(want, ts)
			}
		}
		require.Equal(t, want, m.Tombstones(snap), "snap %d", snap)
	}
	// The point list is intact.
	it := m.NewIter()
	ok := it.First()
	for i := range md {
		requireAt(t, md, i, it, ok, "points after tombstones")
		ok = it.Next()
	}
	require.False(t, ok)
}

// TestIter_Reuse checks that Init makes a used or closed Iter usable again
// and that stepping and Get do not allocate.
func TestIter_Reuse(t *testing.T) {
	r := newRand(t)
	m1, m2 := memtable.New(1<<20), memtable.New(1<<20)
	md1, md2 := fill(t, r, m1, 300), fill(t, r, m2, 300)
	var it memtable.Iter
	for _, c := range []struct {
		m  *memtable.MemTable
		md model
	}{{m1, md1}, {m2, md2}, {m1, md1}} {
		it.Init(c.m)
		ok := it.Last()
		for i := len(c.md) - 1; i >= 0; i-- {
			requireAt(t, c.md, i, &it, ok, "reuse")
			ok = it.Prev()
		}
		require.NoError(t, it.Close())
	}
	it.Init(m1)
	key := md1[len(md1)/2].key.UserKey
	allocs := testing.AllocsPerRun(100, func() {
		if !it.Next() {
			it.First()
		}
		_ = it.Key()
		_ = it.Value()
		it.Prev()
		it.SeekGE(key)
		it.SeekLT(key)
		m1.Get(key, base.MaxSeqNum)
	})
	require.Zero(t, allocs)
}

func TestMemTable_EmptySize(t *testing.T) {
	m := memtable.New(1 << 20)
	require.Equal(t, memtable.EmptySize, m.ApproximateMemoryUsage())
	// An arena of SizeFor bytes holds one such entry.
	m = memtable.New(memtable.SizeFor(16, 100))
	require.NoError(t, m.Add(base.MakeInternalKey(make([]byte, 16), 1, base.KindSet), make([]byte, 100)))
}

// TestMakeArenaLimit checks that an arena size above MaxArenaSize is an
// ErrInvalidArgument error from Make (and a panic only from New, whose
// callers rule it out), without allocating anything.
func TestMakeArenaLimit(t *testing.T) {
	for _, size64 := range []int64{memtable.MaxArenaSize + 1, 1 << 40} {
		size := int(size64)
		if int64(size) != size64 {
			continue // 32-bit platforms: no int exceeds MaxArenaSize
		}
		m, err := memtable.Make(size)
		require.ErrorIs(t, err, base.ErrInvalidArgument)
		require.Nil(t, m)
		require.Contains(t, err.Error(), fmt.Sprint(size))
		require.Panics(t, func() { memtable.New(size) })
	}
	for _, size := range []int{-1, 0} {
		m, err := memtable.Make(size)
		require.NoError(t, err)
		require.Equal(t, memtable.EmptySize, m.ApproximateMemoryUsage())
	}
	m, err := memtable.Make(1 << 12)
	require.NoError(t, err)
	require.NoError(t, m.Add(base.MakeInternalKey([]byte("k"), 1, base.KindSet), []byte("v")))
}
