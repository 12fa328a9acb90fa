package cache

import (
	"encoding/binary"
	"math/rand"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/stratadb/strata/internal/invariants"
	"github.com/stratadb/strata/internal/offheap"
	"github.com/stretchr/testify/require"
)

// A handle keeps its block readable after the entry is evicted, replaced
// or dropped by EvictFile; the block counts as pinned until released.
func TestHandle_OutlivesEviction(t *testing.T) {
	c := newWithShards(64<<10, 1)
	c.Set(1, 0, block(1, 0, 4000))
	h, ok := c.Get(1, 0)
	require.True(t, ok)
	charge := h.v.charge
	c.Set(1, 0, block(1, 1, 4000)) // replaced
	require.Equal(t, charge, c.Stats().Pinned)
	for off := uint64(1); off < 100; off++ {
		c.Set(2, off, block(2, off, 4000)) // churn: freed memory is reused
	}
	require.Equal(t, uint64(0), binary.LittleEndian.Uint64(h.Bytes()[8:]), "still the block it was")
	h.Release()
	require.Zero(t, c.Stats().Pinned)

	h, ok = c.Get(2, 99)
	require.True(t, ok)
	c.EvictFile(2)
	c.SetCapacity(0)
	require.Zero(t, c.Stats().Used)
	require.Equal(t, charge, c.Stats().Pinned)
	require.Equal(t, uint64(99), binary.LittleEndian.Uint64(h.Bytes()[8:]))
	h.Release()
	require.Zero(t, c.Stats().Pinned)
	require.Zero(t, c.Outstanding())
}

// Alloc and Insert: the caller's handle and the cache's reference are
// independent; a value too large to cache is freed with the caller's
// release.
func TestHandle_AllocInsert(t *testing.T) {
	c := newWithShards(64<<10, 1)
	h := c.Alloc(5000)
	require.Len(t, h.Bytes(), 5000)
	copy(h.Bytes(), block(3, 7, 5000))
	h.SetLen(4000)
	c.Insert(3, 7, h, LowPriority)
	h.Release()
	g, ok := c.Get(3, 7)
	require.True(t, ok)
	require.Len(t, g.Bytes(), 4000)
	require.Equal(t, uint64(7), binary.LittleEndian.Uint64(g.Bytes()[8:]))
	g.Release()

	big := c.Alloc(128 << 10)
	c.Insert(3, 8, big, LowPriority)
	_, ok = c.Get(3, 8)
	require.False(t, ok, "larger than the shard")
	big.Release()
	require.Zero(t, c.Stats().Pinned)

	var zero Handle
	zero.Release() // nothing held
	require.Nil(t, zero.Bytes())
}

// Invariants builds catch a double release and a release of a handle
// that was never handed out, and report a handle dropped without Release.
func TestHandle_InvariantsChecks(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("invariants builds only")
	}
	c := newWithShards(64<<10, 1)
	c.Set(1, 0, block(1, 0, 100))
	h, _ := c.Get(1, 0)
	h.Release()
	require.Panics(t, func() { h.Release() }, "double release")
	require.Panics(t, func() { Handle{v: h.v}.Release() }, "a handle not handed out")
	require.Zero(t, c.Outstanding())

	before := Leaks()
	func() {
		h, _ := c.Get(1, 0)
		_ = h.Bytes()
	}()
	require.Equal(t, int64(1), c.Outstanding())
	for i := 0; i < 50 && Leaks() == before; i++ {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, before+1, Leaks(), "the dropped handle is reported")
}

// Concurrent lookups holding handles for a while, inserts, evictions and
// capacity changes: every block read through a handle is the one asked for
// (under -race on heap memory; with -tags invariants freed memory is
// poisoned or inaccessible), and at the end nothing is pinned.
func TestHandle_ConcurrentGetReleaseEvict(t *testing.T) {
	c := New(1 << 20)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			var held []Handle
			var keys [][2]uint64
			for i := 0; i < 4000; i++ {
				owner, off := uint64(1+rng.Intn(4)), uint64(rng.Intn(200))
				switch r := rng.Intn(100); {
				case r < 30:
					c.Set(owner, off, block(owner, off, 16+rng.Intn(6<<10)))
				case r < 90:
					if h, ok := c.Get(owner, off); ok {
						held = append(held, h)
						keys = append(keys, [2]uint64{owner, off})
					}
				case r < 96:
					c.EvictFile(owner)
				default:
					c.SetCapacity(int64(64+rng.Intn(1024)) << 10)
				}
				if len(held) > 8 || i == 3999 {
					for j, h := range held {
						b := h.Bytes()
						if binary.LittleEndian.Uint64(b) != keys[j][0] || binary.LittleEndian.Uint64(b[8:]) != keys[j][1] {
							errs <- "a held block changed"
						}
						h.Release()
					}
					held, keys = held[:0], keys[:0]
				}
			}
		}(int64(g))
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	require.Zero(t, c.Stats().Pinned)
	require.Zero(t, c.Outstanding())
	checkInvariants(t, c)
}

// SetCapacity downwards gives the memory back: slabs left without a live
// value are unmapped (one per class kept, its pages dropped), and a block a
// handle holds keeps only its own slab.
func TestMemory_SetCapacityDownFrees(t *testing.T) {
	if !offheap.Enabled || invariants.Enabled {
		t.Skip("slab memory: mapped builds without invariants")
	}
	c := New(64 << 20)
	before := c.Stats().Mapped
	require.Zero(t, before)
	for off := uint64(0); off < 8000; off++ {
		c.Set(1, off, block(1, off, 4101))
	}
	grown := c.Stats().Mapped - before
	require.Greater(t, grown, int64(8000*4352))
	require.Less(t, grown, int64(8000*4352+2*slabMin*numClasses))
	h, ok := c.Get(1, 4000)
	require.True(t, ok)
	c.SetCapacity(0)
	require.Zero(t, c.Stats().Used)
	require.LessOrEqual(t, c.Stats().Mapped-before, int64(2*slabMin), "the held block's slab and one spare")
	require.Equal(t, uint64(4000), binary.LittleEndian.Uint64(h.Bytes()[8:]))
	h.Release()
	require.LessOrEqual(t, c.Stats().Mapped-before, int64(slabMin), "one spare, its pages dropped")
	// The spare and new slabs serve the next inserts.
	c.SetCapacity(1 << 20)
	c.Set(1, 1, block(1, 1, 4101))
	v, ok := get(c, 1, 1)
	require.True(t, ok)
	require.Equal(t, uint64(1), binary.LittleEndian.Uint64(v[8:]))
}

// Under the invariants tag a block read after its memory was freed faults
// (the value had a mapping of its own, made inaccessible by the free);
// SetPanicOnFault turns the fault into a panic the test sees.
func TestMemory_ReadAfterFreeFaults(t *testing.T) {
	if !offheap.Enabled || !invariants.Enabled {
		t.Skip("mapped builds with invariants")
	}
	c := New(1 << 20)
	c.Set(1, 0, block(1, 0, 4101))
	h, _ := c.Get(1, 0)
	b := h.Bytes()
	h.Release()
	c.EvictAll() // the last reference: freed
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	require.Panics(t, func() { sink = b[100] })
}

var sink byte

// Lookups racing the eviction of the very entry they find: a lookup that
// finds a value whose count already reached zero must miss, never revive
// it (with -tags invariants the freed block is inaccessible, and reading
// it faults; without, its slot holds another block).
func TestHandle_GetRacesEviction(t *testing.T) {
	c := newWithShards(1<<20, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for gen := uint64(0); ; gen++ {
			select {
			case <-stop:
				return
			default:
			}
			c.Set(1, 0, block(1, gen, 4000))
			c.Set(2, gen, block(2, gen, 4000)) // reuses freed slots
			c.EvictAll()
		}
	}()
	bad := 0
	for i := 0; i < 200000; i++ {
		if h, ok := c.Get(1, 0); ok {
			if binary.LittleEndian.Uint64(h.Bytes()) != 1 {
				bad++
			}
			h.Release()
		}
	}
	close(stop)
	wg.Wait()
	require.Zero(t, bad, "a lookup read a freed block")
	require.Zero(t, c.Stats().Pinned)

	if !invariants.Enabled {
		return
	}
	// The window itself: the entry is evicted and freed after the lookup
	// found it and before it takes its reference. The lookup must miss.
	c.Set(1, 0, block(1, 0, 4000))
	lookupHook = func() { lookupHook = nil; c.EvictAll() }
	defer func() { lookupHook = nil }()
	h, ok := c.Get(1, 0)
	if ok {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		b := h.Bytes()
		require.False(t, ok, "Get revived a freed block (first byte %d)", b[0])
	}
}
