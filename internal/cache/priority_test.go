package cache

import (
	"fmt"
	"math"
	"math/rand"
	"sync/atomic"
	"testing"

	"github.com/stratadb/strata/internal/invariants"
	"github.com/stretchr/testify/require"
)

// The tests below use 1024-byte values (a size class, so each entry is
// charged exactly slot bytes) in one-shard caches of a whole number of
// slots.
const (
	prioSize = 1024
	slot     = prioSize + EntryOverhead
)

func cached(c *Cache, id, off uint64) bool {
	// Peek without setting the reference bit, so that checking does not
	// change what is evicted next.
	s := c.shard(id, off)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.mu.table[key{id, off}]
	return ok
}

// Data-block churn does not evict high-priority entries while they fit in
// the pool, even when they are never read again; without a pool (ratio 0)
// the same churn evicts them.
func TestCache_HighPriSurvivesDataChurn(t *testing.T) {
	for _, ratio := range []float64{0.5, 0} {
		t.Run(fmt.Sprint(ratio), func(t *testing.T) {
			c := newWithPool(16*slot, 1, ratio)
			for off := uint64(0); off < 4; off++ {
				c.SetWithPriority(1, off, block(1, off, prioSize), HighPriority)
			}
			for off := uint64(0); off < 1000; off++ {
				c.Set(2, off, block(2, off, prioSize))
				if off%7 == 0 {
					get(c, 2, off) // some data blocks get second chances
				}
			}
			for off := uint64(0); off < 4; off++ {
				require.Equal(t, ratio > 0, cached(c, 1, off), "high-priority block %d", off)
			}
			st := c.Stats()
			require.Equal(t, int64(16*slot), st.Used, "data blocks fill the rest")
			require.Equal(t, uint64(4), st.HighPriInserts)
			if ratio > 0 {
				require.Equal(t, int64(4*slot), st.HighPriUsed)
				require.Equal(t, int64(8*slot), st.HighPriCapacity)
			}
			checkInvariants(t, c)
		})
	}
}

// The pool holds at most ratio × capacity: the most recent high-priority
// entries that fit stay; older ones overflow into the low list and age
// out like data blocks.
func TestCache_HighPriPoolBound(t *testing.T) {
	c := newWithPool(16*slot, 1, 0.5)
	for off := uint64(0); off < 20; off++ {
		c.SetWithPriority(1, off, block(1, off, prioSize), HighPriority)
		st := c.Stats()
		require.LessOrEqual(t, st.HighPriUsed, st.HighPriCapacity)
		require.Equal(t, int64(min(off+1, 8)*slot), st.HighPriUsed)
	}
	checkInvariants(t, c)
	for off := uint64(0); off < 100; off++ {
		c.Set(2, off, block(2, off, prioSize))
	}
	for off := uint64(0); off < 20; off++ {
		require.Equal(t, off >= 12, cached(c, 1, off), "high-priority block %d", off)
	}
	checkInvariants(t, c)
}

// A high-priority entry that overflowed the pool and was read since goes
// back into the pool when it reaches the low list's end, pushing the
// pool's least recently used unread entry out instead.
func TestCache_HighPriReferencedReturnsToPool(t *testing.T) {
	c := newWithPool(16*slot, 1, 0.5)
	for off := uint64(0); off < 9; off++ { // 0 overflows into the low list
		c.SetWithPriority(1, off, block(1, off, prioSize), HighPriority)
	}
	_, ok := get(c, 1, 0)
	require.True(t, ok)
	for off := uint64(0); off < 100; off++ {
		c.Set(2, off, block(2, off, prioSize))
	}
	require.True(t, cached(c, 1, 0), "read since: back in the pool")
	require.False(t, cached(c, 1, 1), "the pool's LRU entry overflowed and aged out")
	for off := uint64(2); off < 9; off++ {
		require.True(t, cached(c, 1, off), "high-priority block %d", off)
	}
	checkInvariants(t, c)
}

// With ratio 1 the shard may be all high-priority entries; a data block
// then evicts from the pool rather than not being cached.
func TestCache_HighPriWholeShard(t *testing.T) {
	c := newWithPool(4*slot, 1, 1)
	for off := uint64(0); off < 4; off++ {
		c.SetWithPriority(1, off, block(1, off, prioSize), HighPriority)
	}
	require.Equal(t, int64(4*slot), c.Stats().HighPriUsed)
	c.Set(2, 0, block(2, 0, prioSize))
	require.True(t, cached(c, 2, 0))
	require.False(t, cached(c, 1, 0), "the pool's LRU entry")
	require.Equal(t, int64(3*slot), c.Stats().HighPriUsed)
	checkInvariants(t, c)
}

// Replacing an entry may change its priority; SetCapacity shrinks the
// pool with the shard.
func TestCache_HighPriReplaceAndShrink(t *testing.T) {
	c := newWithPool(16*slot, 1, 0.5)
	c.Set(1, 0, block(1, 0, prioSize))
	require.Zero(t, c.Stats().HighPriUsed)
	c.SetWithPriority(1, 0, block(1, 0, 2*prioSize), HighPriority)
	require.Equal(t, Charge(make([]byte, 2*prioSize)), c.Stats().HighPriUsed)
	c.Set(1, 0, block(1, 0, prioSize))
	require.Zero(t, c.Stats().HighPriUsed)
	checkInvariants(t, c)

	for off := uint64(0); off < 8; off++ {
		c.SetWithPriority(3, off, block(3, off, prioSize), HighPriority)
	}
	require.Equal(t, int64(8*slot), c.Stats().HighPriUsed)
	c.SetCapacity(8 * slot)
	st := c.Stats()
	require.Equal(t, int64(4*slot), st.HighPriCapacity)
	require.Equal(t, int64(4*slot), st.HighPriUsed)
	for off := uint64(4); off < 8; off++ {
		require.True(t, cached(c, 3, off), "the most recent stay in the pool: %d", off)
	}
	checkInvariants(t, c)
}

// Random operations with both priorities keep every charge exact and both
// bounds (checkInvariants).
func TestCache_HighPriRandom(t *testing.T) {
	for _, ratio := range []float64{0, 0.1, 0.5, 0.9, 1} {
		rng := rand.New(rand.NewSource(int64(ratio * 100)))
		c := newWithPool(64<<10, 2, ratio)
		for i := 0; i < 20000; i++ {
			id, off := uint64(1+rng.Intn(4)), uint64(rng.Intn(200))
			switch r := rng.Intn(100); {
			case r < 30:
				c.Set(id, off, make([]byte, 1+rng.Intn(6000)))
			case r < 50:
				c.SetWithPriority(id, off, make([]byte, 1+rng.Intn(6000)), HighPriority)
			case r < 55:
				c.SetIfRoom(id, off, make([]byte, 1+rng.Intn(6000)))
			case r < 98:
				get(c, id, off)
			case r < 99:
				c.EvictFile(id)
			default:
				c.SetCapacity(int64(16+rng.Intn(64)) << 10)
			}
			if i%500 == 0 {
				checkInvariants(t, c)
			}
		}
		checkInvariants(t, c)
	}
}

func TestNewWithHighPriPool_Ratio(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{0.5, 0.5}, {0, 0}, {1, 1}, {-1, 0}, {2, 1}, {math.NaN(), 0},
	} {
		c := NewWithHighPriPool(8<<20, tc.in)
		require.Equal(t, tc.want, c.HighPriPoolRatio(), "ratio %v", tc.in)
		require.Equal(t, int64(float64(8<<20/16)*tc.want)*16, c.Stats().HighPriCapacity)
	}
	require.Zero(t, New(8<<20).HighPriPoolRatio())
	var nilCache *Cache
	require.Zero(t, nilCache.HighPriPoolRatio())
}

// Hits on high-priority entries do not allocate; a stream of
// high-priority inserts into a full cache allocates only the values (a
// header, and the memory where it is not mapped).
func TestCache_HighPriNoAllocs(t *testing.T) {
	if invariants.Enabled {
		t.Skip("handles are tracked in invariants builds")
	}
	c := newWithPool(64*slot, 1, 0.5)
	v := make([]byte, prioSize)
	for off := uint64(0); off < 1000; off++ {
		c.SetWithPriority(1, off, v, HighPriority)
		c.Set(2, off, v)
	}
	off := uint64(1000)
	allocs := testing.AllocsPerRun(1000, func() {
		c.SetWithPriority(1, off, v, HighPriority)
		c.Set(2, off, v)
		touch(c, 1, off)
		off++
	})
	require.LessOrEqual(t, allocs, float64(2*valueAllocs))
	checkInvariants(t, c)
}

func TestCache_HighPriConcurrent(t *testing.T) {
	c := NewWithHighPriPool(2<<20, 0.5)
	var n atomic.Uint64
	churnConcurrently(t, c, func(owner, off uint64, v []byte) {
		// Half the inserts go into the pool.
		if n.Add(1)%2 == 0 {
			c.SetWithPriority(owner, off, v, HighPriority)
			return
		}
		c.Set(owner, off, v)
	})
}

// BenchmarkSetHighPri inserts into a full cache whose pool is full too:
// every insert moves one entry out of the pool and evicts one.
func BenchmarkSetHighPri(b *testing.B) {
	c := newWithPool(1024*slot, 1, 0.5)
	v := make([]byte, prioSize)
	for off := uint64(0); off < 2048; off++ {
		c.SetWithPriority(1, off, v, HighPriority)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.SetWithPriority(1, uint64(2048+i), v, HighPriority)
	}
}
