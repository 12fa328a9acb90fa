package memtable_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/memtable"
	"github.com/stretchr/testify/require"
)

// The writer of the concurrent test adds, for seq = 1..n, the entry
// (keyOf(seq), seq, SET) -> valueOf(seq), so that readers know what every
// published sequence number must look like. The key orders below exercise
// the writer's search from scratch (scattered) and from its last splice
// (ascending, descending, ascending runs that revisit older keys).
const concurrentN = 6000

func keyNum(i uint64) []byte { return fmt.Appendf(nil, "k%05d", i) }

var concurrentKeyOrders = map[string]func(seq uint64) []byte{
	"scattered":  func(seq uint64) []byte { return keyNum((seq * 7919) % 1500) },
	"ascending":  func(seq uint64) []byte { return keyNum(seq) },
	"descending": func(seq uint64) []byte { return keyNum(concurrentN - seq) },
	"runs": func(seq uint64) []byte {
		run, i := (seq-1)/64, (seq-1)%64
		return keyNum((run*37)%40*64 + i)
	},
}

func valueOf(key []byte, seq uint64) []byte {
	return fmt.Appendf(nil, "%s@%d", key, seq)
}

// TestMemTable_Concurrent runs one writer and four lock-free readers. The
// readers check the order of every step, the content of every entry, and
// that every entry whose Add returned before a read began is found by it.
func TestMemTable_Concurrent(t *testing.T) {
	for name, keyOf := range concurrentKeyOrders {
		t.Run(name, func(t *testing.T) { testConcurrent(t, keyOf) })
	}
}

func testConcurrent(t *testing.T, keyOf func(seq uint64) []byte) {
	const n = concurrentN
	m := memtable.New(4 << 20)
	var published atomic.Uint64 // last seq whose Add returned
	var done atomic.Bool
	var rounds atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 5)

	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		for seq := uint64(1); seq <= n; seq++ {
			k := keyOf(seq)
			if err := m.Add(base.MakeInternalKey(k, base.SeqNum(seq), base.KindSet), valueOf(k, seq)); err != nil {
				errs <- err
				return
			}
			if seq%500 == 0 {
				ts := base.Tombstone{Start: []byte("a"), End: []byte("b"), Seq: base.SeqNum(seq)}
				if err := m.AddRangeDel(ts); err != nil {
					errs <- err
					return
				}
			}
			published.Store(seq)
		}
	}()
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rd := &reader{r: rand.New(rand.NewPCG(seed, 1)), m: m, keyOf: keyOf}
			for last := false; !last; {
				last = done.Load() // one full round after the writer finishes
				if err := rd.round(published.Load()); err != nil {
					errs <- err
					return
				}
				rounds.Add(1)
			}
		}(uint64(i))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, n, m.NumEntries())
	t.Logf("%d read rounds", rounds.Load())
}

// reader is the state of one reading goroutine.
type reader struct {
	r     *rand.Rand
	m     *memtable.MemTable
	keyOf func(seq uint64) []byte
	it    memtable.Iter
	seen  []uint64 // sequence numbers seen by iterators, most recent last
}

// readRound runs one round of reads; every sequence number <= published was
// added before it started.
func (rd *reader) round(published uint64) error {
	r, m := rd.r, rd.m
	for i := 0; i < 20 && published > 0; i++ {
		// Every published entry is visible, and is the newest version at
		// seq+1.
		if err := checkGet(m, rd.keyOf, 1+r.Uint64N(published)); err != nil {
			return err
		}
	}
	for i := 0; i < 5 && len(rd.seen) > 0; i++ {
		// Every entry once seen stays visible.
		if err := checkGet(m, rd.keyOf, rd.seen[r.IntN(len(rd.seen))]); err != nil {
			return fmt.Errorf("seen before: %w", err)
		}
	}
	if ts := m.Tombstones(base.SeqNum(published + 1)); len(ts) != int(published/500) {
		return fmt.Errorf("%d tombstones visible at %d", len(ts), published+1)
	}
	it := &rd.it
	it.Init(m)
	seek := keyNum(r.Uint64N(concurrentN + 100))
	var err error
	switch r.IntN(4) {
	case 0:
		err = rd.walk(it.First(), it.Next, +1, 1<<30)
	case 1:
		err = rd.walk(it.Last(), it.Prev, -1, 1<<30)
	case 2:
		err = rd.walk(it.SeekGE(seek), it.Next, +1, 200)
	default:
		err = rd.walk(it.SeekLT(seek), it.Prev, -1, 200)
	}
	return err
}

func checkGet(m *memtable.MemTable, keyOf func(uint64) []byte, seq uint64) error {
	k := keyOf(seq)
	v, kind, got, found := m.Get(k, base.SeqNum(seq+1))
	if !found || uint64(got) != seq || kind != base.KindSet || !bytes.Equal(v, valueOf(k, seq)) {
		return fmt.Errorf("Get(%s, %d) = %q %v %d %v", k, seq+1, v, kind, got, found)
	}
	return nil
}

// walk steps with step while ok, at most limit times, checking that keys
// move strictly in direction dir (+1 forward, -1 backward) and that values
// match keys.
func (rd *reader) walk(ok bool, step func() bool, dir int, limit int) error {
	it := &rd.it
	var prev base.InternalKey
	for count := 0; ok && count < limit; ok, count = step(), count+1 {
		k := it.Key()
		if !bytes.Equal(it.Value(), valueOf(k.UserKey, uint64(k.SeqNum()))) {
			return fmt.Errorf("entry %s has value %q", k, it.Value())
		}
		if count > 0 && base.InternalCompare(prev, k) != -dir {
			return fmt.Errorf("order: %s then %s moving %+d", prev, k, dir)
		}
		prev = k
		if rd.r.IntN(50) == 0 {
			if len(rd.seen) == 100 {
				rd.seen = rd.seen[1:]
			}
			rd.seen = append(rd.seen, uint64(k.SeqNum()))
		}
	}
	return nil
}
