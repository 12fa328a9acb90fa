package memtable

import (
	"github.com/stratadb/strata/internal/offheap"
	"sync"

	"github.com/stratadb/strata/internal/invariants"
)

// ArenaPool keeps the arena of one retired memtable so that the next
// memtable of the same size reuses it instead of allocating: a write-heavy
// DB then cycles between two full-size arenas (the mutable memtable and the
// one being flushed) instead of mapping and unmapping one per flush (or, for
// heap arenas, leaving each flushed one to the garbage collector, which lets
// garbage pile up to the GC goal before it runs).
//
// A pooled mapped arena holds no memory: its pages are handed back to the
// kernel (MADV_DONTNEED) when it enters the pool and come back, zeroed, as
// the next memtable writes them. An idle DB's spare arena costs address
// space only.
//
// The zero value is an empty pool. Its methods are safe for concurrent use.
//
// Lifetime: Put hands the memtable's arena over for good. The caller must
// know that nothing will ever read the memtable again (no reader, iterator,
// flush or slice returned by Get or an iterator still aliases it): the db
// package counts references on its memtables and calls Put when the last
// one goes. The pool frees every arena it drops (one replaced by a newer
// Put, the one held at Close, any Put after Close).
type ArenaPool struct {
	mu     sync.Mutex
	slot   *arena
	closed bool
	// ready is the arena Prepare readied for the next Make of its size
	// (readyReused: it was the pooled one); preparing is set while a
	// Prepare runs.
	ready       *arena
	readyReused bool
	preparing   bool
}

// Make is the package's Make, taking the pooled arena when its size is
// exactly the size Make would allocate; reused says whether it did. A new
// arena is a mapping outside the Go heap where the build supports it (see
// arena): the memtable must go back through Put, whose caller guarantees
// that nothing reads it any more.
func (p *ArenaPool) Make(arenaSize int) (m *MemTable, reused bool, err error) {
	if int64(arenaSize) <= MaxArenaSize {
		size := max(arenaSize, fixedOverhead)
		p.mu.Lock()
		if a := p.ready; a != nil && len(a.buf) == size {
			p.ready = nil
			reused = p.readyReused
			p.mu.Unlock()
			m, err = makeWith(a)
			return m, reused && err == nil, err
		}
		a := p.slot
		if a != nil && len(a.buf) == size {
			p.slot = nil
		} else {
			a = nil
		}
		p.mu.Unlock()
		if a != nil {
			a.reuse()
			m, err = makeWith(a)
			return m, err == nil, err
		}
	}
	if int64(arenaSize) > MaxArenaSize {
		m, err = Make(arenaSize) // its error
		return m, false, err
	}
	m, err = makeWith(newMappedArena(uint32(max(arenaSize, fixedOverhead))))
	return m, false, err
}

// Prepare readies an arena for a later Make of arenaSize, so that Make's
// caller does not take the faults of the arena's first pages: the pooled
// arena when it has that size, otherwise a new mapping, with its first
// huge page faulted in (and its prefaulter started). The first store into
// an arena faults in, and zeroes, a whole huge page; on a busy machine that
// took milliseconds, and the db makes its memtables under the commit lock,
// so it calls Prepare on a goroutine of its own after each rotation. One
// arena is kept ready: a Prepare replaces an earlier one of another size,
// and does nothing when one of the size is ready or another Prepare runs.
// Arenas too small for huge pages, or that are not mappings, are not
// prepared.
func (p *ArenaPool) Prepare(arenaSize int) {
	if int64(arenaSize) > MaxArenaSize || !offheap.Enabled || !canPopulate {
		return
	}
	size := max(arenaSize, fixedOverhead)
	if size < prefaultMinSize {
		return
	}
	p.mu.Lock()
	if p.closed || p.preparing || (p.ready != nil && len(p.ready.buf) == size) {
		p.mu.Unlock()
		return
	}
	p.preparing = true
	a, reused := p.slot, false
	if a != nil && len(a.buf) == size {
		p.slot, reused = nil, true
	} else {
		a = nil
	}
	p.mu.Unlock()
	if reused {
		a.reuse()
	} else {
		a = newMappedArena(uint32(size))
	}
	if a.mapped {
		_ = populate(a.buf[:min(len(a.buf), prefaultStep)]) // only advice
	}
	p.mu.Lock()
	p.preparing = false
	old := p.ready
	if p.closed {
		old, a = a, nil
	}
	p.ready, p.readyReused = a, reused
	p.mu.Unlock()
	if old != nil {
		old.free() // its prefaulter stops first
	}
}

// Put retires m and keeps its arena for a later Make of the same size,
// freeing the arena kept before. After Close, Put frees m's arena at once.
// m must not be used again, by anyone.
func (p *ArenaPool) Put(m *MemTable) {
	if m == nil || m.arena == nil {
		return
	}
	a := m.arena
	a.retire()
	p.mu.Lock()
	old := p.slot
	if p.closed {
		old, a = a, nil
	}
	p.slot = a
	p.mu.Unlock()
	if old != nil {
		old.free()
	}
}

// Drop frees the pooled arena and the prepared one, if any.
func (p *ArenaPool) Drop() {
	p.mu.Lock()
	a, r := p.slot, p.ready
	p.slot, p.ready = nil, nil
	p.mu.Unlock()
	if a != nil {
		a.free()
	}
	if r != nil {
		r.free()
	}
}

// Close frees the pooled arena; every later Put frees its arena at once.
// The db closes its pool at Close, after which late readers still release
// memtables.
func (p *ArenaPool) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.Drop()
}

// PooledBytes returns the size of the arenas the pool holds (the pooled
// one and the prepared one), 0 if none.
func (p *ArenaPool) PooledBytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	if p.slot != nil {
		n += len(p.slot.buf)
	}
	if p.ready != nil {
		n += len(p.ready.buf)
	}
	return n
}

// retire prepares the arena of a memtable nobody reads any more for the
// pool. A mapped arena's pages go back to the kernel (they read as zeros
// when touched again); a heap arena is poisoned under invariants so that a
// late reader sees garbage.
func (a *arena) retire() {
	if a.mapped {
		// The prefaulter stops first: a populate after the drop
		// would make the parked pages resident again.
		a.stopPrefault()
		offheap.Park(a.buf)
		return
	}
	if invariants.Enabled {
		poison(a.buf[:a.used()])
	}
}

// reuse empties a retired arena, so that it is indistinguishable from a
// new one: newNode documents that a node's links start at zero, and nothing
// of the old memtable may leak into the new one. A parked mapping is
// already zero.
func (a *arena) reuse() {
	if a.mapped {
		offheap.Unpark(a.buf)
		a.startPrefault()
	} else {
		clear(a.buf[:a.used()])
	}
	a.n.Store(arenaReserved)
}
