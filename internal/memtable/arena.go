package memtable

import (
	"math"
	"sync/atomic"
	"unsafe"
)

// MaxArenaSize is the largest arena a memtable can have: nodes are addressed
// by uint32 offsets.
const MaxArenaSize = math.MaxUint32

// arenaAlign is the alignment of every allocation. Nodes hold uint32 links
// that are accessed with sync/atomic, which needs 4-byte alignment.
const arenaAlign = 4

// arenaReserved is the number of bytes at the start of the arena that are
// never handed out, so that offset 0 can mean "no node".
const arenaReserved = 8

// arena is a bump allocator over one []byte allocated up front. Everything
// the memtable stores (skiplist nodes, keys, values) lives in it and is
// referenced by uint32 offsets, so the buffer holds no Go pointers and the
// garbage collector never scans it.
//
// Invariants:
//   - buf never grows and is never reused; bytes below used() are immutable
//     once their node is published, except the link words of nodes, which
//     are only accessed through load32/store32.
//   - Only the single writer calls alloc; any goroutine may call used and
//     read published bytes.
//   - The base of buf is 8-byte aligned (it is backed by a []uint64) and
//     every allocation starts at a multiple of arenaAlign.
type arena struct {
	buf []byte
	n   atomic.Uint32 // bytes handed out, including arenaReserved
}

// newArena returns an arena of exactly size bytes. size must be at least
// arenaReserved and at most MaxArenaSize.
func newArena(size uint32) *arena {
	words := make([]uint64, (uint64(size)+7)/8)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), size)
	adviseHugePages(buf)
	a := &arena{buf: buf}
	a.n.Store(arenaReserved)
	return a
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
	return uint32(start), true
}

// load32 atomically loads the link word at off, which must be 4-byte
// aligned. Link words are in native byte order; they never leave memory.
func (a *arena) load32(off uint32) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&a.buf[off])))
}

// store32 atomically stores v in the link word at off.
func (a *arena) store32(off, v uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&a.buf[off])), v)
}
