package memtable

import (
	"math"
	"sync"
	"sync/atomic"
)

// prefaultStep is the granule of the prefaulter's work: one transparent
// huge page, the unit in which the kernel zeroes a huge-page-backed arena.
const prefaultStep = 2 << 20

// prefaultAhead is how far past the allocation position the prefaulter
// keeps the arena's pages faulted in. Faulting one huge page in zeroes 2
// MiB; on a busy machine (or a VM whose host backs guest memory lazily) a
// fault took milliseconds, and a writer whose store made it waited that
// long. Several steps ahead, a prefaulter that waits for a CPU is still
// ahead of the writer.
const prefaultAhead = 4 * prefaultStep

// prefaultMinSize is the smallest arena given a prefaulter: below it the
// arena gets no huge pages (adviseHugePages) and its 4 KiB faults cost
// microseconds each, which no writer notices.
const prefaultMinSize = 2 * prefaultStep

// prefaulter faults a mapped arena's pages in ahead of its allocations, on
// a goroutine of its own, so that the writer's stores land on resident
// pages instead of taking the faults (with huge pages, each fault zeroes 2
// MiB while the writer holds the commit lock).
//
// The writer never waits for it: alloc compares its new end with kickAt
// (one atomic load) and, past it, wakes the prefaulter without blocking.
// When the prefaulter is behind, the writer's stores fault the pages in
// themselves, as without it. Populating a page that is resident, or that a
// writer is storing into, changes no byte (MADV_POPULATE_WRITE only
// simulates a write fault), so the two need no lock.
//
// The goroutine refers to the mapping, never to the arena, so that an
// arena nobody frees still becomes unreachable and its cleanup runs; that
// cleanup, like free and retire, stops the prefaulter (and waits for it)
// before the mapping is unmapped or its pages dropped: a populate after
// the unmap could fault in whatever is mapped there next, and one after
// the drop would make a parked arena resident again.
type prefaulter struct {
	buf []byte
	// kickAt is the allocation end from which the writer kicks; pos is
	// the end it saw when it did.
	kickAt atomic.Uint32
	pos    atomic.Uint32
	kick   chan struct{}
	done   chan struct{}
	// stopped makes the goroutine leave between steps.
	stopped  atomic.Bool
	stopOnce sync.Once
}

// newPrefaulter starts a prefaulter for buf, or returns nil when buf is too
// small to need one or the system cannot populate pages ahead.
func newPrefaulter(buf []byte) *prefaulter {
	if len(buf) < prefaultMinSize || !canPopulate {
		return nil
	}
	p := &prefaulter{buf: buf, kick: make(chan struct{}, 1), done: make(chan struct{})}
	// The first allocation past the sentinels kicks: an arena that is
	// never written populates nothing.
	p.kickAt.Store(fixedOverhead + 1)
	go p.run()
	return p
}

// maybeKick wakes the prefaulter when the allocation end passed kickAt.
// Any number of allocating goroutines may call it.
func (p *prefaulter) maybeKick(end uint32) {
	if end < p.kickAt.Load() {
		return
	}
	p.pos.Store(end)
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run populates the pages from the allocation position to prefaultAhead
// past it, a step at a time, for each kick.
func (p *prefaulter) run() {
	defer close(p.done)
	populated := 0 // the pages below are resident, or behind the writer
	for range p.kick {
		pos := int(p.pos.Load())
		populated = max(populated, pos&^(prefaultStep-1))
		target := min(len(p.buf), pos+prefaultAhead)
		for populated < target {
			if p.stopped.Load() {
				return
			}
			to := min(populated+prefaultStep, len(p.buf))
			if populate(p.buf[populated:to]) != nil {
				// Only advice: the writer faults its pages in
				// itself, as without a prefaulter.
				p.kickAt.Store(math.MaxUint32)
				return
			}
			populated = to
			// Kick again once the writer is half the distance
			// ahead from the populated end.
			next := uint32(math.MaxUint32)
			if populated < len(p.buf) {
				next = uint32(max(populated-prefaultAhead/2, pos+1))
			}
			p.kickAt.Store(next)
		}
	}
}

// stop makes the prefaulter leave and waits until it has. It is safe to
// call more than once, and on nil; no allocation may run meanwhile or
// after.
func (p *prefaulter) stop() {
	if p == nil {
		return
	}
	p.stopOnce.Do(func() {
		p.stopped.Store(true)
		p.kickAt.Store(math.MaxUint32)
		close(p.kick)
		<-p.done
	})
}
