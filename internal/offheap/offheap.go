// Package offheap allocates long-lived, read-mostly memory outside the Go
// heap: anonymous private mappings on Linux, so that memory a component
// keeps for its whole life (a table's pinned index and filter blocks) is
// neither scanned by the garbage collector nor counted in the heap goal,
// which otherwise lets the process grow to twice the live heap before the
// read path's garbage is collected.
//
// Memory from Alloc must be returned with Free exactly once, after the last
// read of it: a read after Free faults (under the invariants tag always, as
// freed mappings are made inaccessible rather than unmapped at once). Builds
// without mappings (other systems, the race detector, which watches only
// Go-heap memory) return heap memory, and Free is a no-op for it.
package offheap

import "sync/atomic"

// live counts the bytes mapped by Alloc and not yet freed.
var live atomic.Int64

// LiveBytes returns the bytes that Alloc mapped and Free has not freed.
func LiveBytes() int64 { return live.Load() }

// Alloc returns size bytes of zeroed memory, mapped outside the Go heap
// when this build supports it (mapped is true) and on the heap otherwise,
// or when the mapping fails. size must be positive.
func Alloc(size int) (b []byte, mapped bool) {
	if Enabled {
		if b, err := Map(size); err == nil {
			live.Add(int64(len(b)))
			return b, true
		}
	}
	return make([]byte, size), false
}

// Free returns b, which Alloc returned with mapped true, to the kernel. It
// must not be called twice for the same memory.
func Free(b []byte) {
	live.Add(-int64(len(b)))
	Unmap(b)
}
