package table

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/stratadb/strata/internal/offheap"
)

// minMappedPinned is the least pinned metadata (index blocks and
// partitions, filters, index prefix arrays) that moves off the Go heap: a
// smaller table keeps it on the heap rather than pay two system calls and a
// mapping for a few pages. A variable so that tests can map small tables.
var minMappedPinned = 64 << 10

// pinnedAlign aligns each block in the mapping: a 64-byte line, so that a
// FastLocalBloom probe touches one cache line as it does in a large heap
// buffer, and the uint64 prefix arrays are aligned.
const pinnedAlign = 64

// pinnedMem is a table's pinned metadata when it lives in a mapping outside
// the Go heap. It is freed once, by Reader.Close, or by the reader's
// cleanup if the reader became unreachable without being closed.
//
// Invariant: nothing outside the Reader holds a slice into mem. Table
// iterators (and the pooled ones Get uses) read it only through their
// Reader, keys and values they return alias data blocks, and errors name
// offsets, never index keys; so after Close (callers close a Reader after
// its last use: the db's table cache does so at the last release of its
// reference) nothing reads mem.
type pinnedMem struct {
	mem     []byte
	freed   atomic.Bool
	cleanup runtime.Cleanup
}

func (p *pinnedMem) free() {
	if p.freed.CompareAndSwap(false, true) {
		offheap.Free(p.mem)
	}
}

// eachPinned calls fb for every pinned byte slice and fu for every pinned
// uint64 slice of r, so that a caller may size or replace them.
func (r *Reader) eachPinned(fb func(*[]byte), fu func(*[]uint64)) {
	fb(&r.index)
	for off, b := range r.partitions {
		fb(&b)
		r.partitions[off] = b
	}
	fb(&r.filter)
	if pf := r.partFilter; pf != nil {
		fb(&pf.top)
		for off, b := range pf.parts {
			fb(&b)
			pf.parts[off] = b
		}
	}
	if kp := r.indexPrefixes; kp != nil {
		fu(&kp.p)
	}
	for _, kp := range r.partPrefixes {
		fu(&kp.p)
	}
}

// PinnedBytes returns the size of the metadata the reader keeps for its
// life (index, filter, their partitions, index prefix arrays) and whether
// it lies outside the Go heap.
func (r *Reader) PinnedBytes() (n int, offHeap bool) {
	if r.pinned != nil {
		return len(r.pinned.mem), true
	}
	r.eachPinned(func(b *[]byte) { n += len(*b) }, func(u *[]uint64) { n += 8 * len(*u) })
	return n, false
}

// movePinned copies the pinned metadata into one mapping outside the Go
// heap when there is enough of it and the build supports mappings. The
// heap copies become garbage: the heap's live size, and with it the size
// the garbage collector lets the heap grow to, no longer counts them.
func (r *Reader) movePinned() {
	if !offheap.Enabled {
		return
	}
	n := 0
	alignUp := func(k int) int { return (k + pinnedAlign - 1) &^ (pinnedAlign - 1) }
	r.eachPinned(func(b *[]byte) { n = alignUp(n) + len(*b) }, func(u *[]uint64) { n = alignUp(n) + 8*len(*u) })
	if n < minMappedPinned {
		return
	}
	mem, mapped := offheap.Alloc(n)
	if !mapped {
		return // out of mappings: stay on the heap
	}
	off := 0
	r.eachPinned(func(b *[]byte) {
		if len(*b) == 0 {
			return
		}
		off = alignUp(off)
		dst := mem[off : off+len(*b) : off+len(*b)]
		copy(dst, *b)
		*b = dst
		off += len(dst)
	}, func(u *[]uint64) {
		if len(*u) == 0 {
			return
		}
		off = alignUp(off)
		dst := unsafe.Slice((*uint64)(unsafe.Pointer(&mem[off])), len(*u))
		copy(dst, *u)
		*u = dst
		off += 8 * len(dst)
	})
	p := &pinnedMem{mem: mem}
	// A Reader dropped without Close still returns its mapping. Nothing
	// but r reaches the mapping (see pinnedMem), so once r is unreachable
	// nothing can read it.
	p.cleanup = runtime.AddCleanup(r, (*pinnedMem).free, p)
	r.pinned = p
}

// freePinned frees the mapping, if any; it is idempotent.
func (r *Reader) freePinned() {
	if p := r.pinned; p != nil {
		p.cleanup.Stop()
		p.free()
	}
}
