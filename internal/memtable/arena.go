package memtable

import (
	"github.com/stratadb/strata/internal/offheap"
	"math"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/stratadb/strata/internal/invariants"
)

// MaxArenaSize is the largest arena a memtable can have: nodes are addressed
// by uint32 offsets.
const MaxArenaSize = math.MaxUint32

// arenaAlign is the alignment of every allocation. Nodes hold uint64 link
// words that are accessed with sync/atomic, which needs 8-byte alignment
// (on 32-bit platforms too).
const arenaAlign = 8

// arenaReserved is the number of bytes at the start of the arena that are
// never handed out, so that offset 0 can mean "no node".
const arenaReserved = 8

// arena is a bump allocator over one []byte allocated up front. Everything
// the memtable stores (skiplist nodes, keys, values) lives in it and is
// referenced by uint32 offsets, so the buffer holds no Go pointers and the
// garbage collector never scans it.
//
// # Where the bytes live
//
// On Linux (but in race-detector builds) an arena that ArenaPool makes, of
// at least mmapMinSize bytes, is an anonymous private mapping outside the
// Go heap: the garbage collector's headroom (the heap may grow to twice the
// live heap before a collection) does not apply to it, pages the memtable
// never reaches are never resident, and free returns its memory to the
// kernel at once. Smaller arenas, those of New and Make, other systems and
// -race builds (whose detector only sees the Go heap) use make. The cost of
// a mapping is that it must be freed by hand, exactly once, after the last
// read: see free.
//
// Invariants:
//   - buf never grows; bytes below used() are immutable once their node is
//     published, except the link words of nodes and their back links,
//     which are only accessed atomically (load64/store64/cas64 and
//     load32/store32). buf is reused only through ArenaPool, after
//     every reader of its memtable is gone.
//   - Allocation is by the single writer (alloc) or by concurrent
//     inserters (allocConcurrent), never both at once; any goroutine may
//     call used and read published bytes. used() never exceeds len(buf):
//     an allocation that does not fit reserves nothing, so later ones
//     that do fit still succeed and those that do not fail cleanly.
//   - The base of buf is 8-byte aligned (page-aligned when mapped; backed
//     by a []uint64 otherwise) and every allocation starts at a multiple
//     of arenaAlign.
type arena struct {
	buf []byte
	n   atomic.Uint32 // bytes handed out, including arenaReserved
	// mapped: buf is an anonymous mapping that free unmaps.
	mapped bool
	// state is set by free; a second free is a bug (double unmap).
	state *arenaState
	// pf faults a mapped arena's pages in ahead of alloc; nil for heap
	// and small arenas, and while the arena is retired.
	pf *prefaulter
}

// arenaState is kept apart from the arena so that the garbage collector's
// cleanup of an arena nobody freed can reach it without keeping the arena
// alive.
type arenaState struct {
	buf   []byte
	freed atomic.Bool
	// pf is the arena's prefaulter, stopped before the unmap.
	pf atomic.Pointer[prefaulter]
}

// release unmaps s's mapping unless it was released before; it reports
// whether it did.
func (s *arenaState) release() bool {
	if !s.freed.CompareAndSwap(false, true) {
		return false
	}
	s.pf.Load().stop()
	offheap.Unmap(s.buf)
	return true
}

// mmapMinSize is the smallest arena that gets its own mapping: below a page
// a mapping would waste most of it (an empty memtable's arena is ~200
// bytes).
const mmapMinSize = 4 << 10

// newArena returns an arena of exactly size bytes on the Go heap. size must
// be at least arenaReserved and at most MaxArenaSize.
func newArena(size uint32) *arena {
	words := make([]uint64, (uint64(size)+7)/8)
	a := &arena{buf: unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), size)}
	adviseHugePages(a.buf)
	a.n.Store(arenaReserved)
	return a
}

// newMappedArena is newArena, but the arena is a mapping where the build
// supports them and size is at least mmapMinSize. Only ArenaPool makes
// such arenas: their memtables' lifetime is managed (the db counts
// references and hands each memtable back exactly once), while a memtable
// from New or Make is an ordinary Go value whose slices the garbage
// collector keeps valid.
func newMappedArena(size uint32) *arena {
	if !offheap.Enabled || size < mmapMinSize {
		return newArena(size)
	}
	buf, err := offheap.Map(int(size))
	if err != nil {
		// The kernel refused the mapping (address space or map count
		// exhausted); the Go heap still may not.
		return newArena(size)
	}
	a := &arena{buf: buf, mapped: true, state: &arenaState{buf: buf}}
	// A safety net, not the lifetime rule: an arena nobody frees (a DB
	// never closed, one whose Open failed midway) gives its mapping back
	// once it is unreachable. The db reads arena bytes only under a
	// reference to a read view that lists the memtable, so none is read
	// after the arena becomes unreachable.
	runtime.AddCleanup(a, func(s *arenaState) { s.release() }, a.state)
	adviseHugePages(a.buf)
	a.startPrefault()
	a.n.Store(arenaReserved)
	return a
}

// free releases the arena's memory. Its memtable must never be read again,
// by anyone: for a mapped arena a later read is a fault, not stale bytes.
// Builds with the invariants tag make sure of that: the pages become
// inaccessible (PROT_NONE) instead of being unmapped at once, so a late
// read crashes the test that made it. A heap arena is left to the garbage
// collector (filled with garbage first under invariants).
func (a *arena) free() {
	if a.mapped {
		if !a.state.release() {
			panic("memtable: arena freed twice")
		}
		return
	}
	if invariants.Enabled {
		poison(a.buf[:a.used()])
	}
}

// poison fills b with garbage, so that a late reader of a retired heap
// arena sees nonsense (and the race detector sees the writes) rather than
// plausible stale entries.
func poison(b []byte) {
	for i := range b {
		b[i] = 0xdb
	}
}

// startPrefault gives a mapped arena that is about to be written a
// prefaulter (see prefaulter).
func (a *arena) startPrefault() {
	a.pf = newPrefaulter(a.buf)
	a.state.pf.Store(a.pf)
}

// stopPrefault stops the arena's prefaulter, if any, and waits for it.
func (a *arena) stopPrefault() {
	a.pf.stop()
	a.pf = nil
	if a.state != nil {
		a.state.pf.Store(nil)
	}
}

// used returns the number of bytes handed out so far.
func (a *arena) used() uint32 { return a.n.Load() }

// alloc reserves size bytes aligned to arenaAlign and returns their offset.
// ok is false, and nothing is reserved, when they do not fit. Only the
// writer may call alloc.
func (a *arena) alloc(size uint64) (off uint32, ok bool) {
	start := (uint64(a.n.Load()) + arenaAlign - 1) &^ (arenaAlign - 1)
	end := start + size
	if end > uint64(len(a.buf)) {
		return 0, false
	}
	a.n.Store(uint32(end))
	if a.pf != nil {
		a.pf.maybeKick(uint32(end))
	}
	return uint32(start), true
}

// allocConcurrent is alloc for inserters that allocate at the same time:
// it reserves the bytes with a compare-and-swap of the high-water mark, so
// a failed allocation leaves the arena as it was.
func (a *arena) allocConcurrent(size uint64) (off uint32, ok bool) {
	for {
		n := a.n.Load()
		start := (uint64(n) + arenaAlign - 1) &^ (arenaAlign - 1)
		end := start + size
		if end > uint64(len(a.buf)) {
			return 0, false
		}
		if a.n.CompareAndSwap(n, uint32(end)) {
			if a.pf != nil {
				a.pf.maybeKick(uint32(end))
			}
			return uint32(start), true
		}
	}
}

// cas64 atomically replaces the link word at off, which must be 8-byte
// aligned, by v if it holds old.
func (a *arena) cas64(off uint32, old, v uint64) bool {
	return atomic.CompareAndSwapUint64((*uint64)(unsafe.Pointer(&a.buf[off])), old, v)
}

// load64 atomically loads the link word at off, which must be 8-byte
// aligned. Link words are in native byte order; they never leave memory.
func (a *arena) load64(off uint32) uint64 {
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&a.buf[off])))
}

// store64 atomically stores v in the link word at off.
func (a *arena) store64(off uint32, v uint64) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&a.buf[off])), v)
}

// load32 atomically loads the 4-byte word at off (a back link, or a node's
// key length), which must be 4-byte aligned.
func (a *arena) load32(off uint32) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&a.buf[off])))
}

// store32 atomically stores v in the 4-byte word at off.
func (a *arena) store32(off, v uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&a.buf[off])), v)
}
