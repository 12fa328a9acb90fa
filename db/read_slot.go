package db

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// readSlots let point reads of the default family (Get, MultiGet) take
// its read view and count their statistics without writing a cache line
// that other cores write too. Taking the view through cf.rsMu and
// readState.refs, and counting through d.stats, costs each Get some ten
// atomic read-modify-writes on lines every reading core (and the commit
// path, for the counters beside d.stats' write counters) shares; with
// several goroutines reading, those lines move between cores on every
// lookup.
//
// A readSlot is RocksDB's thread-local SuperVersion in Go: it holds one
// reference to a read view, and a Get owns the slot while it runs. Slots
// are handed out through a sync.Pool, whose Get and Put touch only the
// current P's cache, so a goroutine usually takes the slot its P used
// last and the slot's lines stay in that core's cache. A slot's view is
// nil (none cached, or scraped), slotInUse (a Get holds it), or a view
// the slot references:
//
//   - A Get swaps slotInUse in. What it swapped out is its view if it is
//     the family's current one; otherwise it drops that (stale) reference
//     and takes one the slow way (loadReadState). Comparing with the
//     current view after the swap is what keeps readState's invariant:
//     the view was current at a moment before the sequence number is
//     loaded, as if loaded then.
//   - When done, the Get swaps its view back in with a compare-and-swap
//     from slotInUse; if that fails, a publisher scraped the slot
//     meanwhile and the Get drops its reference itself.
//   - publishReadState scrapes every slot after installing a new view:
//     it swaps nil in and drops the references it took out. So no slot
//     pins a replaced view (its memtables, its version's files) past the
//     publish that replaced it, as RocksDB scrapes its thread-locals.
//
// sync.Pool drops pooled objects at garbage collection, so the pool holds
// handles, not slots: every slot is also in all (for scrapes and sums),
// and a cleanup on a collected handle drops its slot's reference and
// returns the slot to free for the next handle. The set of slots is
// bounded by the handles alive at once, about two per P.
type readSlots struct {
	pool sync.Pool
	mu   sync.Mutex
	all  []*readSlot
	free []*readSlot
}

// slotInUse marks a slot whose view a Get holds.
var slotInUse = new(readState)

// Indexes of readSlot.counts: the read path's statistics, summed with
// d.stats' own counters when read.
const (
	slotFilterChecks = iota
	slotFilterUseful
	slotTableCacheHits
	numSlotCounts
)

type readSlot struct {
	view atomic.Pointer[readState]
	// counts are written only by the slot's owner (Load+Store, no
	// read-modify-write) and read by anyone.
	counts [numSlotCounts]atomic.Uint64
	_      [64]byte // keep slots allocated together off each other's lines
}

// add counts n at counter i; only the slot's owner calls it.
func (s *readSlot) add(i int, n uint64) { s.counts[i].Store(s.counts[i].Load() + n) }

type readSlotHandle struct{ s *readSlot }

func (rs *readSlots) init() {
	rs.pool.New = func() any {
		rs.mu.Lock()
		var s *readSlot
		if n := len(rs.free); n > 0 {
			s, rs.free = rs.free[n-1], rs.free[:n-1]
		} else {
			s = new(readSlot)
			rs.all = append(rs.all, s)
		}
		rs.mu.Unlock()
		h := &readSlotHandle{s: s}
		runtime.AddCleanup(h, rs.retire, s)
		return h
	}
}

// retire takes back the slot of a collected handle.
func (rs *readSlots) retire(s *readSlot) {
	if v := s.view.Swap(nil); v != nil && v != slotInUse {
		v.unref()
	}
	rs.mu.Lock()
	rs.free = append(rs.free, s)
	rs.mu.Unlock()
}

// scrape drops every slot's cached view; publishReadState calls it after
// installing a new view of the default family.
func (rs *readSlots) scrape() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, s := range rs.all {
		if v := s.view.Swap(nil); v != nil && v != slotInUse {
			v.unref()
		}
	}
}

// sum returns the total of counter i over every slot.
func (rs *readSlots) sum(i int) uint64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var n uint64
	for _, s := range rs.all {
		n += s.counts[i].Load()
	}
	return n
}

// acquire returns a slot and the family's current read view, referenced
// through the slot; release both with release. cf is the default family.
func (rs *readSlots) acquire(cf *ColumnFamily) (*readSlotHandle, *readState) {
	h := rs.pool.Get().(*readSlotHandle)
	v := h.s.view.Swap(slotInUse)
	if v != cf.readState.Load() {
		if v != nil {
			v.unref() // stale: the slot's reference is ours to drop
		}
		v = cf.loadReadState()
	}
	return h, v
}

// release gives the view back to the slot and the slot back to the pool.
func (rs *readSlots) release(h *readSlotHandle, v *readState) {
	if !h.s.view.CompareAndSwap(slotInUse, v) {
		v.unref() // scraped while held
	}
	rs.pool.Put(h)
}

// filterChecks, filterUseful and tableCacheHits are the read counters:
// d.stats' (iterators count there) plus every slot's (Gets count there).
func (d *DB) filterChecks() uint64 {
	return d.stats.filterChecks.Load() + d.slots.sum(slotFilterChecks)
}

func (d *DB) filterUseful() uint64 {
	return d.stats.filterUseful.Load() + d.slots.sum(slotFilterUseful)
}

func (d *DB) tableCacheHits() uint64 {
	return d.stats.tableCacheHits.Load() + d.slots.sum(slotTableCacheHits)
}
