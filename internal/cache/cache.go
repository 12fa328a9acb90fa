// Package cache is the block cache: a sharded, LRU-like cache of immutable byte slices
// keyed by (table reader id, block offset) and bounded in bytes.
//
// Each entry is charged the bytes its value's allocation really holds (its
// capacity rounded up to the Go allocator's size class: a 4096-byte block
// with its 5-byte trailer sits in a 4864-byte object) plus EntryOverhead, so
// that the capacity bounds the memory the cache keeps alive. The key space is
// split over a power-of-two number of shards (at most 16, fewer for small
// capacities so that each shard can hold a few blocks) by a hash of the key;
// each shard has its own mutex, map and LRU list and gets capacity/shards
// bytes. A value whose charge exceeds its shard's capacity is not cached.
//
// A nil *Cache is a valid cache that never hits and counts nothing, so
// callers need no nil checks.
//
// # Why not reference counting
//
// RocksDB and Pebble hand out handles that pin an entry until released,
// because their block memory is manually managed and may be reused once
// evicted. Here values are ordinary immutable Go slices: evicting an entry
// only drops the cache's reference, and the garbage collector keeps the
// block alive for as long as any reader still uses it. There is therefore no
// handle, no Release, and no way to leak a pin; the cost is that memory held
// by readers after eviction is not counted against the capacity. Callers must
// never modify a slice passed to Set or returned by Get.
//
// # Eviction: LRU with a second chance
//
// Each shard keeps an LRU list, but a hit only sets the entry's reference
// bit instead of relinking it: moving a node to the front writes three
// other entries' links, and those cache misses cost 10% of a fully cached
// random read. Eviction walks from the LRU end; a referenced entry has its
// bit cleared and moves to the front (a second chance), an unreferenced one
// goes; the entry being inserted is never the one evicted. The result
// approximates LRU the way CLOCK does;
// hits still take the shard mutex for the map lookup.
package cache

import (
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

// Charge returns what caching value costs against the capacity: the
// allocation behind it (AllocSize of its capacity) plus EntryOverhead.
// A value that is a slice of a larger allocation is charged only for the
// part from its start.
func Charge(value []byte) int64 {
	return int64(AllocSize(cap(value))) + EntryOverhead
}

const (
	maxShards        = 16
	minShardCapacity = 512 << 10 // below this per shard, use fewer shards
)

// Stats is a snapshot of cache counters. Hits and Misses count Get calls.
// Inserts counts Set calls that stored a value (including replacements).
// Evictions counts entries dropped to make room or after SetCapacity shrank
// the cache; entries dropped by EvictFile or replaced by Set are not counted.
// Used is the sum of the charges of the cached entries.
type Stats struct {
	Hits, Misses, Inserts, Evictions uint64
	Used, Capacity                   int64
}

// Cache is a sharded, byte-bounded LRU block cache. It is safe for
// concurrent use. The zero value is not usable; call New.
type Cache struct {
	shards   []shard
	mask     uint64 // len(shards) - 1
	nextID   atomic.Uint64
	capacity atomic.Int64 // total capacity as last set
}

type key struct {
	id, offset uint64
}

// entry is one cached block, linked into its shard's LRU list by index
// into the shard's entries slice.
type entry struct {
	key        key
	value      []byte
	charge     int64
	prev, next int32
	// referenced is set by Get: the entry gets a second chance when it
	// reaches the LRU end (see evictLocked).
	referenced bool
}

// sentinel is the index of a shard's list head in its entries slice.
const sentinel = 0

// shard is one independently locked part of the cache.
//
// Entries live in one slice and link to each other by index, and the map
// holds indexes: a cache miss allocates no entry object, and neither the
// map nor the links hold pointers for the garbage collector to scan (only
// the values in the slice do). Freed slots are reused through a free list
// linked by next.
//
// Invariants (with mu held): entries[sentinel] is the list head; every
// index in table is linked exactly once into the circular list through
// entries[sentinel] (its next is the most recently used, its prev the
// least) and is the slot of the entry with that key; the other slots are
// on the free list, zeroed but for next; used is the sum of the listed
// entries' charges; after any Set or setCapacity returns, used ≤ capacity.
type shard struct {
	mu struct {
		sync.Mutex
		capacity  int64
		used      int64
		table     map[key]int32
		entries   []entry
		free      int32 // first free slot, or sentinel when none
		inserts   uint64
		evictions uint64
	}
	hits, misses atomic.Uint64
	_            [64]byte // keep neighbouring shards' hot fields apart
}

// New returns a cache holding at most capacityBytes bytes of charges. A
// capacity ≤ 0 gives a cache that stores nothing (but still counts misses).
func New(capacityBytes int64) *Cache {
	n := maxShards
	for n > 1 && capacityBytes/int64(n) < minShardCapacity {
		n /= 2
	}
	return newWithShards(capacityBytes, n)
}

// newWithShards returns a cache with n shards; n must be a power of two.
func newWithShards(capacityBytes int64, n int) *Cache {
	c := &Cache{shards: make([]shard, n), mask: uint64(n - 1)}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.table = make(map[key]int32)
		s.mu.entries = make([]entry, 1) // the sentinel, linked to itself
	}
	c.SetCapacity(capacityBytes)
	return c
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

// Get returns the block cached for (id, offset). The slice must not be
// modified. Get does not allocate.
func (c *Cache) Get(id, offset uint64) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	s := c.shard(id, offset)
	s.mu.Lock()
	i, ok := s.mu.table[key{id, offset}]
	if !ok {
		s.mu.Unlock()
		s.misses.Add(1)
		return nil, false
	}
	// Mark, don't move: relinking touches three other entries' cache
	// lines on every hit, which cost 10% of a cached random read.
	e := &s.mu.entries[i]
	e.referenced = true
	v := e.value
	s.mu.Unlock()
	s.hits.Add(1)
	return v, true
}

// Set caches value for (id, offset), replacing any previous value, and
// evicts least recently used entries of the shard to stay within capacity.
// The cache keeps value; the caller must not modify it afterwards. A value
// whose charge exceeds the shard capacity is not cached (and any previous
// value for the key is dropped).
func (c *Cache) Set(id, offset uint64, value []byte) {
	if c == nil {
		return
	}
	k := key{id, offset}
	charge := Charge(value)
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
	if ok {
		e := &s.mu.entries[i]
		s.mu.used += charge - e.charge
		e.value, e.charge = value, charge
		s.moveToFrontLocked(i)
	} else {
		i = s.insertLocked(k, value, charge)
	}
	s.mu.inserts++
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
	ok := s.mu.used+int64(AllocSize(n))+EntryOverhead <= s.mu.capacity
	s.mu.Unlock()
	return ok
}

// SetIfRoom caches value for (id, offset) like Set, but only when that
// evicts nothing: the shard's free capacity covers the value's charge and
// no value is cached for the key yet. It reports whether value was stored.
// Scans use it, so that blocks read in passing fill an unused cache but
// never push out the blocks that point reads keep there.
func (c *Cache) SetIfRoom(id, offset uint64, value []byte) bool {
	if c == nil {
		return false
	}
	k := key{id, offset}
	charge := Charge(value)
	s := c.shard(id, offset)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.used+charge > s.mu.capacity {
		return false
	}
	if _, ok := s.mu.table[k]; ok {
		return false
	}
	s.insertLocked(k, value, charge)
	s.mu.inserts++
	return true
}

// EvictFile drops every cached block of reader id. It scans every entry of
// every shard, O(entries in the cache), holding each shard's lock in turn
// (BenchmarkEvictFile: about 2.5 ms on a full 1 GiB cache), so table
// readers do not call it on Close: ids are never reused, and a closed
// reader's blocks age out through the LRU like any cold block.
func (c *Cache) EvictFile(id uint64) {
	if c == nil {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, i := range s.mu.table {
			if k.id == id {
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
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.mu.capacity = per
		s.evictLocked(sentinel)
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
	return int64(AllocSize(n))+EntryOverhead <= c.capacity.Load()/int64(len(c.shards))
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
		st.Evictions += s.mu.evictions
		st.Used += s.mu.used
		s.mu.Unlock()
	}
	return st
}

// evictLocked drops least recently used entries until used ≤ capacity,
// never the entry at index keep (sentinel: none). s.mu must be held.
func (s *shard) evictLocked(keep int32) {
	es := s.mu.entries
	for s.mu.used > s.mu.capacity {
		lru := es[sentinel].prev
		if lru == sentinel {
			break // empty; cannot happen while used > 0
		}
		if lru == keep {
			if es[lru].prev == sentinel {
				break // the only entry; Set never admits one over capacity
			}
			s.moveToFrontLocked(lru) // an insert never evicts itself
			continue
		}
		if es[lru].referenced {
			// Used since it was last moved: a second chance. Each entry
			// is moved at most once per pass, so the loop ends.
			es[lru].referenced = false
			s.moveToFrontLocked(lru)
			continue
		}
		s.removeLocked(lru)
		s.mu.evictions++
	}
}

// insertLocked stores a new entry for k, which must not be cached, as most
// recently used and returns its index. s.mu must be held.
func (s *shard) insertLocked(k key, value []byte, charge int64) int32 {
	i := s.mu.free
	if i != sentinel {
		s.mu.free = s.mu.entries[i].next
	} else {
		i = int32(len(s.mu.entries))
		s.mu.entries = append(s.mu.entries, entry{})
	}
	s.mu.entries[i] = entry{key: k, value: value, charge: charge}
	s.mu.table[k] = i
	s.mu.used += charge
	s.pushFrontLocked(i)
	return i
}

// removeLocked unlinks entry i, forgets it and frees its slot. s.mu must
// be held.
func (s *shard) removeLocked(i int32) {
	es := s.mu.entries
	e := &es[i]
	es[e.prev].next = e.next
	es[e.next].prev = e.prev
	delete(s.mu.table, e.key)
	s.mu.used -= e.charge
	*e = entry{next: s.mu.free} // drop the value reference early
	s.mu.free = i
}

// pushFrontLocked links entry i as most recently used. s.mu must be held.
func (s *shard) pushFrontLocked(i int32) {
	es := s.mu.entries
	head := &es[sentinel]
	es[i].prev = sentinel
	es[i].next = head.next
	es[head.next].prev = i
	head.next = i
}

// moveToFrontLocked marks entry i most recently used. s.mu must be held.
func (s *shard) moveToFrontLocked(i int32) {
	es := s.mu.entries
	if es[sentinel].next == i {
		return
	}
	e := &es[i]
	es[e.prev].next = e.next
	es[e.next].prev = e.prev
	s.pushFrontLocked(i)
}
