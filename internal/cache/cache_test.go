package cache

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"github.com/stratadb/strata/internal/invariants"
	"github.com/stratadb/strata/internal/offheap"
	"github.com/stretchr/testify/require"
)

// checkInvariants verifies each shard's documented invariants.
func checkInvariants(t *testing.T, c *Cache) {
	t.Helper()
	var total int64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n, used, highUsed := 0, int64(0), int64(0)
		es := s.mu.entries
		for _, head := range []int32{sentinel, highSentinel} {
			for i := es[head].next; i != head; i = es[i].next {
				e := &es[i]
				require.GreaterOrEqual(t, i, int32(firstSlot))
				require.Equal(t, i, es[e.next].prev)
				require.Equal(t, i, s.mu.table[e.key])
				require.Equal(t, e.val.charge, e.charge)
				require.Equal(t, head == highSentinel, e.inHigh, "inHigh matches the list")
				if e.inHigh {
					require.True(t, e.high, "only high-priority entries in the pool")
					highUsed += e.charge
				}
				n++
				used += e.charge
				require.LessOrEqual(t, n, len(es), "list cycle")
			}
		}
		require.Equal(t, len(s.mu.table), n)
		ix := s.idx.Load()
		require.Equal(t, len(s.mu.table), ix.live, "the index links every entry")
		require.LessOrEqual(t, 2*(ix.live+ix.dead), len(ix.slots))
		for k, i := range s.mu.table {
			require.Same(t, es[i].val, ix.find(k), "index entry of %v", k)
		}
		require.Equal(t, s.mu.highUsed, highUsed)
		require.LessOrEqual(t, s.mu.highUsed, s.mu.highCapacity)
		free := 0
		for i := s.mu.free; i != sentinel; i = es[i].next {
			require.Equal(t, entry{next: es[i].next}, es[i], "free slot %d not cleared", i)
			free++
			require.LessOrEqual(t, free, len(es), "free list cycle")
		}
		require.Equal(t, len(es), firstSlot+n+free, "every slot is listed or free")
		require.Equal(t, s.mu.used, used)
		require.LessOrEqual(t, s.mu.used, s.mu.capacity)
		total += used
		s.mu.Unlock()
	}
	require.Equal(t, c.Stats().Used, total)
	require.LessOrEqual(t, total, c.Stats().Capacity)
}

// block returns a value whose contents identify (id, offset).
func block(id, offset uint64, size int) []byte {
	v := make([]byte, size)
	if size >= 16 {
		binary.LittleEndian.PutUint64(v, id)
		binary.LittleEndian.PutUint64(v[8:], offset)
	}
	return v
}

func TestNew_ShardCount(t *testing.T) {
	require.Len(t, New(0).shards, 1)
	require.Len(t, New(1<<20).shards, 2)
	require.Len(t, New(8<<20).shards, 16)
	require.Len(t, New(1<<30).shards, 16)
}

func TestCache_GetSet(t *testing.T) {
	c := New(1 << 20)
	id := c.NewID()
	require.NotEqual(t, id, c.NewID())
	_, ok := get(c, id, 0)
	require.False(t, ok)
	c.Set(id, 0, []byte("block0"))
	c.Set(id, 4096, []byte("block1"))
	v, ok := get(c, id, 0)
	require.True(t, ok)
	require.Equal(t, []byte("block0"), v)
	c.Set(id, 0, []byte("block0-again"))
	v, _ = get(c, id, 0)
	require.Equal(t, []byte("block0-again"), v)
	_, ok = get(c, id+1, 0)
	require.False(t, ok)

	st := c.Stats()
	st.Mapped = 0 // depends on the build
	require.Equal(t, Stats{Hits: 2, Misses: 2, Inserts: 3, Used: Charge([]byte("block0-again")) + Charge([]byte("block1")), Capacity: 1 << 20}, st)
	checkInvariants(t, c)
}

func TestCache_LRUOrder(t *testing.T) {
	const size = 1024 // a size class: charged exactly
	c := newWithShards(3*(size+EntryOverhead), 1)
	c.Set(1, 0, block(1, 0, size))
	c.Set(1, 1, block(1, 1, size))
	c.Set(1, 2, block(1, 2, size))
	_, ok := get(c, 1, 0) // 0 becomes most recent; 1 is now LRU
	require.True(t, ok)
	c.Set(1, 3, block(1, 3, size))
	_, ok = get(c, 1, 1)
	require.False(t, ok, "LRU entry should have been evicted")
	for _, off := range []uint64{0, 2, 3} {
		_, ok := get(c, 1, off)
		require.True(t, ok, "offset %d", off)
	}
	require.Equal(t, uint64(1), c.Stats().Evictions)

	// Replacing with a bigger value evicts from the LRU end, never itself.
	c.Set(1, 0, block(1, 0, 2*size)) // order now 0, 3, 2 → 2 must go
	_, ok = get(c, 1, 2)
	require.False(t, ok)
	_, ok = get(c, 1, 0)
	require.True(t, ok)
	checkInvariants(t, c)
}

func TestCache_TooLargeNotCached(t *testing.T) {
	c := newWithShards(4096, 1)
	c.Set(1, 0, make([]byte, 100))
	c.Set(1, 0, make([]byte, 4096)) // over capacity with overhead: dropped
	_, ok := get(c, 1, 0)
	require.False(t, ok)
	require.Zero(t, c.Stats().Used)

	z := New(0)
	z.Set(1, 0, []byte("x"))
	_, ok = get(z, 1, 0)
	require.False(t, ok)
	checkInvariants(t, c)
}

func TestCache_CapacityBoundRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	c := New(4 << 20)
	require.Len(t, c.shards, 8)
	for i := 0; i < 20000; i++ {
		id, off := uint64(rng.Intn(8)), uint64(rng.Intn(2000))*4096
		switch r := rng.Intn(100); {
		case r < 60:
			c.Set(id, off, block(id, off, 16+rng.Intn(64<<10)))
		case r < 98:
			if v, ok := get(c, id, off); ok {
				require.Equal(t, id, binary.LittleEndian.Uint64(v))
				require.Equal(t, off, binary.LittleEndian.Uint64(v[8:]))
			}
		case r < 99:
			c.EvictFile(id)
		default:
			c.SetCapacity(int64(1+rng.Intn(8)) << 20)
		}
		st := c.Stats()
		require.LessOrEqual(t, st.Used, st.Capacity)
		if i%1000 == 0 {
			checkInvariants(t, c)
		}
	}
	checkInvariants(t, c)
	require.NotZero(t, c.Stats().Evictions)
}

func TestCache_EvictFile(t *testing.T) {
	c := New(8 << 20)
	a, b := c.NewID(), c.NewID()
	for off := uint64(0); off < 100; off++ {
		c.Set(a, off*4096, block(a, off, 100))
		c.Set(b, off*4096, block(b, off, 100))
	}
	c.EvictFile(a)
	for off := uint64(0); off < 100; off++ {
		_, ok := get(c, a, off*4096)
		require.False(t, ok)
		_, ok = get(c, b, off*4096)
		require.True(t, ok)
	}
	st := c.Stats()
	require.Equal(t, 100*Charge(make([]byte, 100)), st.Used)
	require.Zero(t, st.Evictions)
	checkInvariants(t, c)
}

func TestCache_SetCapacityShrinks(t *testing.T) {
	c := newWithShards(1<<20, 4)
	for off := uint64(0); off < 200; off++ {
		c.Set(1, off, make([]byte, 1000))
	}
	c.SetCapacity(20 << 10)
	st := c.Stats()
	require.LessOrEqual(t, st.Used, int64(20<<10))
	require.Equal(t, int64(20<<10), st.Capacity)
	require.NotZero(t, st.Evictions)
	c.SetCapacity(-5)
	require.Zero(t, c.Stats().Used)
	checkInvariants(t, c)
}

func TestCache_Nil(t *testing.T) {
	var c *Cache
	require.Zero(t, c.NewID())
	c.Set(1, 2, []byte("x"))
	v, ok := get(c, 1, 2)
	require.False(t, ok)
	require.Nil(t, v)
	c.EvictFile(1)
	c.SetCapacity(100)
	require.Equal(t, Stats{}, c.Stats())
}

func TestCache_GetNoAllocs(t *testing.T) {
	if invariants.Enabled {
		t.Skip("handles are tracked in invariants builds")
	}
	c := New(1 << 20)
	c.Set(7, 4096, []byte("value"))
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		touch(c, 7, 4096)
		touch(c, 7, 8192)
	}))
}

func TestCache_Concurrent(t *testing.T) {
	c := New(2 << 20)
	churnConcurrently(t, c, c.Set)
}

// churnConcurrently runs four goroutines of random inserts (through set),
// checked lookups, file evictions and capacity changes on c, then checks
// its invariants. Goroutines report wrong blocks through a channel read
// after they are done.
func churnConcurrently(t *testing.T, c *Cache, set func(owner, off uint64, v []byte)) {
	var wg sync.WaitGroup
	errs := make(chan error, 4) // one per goroutine at most, checked after wg.Wait
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			_ = c.NewID() // concurrent id allocation
			for i := 0; i < 3000; i++ {
				owner, off := uint64(1+rng.Intn(5)), uint64(rng.Intn(300))
				switch r := rng.Intn(100); {
				case r < 40:
					set(owner, off, block(owner, off, 16+rng.Intn(8<<10)))
				case r < 97:
					if v, ok := get(c, owner, off); ok {
						if binary.LittleEndian.Uint64(v) != owner || binary.LittleEndian.Uint64(v[8:]) != off {
							errs <- fmt.Errorf("wrong block for (%d,%d)", owner, off)
							return
						}
					}
				case r < 99:
					c.EvictFile(owner)
				default:
					c.SetCapacity(int64(1+rng.Intn(4)) << 20)
				}
			}
		}(int64(g))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	checkInvariants(t, c)
}

func BenchmarkGetHit(b *testing.B) {
	c := New(64 << 20)
	const n = 1024
	for off := uint64(0); off < n; off++ {
		c.Set(1, off*4096, make([]byte, 4096))
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			touch(c, 1, uint64(i%n)*4096)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				touch(c, 1, uint64(i%n)*4096)
				i++
			}
		})
	})
}

func BenchmarkSet(b *testing.B) {
	c := New(16 << 20) // ~4k blocks: steady-state eviction
	v := make([]byte, 4096)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.Set(1, uint64(i)*4096, v)
	}
}

// TestCache_InsertNeverEvictsItself fills a shard with referenced entries,
// which get second chances ahead of a new one: the entry being inserted
// must still be the one kept, down to a shard with room for one block.
func TestCache_InsertNeverEvictsItself(t *testing.T) {
	const size = 1024
	for _, slots := range []int{1, 2, 4} {
		c := newWithShards(int64(slots)*(size+EntryOverhead), 1)
		for off := uint64(0); off < uint64(slots); off++ {
			c.Set(1, off, block(1, off, size))
		}
		for round := uint64(0); round < 3*uint64(slots); round++ {
			// Reference every cached entry, then insert a new one.
			for off := uint64(0); off < uint64(slots)+round; off++ {
				get(c, 1, off)
			}
			off := uint64(slots) + round
			c.Set(1, off, block(1, off, size))
			v, ok := get(c, 1, off)
			require.True(t, ok, "slots %d: the inserted block %d was evicted", slots, off)
			require.Equal(t, block(1, off, size), v)
			checkInvariants(t, c)
		}
	}
}

// TestCache_SetIfRoom: SetIfRoom stores only while nothing must be evicted
// and never replaces a cached value; HasRoom agrees with it.
func TestCache_SetIfRoom(t *testing.T) {
	c := newWithShards(4*Charge(make([]byte, 1024)), 1)
	id := c.NewID()
	for i := uint64(0); i < 4; i++ {
		require.True(t, c.HasRoom(id, i, 1024))
		require.True(t, c.SetIfRoom(id, i, block(id, i, 1024)))
	}
	require.False(t, c.HasRoom(id, 9, 1))
	require.False(t, c.SetIfRoom(id, 9, block(id, 9, 1)))
	c.Set(id, 0, block(id, 0, 500)) // frees 512 bytes
	require.True(t, c.HasRoom(id, 9, 300))
	require.False(t, c.SetIfRoom(id, 1, block(id, 1, 10)), "an existing entry is not replaced")
	v, ok := get(c, id, 1)
	require.True(t, ok)
	require.Len(t, v, 1024)
	require.True(t, c.SetIfRoom(id, 9, block(id, 9, 300)))
	st := c.Stats()
	require.Zero(t, st.Evictions)
	require.Equal(t, uint64(6), st.Inserts)
	checkInvariants(t, c)
	var nilCache *Cache
	require.False(t, nilCache.HasRoom(id, 0, 1))
	require.False(t, nilCache.SetIfRoom(id, 0, nil))
}

// TestAllocSizeMatchesRuntime checks the size class table against the
// running Go runtime: append rounds a fresh slice's capacity up to the
// size of the object it allocated.
func TestAllocSizeMatchesRuntime(t *testing.T) {
	for n := 1; n <= 80<<10; n++ {
		if n > 40<<10 && n%97 != 0 {
			continue
		}
		got := cap(append([]byte(nil), make([]byte, n)...))
		require.Equal(t, got, AllocSize(n), "size %d", n)
	}
	require.Zero(t, AllocSize(0))
	if !offheap.Enabled {
		require.Equal(t, int64(4864+EntryOverhead), Charge(make([]byte, 4096+5)))
	} else {
		require.Equal(t, int64(4352+EntryOverhead), Charge(make([]byte, 4096+5)))
	}
}

// TestClassOf: every size up to the largest class maps to the smallest
// class that holds it, classes ascend, none is more than 1/16 (or 64
// bytes) above the sizes it holds, and numClasses counts them.
func TestClassOf(t *testing.T) {
	prevIdx, prevSize := -1, 0
	for n := 1; n <= maxClassSize; n++ {
		i, size := classOf(n)
		require.GreaterOrEqual(t, size, n)
		require.LessOrEqual(t, size-n, max(smallStep, size/stepsPerPower), "size %d", n)
		if size != prevSize {
			require.Equal(t, prevIdx+1, i, "size %d", n)
			require.Equal(t, prevSize+1, n, "size %d: the previous class ends just below", n)
			prevIdx, prevSize = i, size
		}
		require.Equal(t, size, prevSize)
	}
	require.Equal(t, numClasses-1, prevIdx)
	require.Equal(t, maxClassSize, prevSize)
}

// TestCache_ChargesAllocation: a 4101-byte block is charged as the slot
// (or heap object) it occupies, so a cache holds as many as fit by that.
func TestCache_ChargesAllocation(t *testing.T) {
	one := Charge(make([]byte, 4101))
	require.Greater(t, one, int64(4101+EntryOverhead))
	c := newWithShards(10*one, 1)
	id := c.NewID()
	for i := uint64(0); i < 20; i++ {
		c.Set(id, i*4101, make([]byte, 4101))
	}
	st := c.Stats()
	require.Equal(t, 10*one, st.Used)
	require.Equal(t, uint64(10), st.Evictions)
	checkInvariants(t, c)
}

// TestCache_SetDoesNotAllocate: inserting into a full cache (one eviction
// per insert) reuses freed entry slots, so a steady stream of misses
// allocates only the values themselves (valueAllocs each).
func TestCache_SetDoesNotAllocate(t *testing.T) {
	if invariants.Enabled {
		t.Skip("handles are tracked in invariants builds")
	}
	const size = 4096
	c := newWithShards(64*(size+EntryOverhead), 1)
	v := make([]byte, size)
	off := uint64(0)
	for ; off < 1000; off++ {
		c.Set(1, off, v)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		c.Set(1, off, v)
		off++
	})
	require.LessOrEqual(t, allocs, float64(valueAllocs))
	checkInvariants(t, c)
}

// BenchmarkEvictFile measures EvictFile on a 1 GiB cache full of 4 KiB
// blocks (about 215k entries, 100 blocks per reader id): the cost one table
// reader's Close paid when it evicted its blocks. The values share one
// allocation (the charge depends only on the capacity), so the benchmark
// needs no gigabyte of memory.
func BenchmarkEvictFile(b *testing.B) {
	c := New(1 << 30)
	v := make([]byte, 4096)
	const perID = 100
	var id uint64
	for c.Stats().Used+Charge(v) <= 1<<30-16*Charge(v) {
		id = c.NewID()
		for off := uint64(0); off < perID; off++ {
			c.Set(id, off*4096, v)
		}
	}
	b.ReportMetric(float64(len(c.shards[0].mu.table)*len(c.shards)), "entries")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.EvictFile(uint64(i%int(id)) + 1)
	}
}

// get returns a copy of the block cached for (id, offset), releasing the
// handle.
func get(c *Cache, id, offset uint64) ([]byte, bool) {
	h, ok := c.Get(id, offset)
	if !ok {
		return nil, false
	}
	v := append([]byte(nil), h.Bytes()...)
	h.Release()
	return v, true
}

// touch looks (id, offset) up and releases the handle at once.
func touch(c *Cache, id, offset uint64) bool {
	h, ok := c.Get(id, offset)
	h.Release()
	return ok
}

// valueAllocs is what caching a value allocates: its header, and its
// memory where that is on the heap.
const valueAllocs = 2
