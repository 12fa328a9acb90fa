package memtable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// addConcurrentRounds is how many times the concurrent-insert tests repeat
// (STRATA_MEMTABLE_CONCURRENT_ROUNDS raises it for long runs).
func addConcurrentRounds() int {
	if v, err := strconv.Atoi(os.Getenv("STRATA_MEMTABLE_CONCURRENT_ROUNDS")); err == nil && v > 0 {
		return v
	}
	return 5
}

// ckKey returns user key i: text for even i, a big-endian integer behind
// zero bytes (db_bench's shape, whose link summaries decide searches) for
// odd ones.
func ckKey(i uint64) []byte {
	if i%2 == 0 {
		return fmt.Appendf(nil, "c%04d", i)
	}
	return binary.BigEndian.AppendUint64(nil, i)
}

func ckValue(key []byte, seq uint64) []byte { return fmt.Appendf(nil, "%s@%d", key, seq) }

// TestMemTable_AddConcurrent runs several inserters at once, on random and
// overlapping user keys with unique sequence numbers, plus racing attempts
// to add the same internal keys, while readers seek, get and iterate both
// ways. Then it checks the whole list: order on every level, back links,
// contents and statistics.
func TestMemTable_AddConcurrent(t *testing.T) {
	for round := 0; round < addConcurrentRounds(); round++ {
		testAddConcurrent(t, uint64(round))
	}
}

func testAddConcurrent(t *testing.T, seed uint64) {
	const (
		writers   = 6
		perWriter = 3000
		userKeys  = 800 // few enough that user keys repeat across writers
		dups      = 200 // internal keys every writer tries to add
	)
	m := New(16 << 20)
	// done[g] is the number of entries writer g has added so far: each
	// (key, seq) below it was added before a reader reads it.
	var done [writers]atomic.Uint64
	var dupWins [dups]atomic.Int32
	var finished atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, writers+4)
	entry := func(g, i uint64) (key []byte, seq uint64) {
		r := rand.New(rand.NewPCG(seed, g<<32|i))
		seq = 1000 + i*writers + g
		return ckKey(r.Uint64N(userKeys)), seq
	}
	for g := uint64(0); g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer finished.Add(1)
			r := rand.New(rand.NewPCG(seed, g))
			for i := uint64(0); i < perWriter; i++ {
				k, seq := entry(g, i)
				kind := base.KindSet
				if seq%7 == 0 {
					kind = base.KindDelete
				}
				if err := m.AddConcurrent(base.MakeInternalKey(k, base.SeqNum(seq), kind), ckValue(k, seq)); err != nil {
					errs <- fmt.Errorf("writer %d: %w", g, err)
					return
				}
				done[g].Store(i + 1)
				if r.IntN(15) == 0 {
					d := r.Uint64N(dups)
					k := ckKey(d % userKeys)
					err := m.AddConcurrent(base.MakeInternalKey(k, base.SeqNum(1+d), base.KindSet), ckValue(k, 1+d))
					if err == nil {
						dupWins[d].Add(1)
					} else if !errors.HasAssertionFailure(err) {
						errs <- fmt.Errorf("writer %d, duplicate: %w", g, err)
						return
					}
				}
			}
		}()
	}
	for rd := uint64(0); rd < 3; rd++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 100+rd))
			var it Iter
			for last := false; !last; {
				last = finished.Load() == writers // one more round after the writers
				if err := readRoundConcurrent(m, &it, r, &done, entry); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	require.Empty(t, m.points.checkList())
	want := make(map[string]bool)
	for g := uint64(0); g < writers; g++ {
		for i := uint64(0); i < perWriter; i++ {
			k, seq := entry(g, i)
			want[fmt.Sprintf("%s#%d", k, seq)] = true
		}
	}
	var wantDups int
	for d := range dupWins {
		require.LessOrEqual(t, dupWins[d].Load(), int32(1), "duplicate %d added twice", d)
		if dupWins[d].Load() == 1 {
			wantDups++
			want[fmt.Sprintf("%s#%d", ckKey(uint64(d)%userKeys), d+1)] = true
		}
	}
	got := make(map[string]bool)
	it := m.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		require.Equal(t, ckValue(k.UserKey, uint64(k.SeqNum())), it.Value(), "%s", k)
		got[fmt.Sprintf("%s#%d", k.UserKey, k.SeqNum())] = true
	}
	require.Equal(t, want, got)
	require.EqualValues(t, writers*perWriter+wantDups, m.NumEntries())
	lo, hi := m.SeqNumRange()
	if wantDups > 0 {
		require.Less(t, lo, base.SeqNum(1000))
	}
	require.EqualValues(t, 1000+(perWriter-1)*writers+writers-1, hi)
	require.LessOrEqual(t, m.arena.used(), uint32(len(m.arena.buf)))

	// The single writer takes over after concurrent inserts: its hint was
	// invalidated, and the list stays well formed.
	for i := uint64(0); i < 100; i++ {
		k := ckKey(i)
		require.NoError(t, m.Add(base.MakeInternalKey(k, base.SeqNum(900+i), base.KindSet), ckValue(k, 900+i)))
	}
	require.Empty(t, m.points.checkList())
}

// readRoundConcurrent: every entry a writer finished before the round
// began is found by Get as the newest version at its seq+1, and walks in
// either direction see strictly ordered keys with matching values.
func readRoundConcurrent(m *MemTable, it *Iter, r *rand.Rand, done *[6]atomic.Uint64, entry func(g, i uint64) ([]byte, uint64)) error {
	for j := 0; j < 20; j++ {
		g := r.Uint64N(uint64(len(done)))
		n := done[g].Load()
		if n == 0 {
			continue
		}
		k, seq := entry(g, r.Uint64N(n))
		v, _, got, found := m.Get(k, base.SeqNum(seq+1))
		if !found || uint64(got) != seq || !bytes.Equal(v, ckValue(k, seq)) {
			return fmt.Errorf("Get(%s, %d) = %q %d %v", k, seq+1, v, got, found)
		}
	}
	it.Init(m)
	var ok bool
	dir := +1
	step := it.Next
	switch r.IntN(4) {
	case 0:
		ok = it.First()
	case 1:
		ok, dir, step = it.Last(), -1, it.Prev
	case 2:
		ok = it.SeekGE(ckKey(r.Uint64N(800)))
	default:
		ok, dir, step = it.SeekLT(ckKey(r.Uint64N(800))), -1, it.Prev
	}
	var prev base.InternalKey
	for n := 0; ok && n < 2000; ok, n = step(), n+1 {
		k := it.Key()
		if !bytes.Equal(it.Value(), ckValue(k.UserKey, uint64(k.SeqNum()))) {
			return fmt.Errorf("entry %s has value %q", k, it.Value())
		}
		if n > 0 && base.InternalCompare(prev, k) != -dir {
			return fmt.Errorf("order: %s then %s moving %+d", prev, k, dir)
		}
		prev = k
	}
	return nil
}

// TestMemTable_AddConcurrentFull: inserters that fill the arena at the same
// time each stop at ErrArenaFull; the arena never reports more bytes used
// than it has, every entry that was added is there, and the list is well
// formed.
func TestMemTable_AddConcurrentFull(t *testing.T) {
	for round := 0; round < addConcurrentRounds(); round++ {
		m := New(64 << 10)
		const writers = 4
		var added [writers]int
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for g := 0; g < writers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					k := fmt.Appendf(nil, "k%d-%05d", g, (i*7919)%100000)
					err := m.AddConcurrent(base.MakeInternalKey(k, base.SeqNum(1+i*writers+g), base.KindSet), make([]byte, i%200))
					if errors.Is(err, ErrArenaFull) {
						// Later allocations fail cleanly too, without
						// moving the high-water mark.
						used := m.arena.used()
						if err := m.AddConcurrent(base.MakeInternalKey(k, base.SeqNum(1+i*writers+g), base.KindSet), make([]byte, 60<<10)); !errors.Is(err, ErrArenaFull) {
							errs <- fmt.Errorf("big entry after full: %v", err)
						} else if m.arena.used() < used {
							errs <- fmt.Errorf("used shrank")
						}
						return
					}
					if err != nil {
						errs <- err
						return
					}
					added[g]++
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.LessOrEqual(t, m.arena.used(), uint32(len(m.arena.buf)))
		require.Empty(t, m.points.checkList())
		total := 0
		for _, n := range added {
			total += n
		}
		require.EqualValues(t, total, m.NumEntries())
		n := 0
		for it, ok := m.NewIter(), false; ; n++ {
			if n == 0 {
				ok = it.First()
			} else {
				ok = it.Next()
			}
			if !ok {
				break
			}
		}
		require.Equal(t, total, n)
	}
}

// TestSkiplist_HintAfterConcurrent: the single writer's hint is the splice
// after its last node; concurrent inserts then add nodes inside that splice.
// The next single-writer insert must not link past them (it would unlink
// them from level 0).
func TestSkiplist_HintAfterConcurrent(t *testing.T) {
	m := New(1 << 20)
	add := func(k string, seq base.SeqNum) {
		require.NoError(t, m.Add(base.MakeInternalKey([]byte(k), seq, base.KindSet), nil))
	}
	for i := 0; i < 50; i++ {
		add(fmt.Sprintf("a%03d", i), 1) // ascending: the hint is used
	}
	add("m", 1)
	add("z", 1) // hint: just after z
	// Concurrent inserts between m and z, and after z.
	for _, k := range []string{"n", "p", "zz", "zzz"} {
		require.NoError(t, m.AddConcurrent(base.MakeInternalKey([]byte(k), 1, base.KindSet), nil))
	}
	add("zzzz", 1) // after zzz: a stale hint would link z -> zzzz
	add("o", 1)
	require.Empty(t, m.points.checkList())
	var keys []string
	it := m.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, string(it.Key().UserKey))
	}
	require.Equal(t, []string{"m", "n", "o", "p", "z", "zz", "zzz", "zzzz"}, keys[50:])
	require.Len(t, keys, 58)
}
