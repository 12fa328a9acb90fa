//go:build linux && !race

package offheap

import (
	"sync"

	"github.com/stratadb/strata/internal/invariants"
	"golang.org/x/sys/unix"
)

// Enabled reports whether Alloc maps memory outside the Go heap.
const Enabled = true

func mapMem(size int) ([]byte, error) {
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
}

// unmapMem unmaps b. Under the invariants tag it only revokes access, so
// that a late read faults instead of reading whatever is mapped there next,
// and unmaps it once quarantineLen newer mappings were freed (the kernel
// limits the number of mappings a process has).
func unmapMem(b []byte) {
	if invariants.Enabled {
		quarantineAdd(b)
		return
	}
	if err := unix.Munmap(b); err != nil {
		panic("offheap: munmap: " + err.Error())
	}
}

// quarantineLen bounds the freed mappings kept inaccessible under the
// invariants tag: far below the kernel's default of 65530 mappings.
const quarantineLen = 256

var quarantine struct {
	mu   sync.Mutex
	ring [quarantineLen][]byte
	next int
}

func quarantineAdd(b []byte) {
	if err := unix.Mprotect(b, unix.PROT_NONE); err != nil {
		panic("offheap: mprotect: " + err.Error())
	}
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
