// Package cache is the block cache: a sharded, LRU-like cache of immutable
// blocks keyed by (table reader id, block offset) and bounded in bytes.
//
// Each entry is charged the bytes its value's memory really takes (the
// slab slot of its size class, or with heap memory the Go allocator's
// size class: see memory.go) plus EntryOverhead, so that the capacity
// bounds the memory the cache keeps. The key space is split over a
// power-of-two number of shards (at most 16, fewer for small capacities so
// that each shard can hold a few blocks) by a hash of the key; each shard
// has its own mutex, map and LRU list and gets capacity/shards bytes. A
// value whose charge exceeds its shard's capacity is not cached.
//
// A nil *Cache is a valid cache that never hits and counts nothing, so
// callers need no nil checks.
//
// # Handles and reference counts
//
// Values live outside the Go heap where the build can map memory (see
// memory.go), so they are freed by hand, and readers hold references, as
// in RocksDB's and Pebble's caches. Get returns a Handle after an atomic
// increment of the value's count; the cache holds one reference per
// entry. Eviction, replacement, EvictFile, EvictAll and SetCapacity drop
// the cache's reference; the memory is freed by whoever drops the last
// one, so a block a reader holds stays valid, and is counted in
// Stats.Pinned (not in Used) until released. Inserts never wait for a
// release. A block missing from the cache is read into memory from Alloc
// and then cached with Insert, so it is never copied. Every Handle must be
// released exactly once, after the last use of its bytes; the invariants
// build checks that (see Handle).
//
// # Eviction: LRU with a second chance
//
// Each shard keeps an LRU list, but a hit only sets the entry's reference
// bit instead of relinking it: moving a node to the front writes three
// other entries' links, and those cache misses cost 10% of a fully cached
// random read. Eviction walks from the LRU end; a referenced entry has its
// bit cleared and moves to the front (a second chance), an unreferenced one
// goes; the entry being inserted is never the one evicted. The result
// approximates LRU the way CLOCK does. The bit lives in the value and is
// written only when clear.
//
// # Hits take no lock
//
// Get looks the key up in the shard's index (see index.go), a table of
// atomic pointers written under the shard mutex and read without it, and
// takes its reference with a compare-and-swap that fails on a count
// already at zero: a hit never waits for the mutex, so a goroutine
// preempted while holding it (an insert, an eviction) cannot stall the
// shard's readers. The map and the LRU lists stay under the mutex.
//
// # Priorities: the high-priority pool
//
// An entry is inserted with a Priority. As in RocksDB's LRU cache with
// high_pri_pool_ratio, each shard reserves a share of its capacity, the
// high-priority pool (ratio × shard capacity, set by NewWithHighPriPool),
// for high-priority entries: the table reader's index and filter blocks
// and partitions under cache_index_and_filter_blocks_with_high_priority.
// Each shard keeps two lists: the pool's, and the low list holding
// low-priority entries and the high-priority entries the pool had no room
// for. A high-priority insert goes to the front of the pool; while the
// pool's charges exceed its bound, its least recently used entry (with the
// same second chance as eviction) moves to the front of the low list,
// where it ages like any other entry. Eviction takes the low list's least
// recently used entry first, so data blocks never evict the pool's entries
// while the low list has any other: only the entries the pool overflowed
// compete with data blocks, and the pool itself gives way only to newer
// high-priority entries. A high-priority entry that was moved out of the
// pool and reaches the low list's end with its reference bit set goes back
// to the front of the pool, as a hit in RocksDB moves it back into the
// pool. Every move is O(1) and each clears a reference bit or follows an
// insert, so eviction stays O(1) amortized. The pool is a bound, not a
// reservation: without high-priority entries the low list may use the
// whole capacity. With ratio 0 (New) the pool holds nothing and the cache
// is the plain LRU-with-second-chance above.
package cache

import (
	"math"
	"sync"
	"sync/atomic"
)

// EntryOverhead is the fixed number of bytes charged per entry on top of
// the value's allocation (see Charge): an estimate of the entry struct, its list links and its map
// slot.
const EntryOverhead = 96

// sizeClasses are the Go allocator's small object sizes (runtime's
// sizeclasses.go, stable since Go 1.14; TestAllocSizeMatchesRuntime checks
// them against the running runtime). Larger objects take whole 8 KiB pages.
var sizeClasses = [...]int32{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160,
	176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576,
	640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688,
	3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472,
	9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760,
	24576, 27264, 28672, 32768}

const pageSize = 8192

// AllocSize returns the bytes the Go allocator sets aside for a byte slice
// allocation of n bytes: n rounded up to its size class, or to whole pages
// above the largest class.
func AllocSize(n int) int {
	if n <= 0 {
		return 0
	}
	if n > int(sizeClasses[len(sizeClasses)-1]) {
		return (n + pageSize - 1) &^ (pageSize - 1)
	}
	lo, hi := 0, len(sizeClasses)-1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(sizeClasses[m]) < n {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return int(sizeClasses[lo])
}

// Charge returns what caching (a copy of) value costs against the
// capacity: the memory its copy takes (a slab slot, or with heap memory the
// Go allocator's size class, see the package comment) plus EntryOverhead.
func Charge(value []byte) int64 { return chargeOf(len(value)) }

// chargeOf is Charge for a value of n bytes.
func chargeOf(n int) int64 { return int64(slotSize(n)) + EntryOverhead }

const (
	maxShards        = 16
	minShardCapacity = 512 << 10 // below this per shard, use fewer shards
)

// Stats is a snapshot of cache counters. Hits and Misses count Get calls.
// Inserts counts Set calls that stored a value (including replacements),
// HighPriInserts those of them with HighPriority.
// Evictions counts entries dropped to make room or after SetCapacity shrank
// the cache; entries dropped by EvictFile or replaced by Set are not counted.
// Used is the sum of the charges of the cached entries, HighPriUsed that of
// the entries in the high-priority pools, whose bound (the sum over the
// shards) is HighPriCapacity.
//
// Pinned is the sum of the charges of the blocks no longer cached (evicted,
// dropped by EvictFile or replaced) that a Handle still holds: memory the
// cache keeps beyond Used until those handles are released (RocksDB's
// block-cache-pinned-usage counts the cached ones too).
type Stats struct {
	Hits, Misses, Inserts, Evictions uint64
	HighPriInserts                   uint64
	Used, Capacity                   int64
	HighPriUsed, HighPriCapacity     int64
	Pinned                           int64
	// Mapped is the memory mapped for values outside the Go heap (slabs,
	// including a partly used slab's free slots and the one spare per
	// size class, whose pages are dropped): 0 in builds without mappings.
	Mapped int64
}

// Priority is the priority an entry is cached with (see the package
// comment).
type Priority uint8

const (
	// LowPriority entries (data blocks) are evicted first.
	LowPriority Priority = iota
	// HighPriority entries (index and filter blocks) are kept in the
	// high-priority pool while it has room.
	HighPriority
)

// Cache is a sharded, byte-bounded LRU block cache. It is safe for
// concurrent use. The zero value is not usable; call New.
type Cache struct {
	shards   []shard
	mask     uint64 // len(shards) - 1
	nextID   atomic.Uint64
	capacity atomic.Int64 // total capacity as last set
	// highRatio is the share of each shard's capacity its high-priority
	// pool may hold, in [0, 1]; fixed at construction.
	highRatio float64
	// mem allocates the values' memory.
	mem allocator
	// pinned is Stats.Pinned.
	pinned atomic.Int64
	// outstanding counts the handles given out and not released
	// (invariants builds only).
	outstanding atomic.Int64
}

type key struct {
	id, offset uint64
}

// entry is one cached block, linked into one of its shard's two LRU lists
// by index into the shard's entries slice.
type entry struct {
	key        key
	val        *value
	charge     int64
	prev, next int32
	// high: inserted with HighPriority. inHigh: linked into the
	// high-priority pool's list (else into the low list).
	high, inHigh bool
}

const (
	// sentinel is the index of the head of a shard's low list in its
	// entries slice, and ends the free list.
	sentinel = 0
	// highSentinel is the index of the head of the high-priority pool's
	// list.
	highSentinel = 1
	// firstSlot is the first index that holds an entry.
	firstSlot = 2
	// noKeep tells evictLocked that no entry is exempt.
	noKeep = -1
)

// shard is one independently locked part of the cache.
//
// Entries live in one slice and link to each other by index, and the map
// holds indexes: a cache miss allocates no entry object, and neither the
// map nor the links hold pointers for the garbage collector to scan (only
// the values in the slice do). Freed slots are reused through a free list
// linked by next.
//
// Invariants (with mu held): entries[sentinel] and entries[highSentinel]
// are the heads of the low and the high-priority lists; every index in
// table is linked exactly once into one of the two circular lists (a
// head's next is the most recently used, its prev the least), into the
// high one exactly when its inHigh is set, which only a high entry has,
// and is the slot of the entry with that key; the other slots (from
// firstSlot) are on the free list, zeroed but for next; used is the sum of
// the listed entries' charges and highUsed that of the high list's; after
// any Set or SetCapacity returns, used ≤ capacity and highUsed ≤
// highCapacity.
type shard struct {
	mu struct {
		sync.Mutex
		capacity     int64
		used         int64
		highCapacity int64
		highUsed     int64
		table        map[key]int32
		entries      []entry
		free         int32 // first free slot, or sentinel when none
		inserts      uint64
		highInserts  uint64
		evictions    uint64
	}
	c *Cache
	// idx is the lock-free lookup table Get reads (see index).
	idx          atomic.Pointer[index]
	hits, misses atomic.Uint64
	_            [64]byte // keep neighbouring shards' hot fields apart
}

// New returns a cache holding at most capacityBytes bytes of charges. A
// capacity ≤ 0 gives a cache that stores nothing (but still counts misses).
// It has no high-priority pool: HighPriority entries are cached as
// LowPriority ones.
func New(capacityBytes int64) *Cache {
	return NewWithHighPriPool(capacityBytes, 0)
}

// NewWithHighPriPool returns a cache like New whose shards each keep up to
// highPriPoolRatio of their capacity for HighPriority entries (RocksDB's
// LRUCacheOptions high_pri_pool_ratio; see the package comment). A ratio
// outside [0, 1] (or NaN) is taken as the nearest bound (NaN as 0).
func NewWithHighPriPool(capacityBytes int64, highPriPoolRatio float64) *Cache {
	n := maxShards
	for n > 1 && capacityBytes/int64(n) < minShardCapacity {
		n /= 2
	}
	return newWithPool(capacityBytes, n, highPriPoolRatio)
}

// newWithShards returns a cache with n shards and no high-priority pool; n
// must be a power of two.
func newWithShards(capacityBytes int64, n int) *Cache {
	return newWithPool(capacityBytes, n, 0)
}

// newWithPool returns a cache with n shards, n a power of two, and a
// high-priority pool of highPriPoolRatio (see NewWithHighPriPool).
func newWithPool(capacityBytes int64, n int, highPriPoolRatio float64) *Cache {
	if !(highPriPoolRatio > 0) { // also NaN
		highPriPoolRatio = 0
	}
	c := &Cache{shards: make([]shard, n), mask: uint64(n - 1), highRatio: math.Min(highPriPoolRatio, 1)}
	for i := range c.shards {
		s := &c.shards[i]
		s.c = c
		s.idx.Store(newIndex(0))
		s.mu.table = make(map[key]int32)
		// The two list heads, each linked to itself.
		s.mu.entries = make([]entry, firstSlot)
		s.mu.entries[highSentinel] = entry{prev: highSentinel, next: highSentinel}
	}
	c.SetCapacity(capacityBytes)
	return c
}

// HighPriPoolRatio returns the share of the capacity the high-priority
// pool may hold.
func (c *Cache) HighPriPoolRatio() float64 {
	if c == nil {
		return 0
	}
	return c.highRatio
}

// NewID returns an id unique within this cache, for one table reader to
// key its blocks. A nil cache returns 0.
func (c *Cache) NewID() uint64 {
	if c == nil {
		return 0
	}
	return c.nextID.Add(1)
}

func (c *Cache) shard(id, offset uint64) *shard {
	// Offsets are multiples of block sizes and ids are small counters: mix
	// both (murmur3 finaliser) before taking the low bits.
	h := id*0x9e3779b97f4a7c15 ^ offset
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return &c.shards[h&c.mask]
}

// Get returns a handle on the block cached for (id, offset), to be
// released after the last use of its bytes, which must not be modified.
// Get does not allocate (but in invariants builds).
func (c *Cache) Get(id, offset uint64) (Handle, bool) {
	if c == nil {
		return Handle{}, false
	}
	s := c.shard(id, offset)
	v := s.idx.Load().lookup(key{id, offset})
	if v == nil {
		s.misses.Add(1)
		return Handle{}, false
	}
	// Mark, don't move: relinking touches three other entries' cache
	// lines on every hit, which cost 10% of a cached random read. The bit
	// is written only when clear, so hits on a hot block read its line.
	if !v.referenced.Load() {
		v.referenced.Store(true)
	}
	s.hits.Add(1)
	return v.handle(), true
}

// Set caches a copy of value for (id, offset) with LowPriority:
// SetWithPriority.
func (c *Cache) Set(id, offset uint64, value []byte) {
	c.SetWithPriority(id, offset, value, LowPriority)
}

// SetWithPriority caches a copy of value for (id, offset) with priority
// pri: Insert of an Alloc holding it.
func (c *Cache) SetWithPriority(id, offset uint64, value []byte, pri Priority) {
	if c == nil {
		return
	}
	h := c.Alloc(len(value))
	copy(h.Bytes(), value)
	c.Insert(id, offset, h, pri)
	h.Release()
}

// Insert caches the block of h, a handle from this cache's Alloc, for
// (id, offset) with priority pri, replacing any previous value (and its
// priority), and evicts least recently used entries of the shard to stay
// within capacity (see the package comment for the order). The cache takes
// a reference of its own: the caller still releases h, and must not modify
// the bytes afterwards. A value whose charge exceeds the shard capacity is
// not cached (and any previous value for the key is dropped).
func (c *Cache) Insert(id, offset uint64, h Handle, pri Priority) {
	if c == nil {
		return
	}
	k := key{id, offset}
	v := h.v
	charge := v.charge
	high := pri == HighPriority
	s := c.shard(id, offset)
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.mu.table[k]
	if charge > s.mu.capacity {
		if ok {
			s.removeLocked(i)
		}
		return
	}
	v.ref()
	if ok {
		s.unlinkLocked(i)
		e := &s.mu.entries[i]
		s.mu.used += charge - e.charge
		old := e.val
		e.val, e.charge, e.high = v, charge, high
		v.key = k
		s.indexPutLocked(v)
		c.drop(old)
		s.linkLocked(i)
	} else {
		i = s.insertLocked(k, v, charge, high)
	}
	s.mu.inserts++
	if high {
		s.mu.highInserts++
		s.balanceHighLocked()
	}
	s.evictLocked(i)
}

// HasRoom reports whether a value of capacity n could be cached for
// (id, offset) by SetIfRoom now, without evicting anything. It is a hint
// for callers that would have to copy a value before caching it: another
// goroutine may fill the shard before SetIfRoom runs.
func (c *Cache) HasRoom(id, offset uint64, n int) bool {
	if c == nil {
		return false
	}
	s := c.shard(id, offset)
	s.mu.Lock()
	ok := s.mu.used+chargeOf(n) <= s.mu.capacity
	s.mu.Unlock()
	return ok
}

// SetIfRoom caches a copy of value for (id, offset) like InsertIfRoom.
func (c *Cache) SetIfRoom(id, offset uint64, value []byte) bool {
	if c == nil {
		return false
	}
	h := c.Alloc(len(value))
	copy(h.Bytes(), value)
	ok := c.InsertIfRoom(id, offset, h)
	h.Release()
	return ok
}

// InsertIfRoom caches the block of h for (id, offset) like Insert, but
// only when that evicts nothing: the shard's free capacity covers the
// value's charge and no value is cached for the key yet. It reports
// whether the block was stored. Scans use it, so that blocks read in
// passing fill an unused cache but never push out the blocks that point
// reads keep there. The caller still releases h.
func (c *Cache) InsertIfRoom(id, offset uint64, h Handle) bool {
	if c == nil {
		return false
	}
	k := key{id, offset}
	v := h.v
	charge := v.charge
	s := c.shard(id, offset)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.used+charge > s.mu.capacity {
		return false
	}
	if _, ok := s.mu.table[k]; ok {
		return false
	}
	v.ref()
	s.insertLocked(k, v, charge, false)
	s.mu.inserts++
	return true
}

// EvictFile drops every cached block of reader id. It scans every entry of
// every shard, O(entries in the cache), holding each shard's lock in turn
// (BenchmarkEvictFile: about 2.5 ms on a full 1 GiB cache), so table
// readers do not call it on Close: ids are never reused, and a closed
// reader's blocks age out through the LRU like any cold block.
func (c *Cache) EvictFile(id uint64) { c.evictWhere(func(k key) bool { return k.id == id }) }

// EvictAll drops every entry (not counted as evictions): the memory of
// each goes back now, or at the Release of the last handle still holding
// it. The capacity is unchanged; the cache stays usable.
func (c *Cache) EvictAll() { c.evictWhere(func(key) bool { return true }) }

// evictWhere drops every entry whose key drop accepts, a shard at a time
// under its lock.
func (c *Cache) evictWhere(drop func(key) bool) {
	if c == nil {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, i := range s.mu.table {
			if drop(k) {
				s.removeLocked(i) // deleting during range is allowed
			}
		}
		s.mu.Unlock()
	}
}

// SetCapacity changes the total capacity, evicting entries as needed. Each
// shard gets capacityBytes/shards bytes; a negative capacity counts as 0.
// The number of shards stays as New chose it.
func (c *Cache) SetCapacity(capacityBytes int64) {
	if c == nil {
		return
	}
	if capacityBytes < 0 {
		capacityBytes = 0
	}
	c.capacity.Store(capacityBytes)
	per := capacityBytes / int64(len(c.shards))
	highPer := int64(float64(per) * c.highRatio)
	if highPer > per { // float rounding
		highPer = per
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.mu.capacity = per
		s.mu.highCapacity = highPer
		s.balanceHighLocked()
		s.evictLocked(noKeep)
		s.mu.Unlock()
	}
}

// Fits reports whether a value of n bytes (its allocation, as Charge counts
// it) can be cached at the current capacity: a larger one is never kept.
// A nil cache holds nothing.
func (c *Cache) Fits(n int) bool {
	if c == nil {
		return false
	}
	return chargeOf(n) <= c.capacity.Load()/int64(len(c.shards))
}

// Stats returns the current counters. They are read shard by shard, so a
// snapshot taken under concurrent use is not atomic across shards.
func (c *Cache) Stats() Stats {
	if c == nil {
		return Stats{}
	}
	st := Stats{Capacity: c.capacity.Load()}
	for i := range c.shards {
		s := &c.shards[i]
		st.Hits += s.hits.Load()
		st.Misses += s.misses.Load()
		s.mu.Lock()
		st.Inserts += s.mu.inserts
		st.HighPriInserts += s.mu.highInserts
		st.Evictions += s.mu.evictions
		st.Used += s.mu.used
		st.HighPriUsed += s.mu.highUsed
		st.HighPriCapacity += s.mu.highCapacity
		s.mu.Unlock()
	}
	st.Pinned = c.pinned.Load()
	st.Mapped = c.mem.mapped.Load()
	return st
}

// evictLocked drops least recently used entries until used ≤ capacity,
// never the entry at index keep (noKeep: none): the low list's first, and
// the high-priority pool's only when the low list holds nothing else.
// s.mu must be held.
func (s *shard) evictLocked(keep int32) {
	es := s.mu.entries
	for s.mu.used > s.mu.capacity {
		v := s.victimLocked(keep)
		if v == noKeep {
			break // only keep is left; Set never admits one over capacity
		}
		e := &es[v]
		if e.val.referenced.Load() {
			// Used since it was last moved: a second chance. A
			// high-priority entry the pool had overflowed goes back into
			// the pool, as a hit moves it there in RocksDB. Each entry is
			// moved at most once per pass (its bit is cleared), so the
			// loop ends.
			e.val.referenced.Store(false)
			if e.high && !e.inHigh {
				s.unlinkLocked(v)
				s.linkLocked(v)
				s.balanceHighLocked()
			} else {
				s.moveToFrontLocked(v)
			}
			continue
		}
		s.removeLocked(v)
		s.mu.evictions++
	}
}

// victimLocked returns the least recently used entry other than keep: the
// low list's, or, when that holds no other, the high-priority pool's; or
// noKeep when there is none. s.mu must be held.
func (s *shard) victimLocked(keep int32) int32 {
	es := s.mu.entries
	for _, head := range [2]int32{sentinel, highSentinel} {
		v := es[head].prev
		if v == keep {
			v = es[v].prev
		}
		if v != head {
			return v
		}
	}
	return noKeep
}

// balanceHighLocked moves the high-priority pool's least recently used
// entries to the front of the low list until the pool is within its
// bound, giving referenced ones a second chance in the pool first. s.mu
// must be held.
func (s *shard) balanceHighLocked() {
	es := s.mu.entries
	for s.mu.highUsed > s.mu.highCapacity {
		v := es[highSentinel].prev
		if v == highSentinel {
			break // cannot happen: highUsed is the list's charges
		}
		if es[v].val.referenced.Load() {
			es[v].val.referenced.Store(false)
			s.moveToFrontLocked(v)
			continue
		}
		s.unlinkLocked(v)
		s.pushFrontLocked(v, sentinel)
	}
}

// insertLocked stores a new entry for k, which must not be cached, as most
// recently used (in the high-priority pool when high) and returns its
// index. s.mu must be held.
func (s *shard) insertLocked(k key, v *value, charge int64, high bool) int32 {
	i := s.mu.free
	if i != sentinel {
		s.mu.free = s.mu.entries[i].next
	} else {
		i = int32(len(s.mu.entries))
		s.mu.entries = append(s.mu.entries, entry{})
	}
	s.mu.entries[i] = entry{key: k, val: v, charge: charge, high: high}
	v.key = k
	s.indexPutLocked(v)
	s.mu.table[k] = i
	s.mu.used += charge
	s.linkLocked(i)
	return i
}

// removeLocked unlinks entry i, forgets it and frees its slot. s.mu must
// be held.
func (s *shard) removeLocked(i int32) {
	s.unlinkLocked(i)
	e := &s.mu.entries[i]
	delete(s.mu.table, e.key)
	s.indexDeleteLocked(e.key)
	s.mu.used -= e.charge
	v := e.val
	*e = entry{next: s.mu.free}
	s.mu.free = i
	s.c.drop(v)
}

// drop drops the cache's reference to v, which is no longer an entry: its
// memory is freed now if no handle holds it, else by the last Release,
// and until then counted as pinned.
func (c *Cache) drop(v *value) {
	// Count it pinned before letting go, so that the Release that frees
	// it (and subtracts) cannot come first; Get may still take a
	// reference until the count reaches zero (see index).
	v.evicted.Store(true)
	c.pinned.Add(v.charge)
	v.unref()
}

// Outstanding returns the handles given out and not yet released
// (invariants builds; 0 otherwise): a check for Close paths that every
// reader released what it held.
func (c *Cache) Outstanding() int64 {
	if c == nil {
		return 0
	}
	return c.outstanding.Load()
}

// linkLocked links the unlinked entry i as most recently used: at the
// front of the high-priority pool if it is a high-priority entry (the
// caller then calls balanceHighLocked), else of the low list. s.mu must be
// held.
func (s *shard) linkLocked(i int32) {
	if s.mu.entries[i].high {
		s.pushFrontLocked(i, highSentinel)
	} else {
		s.pushFrontLocked(i, sentinel)
	}
}

// unlinkLocked takes entry i out of its list. s.mu must be held.
func (s *shard) unlinkLocked(i int32) {
	es := s.mu.entries
	e := &es[i]
	es[e.prev].next = e.next
	es[e.next].prev = e.prev
	if e.inHigh {
		s.mu.highUsed -= e.charge
		e.inHigh = false
	}
}

// pushFrontLocked links the unlinked entry i as most recently used of the
// list headed by head (sentinel or highSentinel). s.mu must be held.
func (s *shard) pushFrontLocked(i, head int32) {
	es := s.mu.entries
	h := &es[head]
	es[i].prev = head
	es[i].next = h.next
	es[h.next].prev = i
	h.next = i
	if head == highSentinel {
		es[i].inHigh = true
		s.mu.highUsed += es[i].charge
	}
}

// moveToFrontLocked marks entry i most recently used of its list. s.mu
// must be held.
func (s *shard) moveToFrontLocked(i int32) {
	es := s.mu.entries
	head := int32(sentinel)
	if es[i].inHigh {
		head = highSentinel
	}
	if es[head].next == i {
		return
	}
	e := &es[i]
	es[e.prev].next = e.next
	es[e.next].prev = e.prev
	es[i].prev = head
	es[i].next = es[head].next
	es[es[head].next].prev = i
	es[head].next = i
}
