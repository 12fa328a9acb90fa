package cache

import (
	"sync/atomic"

	"github.com/stratadb/strata/internal/invariants"
)

// lookupHook, in invariants builds, runs between finding a value and
// taking its reference (tests: an eviction in that window).
var lookupHook func()

// index is a shard's lock-free lookup table: open addressing with linear
// probing over atomic pointers to values, written only under the shard's
// mutex and read by Get without it, so that a hit takes no lock that a
// preempted holder could keep (readers of a shard would queue behind it).
//
// A reader that finds a value takes a reference only if the count is not
// zero (tryRef): a count that reached zero never rises again, since the
// value is being freed. The value headers are Go memory, so a reader may
// look at a header (its key, its count) that was just unlinked or freed;
// it never reads a value's bytes without a reference. A reader may also
// find a value that was evicted an instant ago and still be right: a key's
// block never changes. Deleted slots hold the tombstone (probes continue
// past it); the table is rebuilt, and the new one published, when live
// and deleted slots fill half of it, so a probe always meets an empty
// slot. A reader on a table that was replaced finishes on it: it is never
// written again.
type index struct {
	slots []atomic.Pointer[value]
	mask  uint64
	// live and dead count the slots holding values and tombstones
	// (under the shard's mutex).
	live, dead int
}

// tombstone marks a deleted slot.
var tombstone = &value{}

const minIndexSlots = 16

func newIndex(n int) *index {
	size := minIndexSlots
	for size < 4*n {
		size *= 2
	}
	return &index{slots: make([]atomic.Pointer[value], size), mask: uint64(size - 1)}
}

// indexHash mixes a key for the index; the shard is chosen by the low bits
// of another mix, so this uses the high ones.
func indexHash(k key) uint64 {
	h := k.id*0xc2b2ae3d27d4eb4f ^ k.offset*0x9e3779b97f4a7c15
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 32
	return h
}

// lookup returns the value for k with a reference taken, or nil.
func (ix *index) lookup(k key) *value {
	for i := indexHash(k) & ix.mask; ; i = (i + 1) & ix.mask {
		v := ix.slots[i].Load()
		if v == nil {
			return nil
		}
		if v != tombstone && v.key == k {
			if invariants.Enabled && lookupHook != nil {
				lookupHook()
			}
			if v.tryRef() {
				return v
			}
			return nil
		}
	}
}

// indexPutLocked links v under its key, replacing the value linked under
// it if any. s.mu must be held.
func (s *shard) indexPutLocked(v *value) {
	ix := s.idx.Load()
	if 2*(ix.live+ix.dead+1) > len(ix.slots) {
		ix = s.rebuildIndexLocked(ix.live + 1)
	}
	var free *atomic.Pointer[value]
	for i := indexHash(v.key) & ix.mask; ; i = (i + 1) & ix.mask {
		p := &ix.slots[i]
		old := p.Load()
		switch {
		case old == nil:
			if free != nil {
				free.Store(v)
				ix.dead--
			} else {
				p.Store(v)
			}
			ix.live++
			return
		case old == tombstone:
			if free == nil {
				free = p
			}
		case old.key == v.key:
			p.Store(v)
			return
		}
	}
}

// indexDeleteLocked unlinks the value linked under k. s.mu must be held.
func (s *shard) indexDeleteLocked(k key) {
	ix := s.idx.Load()
	for i := indexHash(k) & ix.mask; ; i = (i + 1) & ix.mask {
		p := &ix.slots[i]
		old := p.Load()
		if old == nil {
			return
		}
		if old != tombstone && old.key == k {
			p.Store(tombstone)
			ix.live--
			ix.dead++
			return
		}
	}
}

// rebuildIndexLocked publishes a new index, sized for n live values,
// holding the current one's values. s.mu must be held.
func (s *shard) rebuildIndexLocked(n int) *index {
	old := s.idx.Load()
	ix := newIndex(max(n, old.live))
	for i := range old.slots {
		v := old.slots[i].Load()
		if v == nil || v == tombstone {
			continue
		}
		for j := indexHash(v.key) & ix.mask; ; j = (j + 1) & ix.mask {
			if ix.slots[j].Load() == nil {
				ix.slots[j].Store(v)
				break
			}
		}
		ix.live++
	}
	s.idx.Store(ix)
	return ix
}

// tryRef takes a reference unless the count already reached zero.
func (v *value) tryRef() bool {
	for {
		n := v.refs.Load()
		if n <= 0 {
			return false
		}
		if v.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}
