package cache

import "github.com/stratadb/strata/internal/invariants"

// memory is the allocation behind a value: b is all of it (its length is
// what the value is charged).
type memory struct {
	b []byte
}

// allocator hands out the memory of values.
type allocator struct{}

// alloc sets m to a new allocation of at least n bytes and returns its
// first n.
func (a *allocator) alloc(m *memory, n int) []byte {
	m.b = make([]byte, AllocSize(n))
	return m.b[:n]
}

// free releases m's allocation, after the last read of it.
func (a *allocator) free(m *memory) {
	if invariants.Enabled {
		// A late reader sees garbage, not the block: checksums,
		// block-format checks and tests' value checks notice.
		for i := range m.b {
			m.b[i] = 0xdb
		}
	}
	m.b = nil
}
