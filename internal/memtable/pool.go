package memtable

import (
	"sync/atomic"

	"github.com/stratadb/strata/internal/invariants"
)

// ArenaPool keeps the arena of one retired memtable so that the next
// memtable of the same size reuses it instead of allocating: a write-heavy
// DB then cycles between two full-size arenas (the mutable memtable and the
// one being flushed) instead of leaving each flushed one to the garbage
// collector, which lets garbage pile up to the GC goal before it runs.
//
// The zero value is an empty pool. Its methods are safe for concurrent use.
//
// Lifetime: Put hands the arena over for good. The caller must know that
// nothing will ever read the memtable again (no reader, iterator, flush or
// slice returned by Get or an iterator still aliases it): the db package
// counts references on its memtables and calls Put when the last one goes.
type ArenaPool struct {
	slot atomic.Pointer[arena]
}

// Make is the package's Make, taking the pooled arena when its size is
// exactly the size Make would allocate; reused says whether it did.
func (p *ArenaPool) Make(arenaSize int) (m *MemTable, reused bool, err error) {
	if int64(arenaSize) <= MaxArenaSize {
		size := max(arenaSize, fixedOverhead)
		if a := p.slot.Load(); a != nil && len(a.buf) == size && p.slot.CompareAndSwap(a, nil) {
			a.reset()
			m, err = makeWith(a)
			return m, err == nil, err
		}
	}
	m, err = Make(arenaSize)
	return m, false, err
}

// Put retires m and keeps its arena for a later Make of the same size,
// replacing (and dropping) the arena kept before. m must not be used again,
// by anyone.
func (p *ArenaPool) Put(m *MemTable) {
	if m == nil || m.arena == nil {
		return
	}
	a := m.arena
	if invariants.Enabled {
		// Make a late reader see garbage (and the race detector see the
		// writes) rather than plausible stale entries.
		b := a.buf[:a.used()]
		for i := range b {
			b[i] = 0xdb
		}
	}
	p.slot.Store(a)
}

// Drop empties the pool.
func (p *ArenaPool) Drop() { p.slot.Store(nil) }

// PooledBytes returns the size of the arena the pool holds, 0 if none.
func (p *ArenaPool) PooledBytes() int {
	if a := p.slot.Load(); a != nil {
		return len(a.buf)
	}
	return 0
}

// reset zeroes the used part of a retired arena and empties it, so that it
// is indistinguishable from a new one: newNode documents that a node's
// links start at zero, and nothing of the old memtable may leak into the
// new one.
func (a *arena) reset() {
	clear(a.buf[:a.used()])
	a.n.Store(arenaReserved)
}
