//go:build linux && !race

package memtable

import (
	"sync"

	"github.com/stratadb/strata/internal/invariants"
	"golang.org/x/sys/unix"
)

// offHeapArenas: arenas of mmapMinSize bytes or more are anonymous mappings.
const offHeapArenas = true

// mapArena returns size bytes of zeroed, private, anonymous memory.
func mapArena(size int) ([]byte, error) {
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
}

// unmapArena returns b, a mapping from mapArena, to the kernel. Under the
// invariants tag it only revokes access, so that a late read faults, and
// unmaps it once quarantineLen newer arenas were freed (the kernel limits
// the number of mappings a process has).
func unmapArena(b []byte) {
	if invariants.Enabled {
		quarantine.add(b)
		return
	}
	if err := unix.Munmap(b); err != nil {
		panic("memtable: munmap of an arena: " + err.Error())
	}
}

// parkArena drops the pages of b, a mapping kept for reuse, from memory: it
// stays mapped but takes no RSS until it is written again, and then reads
// as zeros (MADV_DONTNEED on a private anonymous mapping). Under the
// invariants tag it is also made inaccessible until unparkArena.
func parkArena(b []byte) {
	if err := unix.Madvise(b, unix.MADV_DONTNEED); err != nil {
		panic("memtable: madvise of a pooled arena: " + err.Error())
	}
	if invariants.Enabled {
		protect(b, unix.PROT_NONE)
	}
}

// unparkArena makes a parked mapping usable again.
func unparkArena(b []byte) {
	if invariants.Enabled {
		protect(b, unix.PROT_READ|unix.PROT_WRITE)
	}
}

func protect(b []byte, prot int) {
	if err := unix.Mprotect(b, prot); err != nil {
		panic("memtable: mprotect of an arena: " + err.Error())
	}
}

// quarantineLen bounds the freed mappings kept inaccessible under the
// invariants tag: far below the kernel's default of 65530 mappings.
const quarantineLen = 512

// quarantine holds the mappings freed last, inaccessible, under the
// invariants tag.
var quarantine arenaQuarantine

type arenaQuarantine struct {
	mu   sync.Mutex
	ring [quarantineLen][]byte
	next int
}

func (q *arenaQuarantine) add(b []byte) {
	protect(b, unix.PROT_NONE)
	q.mu.Lock()
	old := q.ring[q.next]
	q.ring[q.next] = b
	q.next = (q.next + 1) % quarantineLen
	q.mu.Unlock()
	if old != nil {
		if err := unix.Munmap(old); err != nil {
			panic("memtable: munmap of an arena: " + err.Error())
		}
	}
}
