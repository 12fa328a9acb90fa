//go:build linux && !race

package offheap

import (
	"sync"

	"github.com/stratadb/strata/internal/invariants"
	"golang.org/x/sys/unix"
)

// Enabled reports whether Alloc and Map map memory outside the Go heap.
const Enabled = true

// Map returns size bytes of zeroed, private, anonymous memory, not counted
// by LiveBytes: for callers that manage and count their own mappings (the
// memtable arenas). Unmap gives it back.
func Map(size int) ([]byte, error) {
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
}

// Unmap unmaps b, a mapping from Map or Alloc. Under the invariants tag it
// only revokes access, so that a late read faults instead of reading
// whatever is mapped there next, and unmaps it once quarantineLen newer
// mappings were freed (the kernel limits the number of mappings a process
// has).
func Unmap(b []byte) {
	if invariants.Enabled {
		quarantineAdd(b)
		return
	}
	if err := unix.Munmap(b); err != nil {
		panic("offheap: munmap: " + err.Error())
	}
}

// Park drops the pages of b, a mapping kept for reuse, from memory: it stays
// mapped but takes no RSS until it is written again, and then reads as
// zeros (MADV_DONTNEED on a private anonymous mapping). Under the invariants
// tag it is also made inaccessible until Unpark.
func Park(b []byte) {
	if err := unix.Madvise(b, unix.MADV_DONTNEED); err != nil {
		panic("offheap: madvise: " + err.Error())
	}
	if invariants.Enabled {
		protect(b, unix.PROT_NONE)
	}
}

// Unpark makes a parked mapping usable again.
func Unpark(b []byte) {
	if invariants.Enabled {
		protect(b, unix.PROT_READ|unix.PROT_WRITE)
	}
}

func protect(b []byte, prot int) {
	if err := unix.Mprotect(b, prot); err != nil {
		panic("offheap: mprotect: " + err.Error())
	}
}

// quarantineLen bounds the freed mappings kept inaccessible under the
// invariants tag: far below the kernel's default of 65530 mappings.
const quarantineLen = 512

var quarantine struct {
	mu   sync.Mutex
	ring [quarantineLen][]byte
	next int
}

func quarantineAdd(b []byte) {
	protect(b, unix.PROT_NONE)
	q := &quarantine
	q.mu.Lock()
	old := q.ring[q.next]
	q.ring[q.next] = b
	q.next = (q.next + 1) % quarantineLen
	q.mu.Unlock()
	if old != nil {
		if err := unix.Munmap(old); err != nil {
			panic("offheap: munmap: " + err.Error())
		}
	}
}
