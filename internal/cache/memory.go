package cache

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/stratadb/strata/internal/invariants"
	"github.com/stratadb/strata/internal/offheap"
)

// Where values live. With mappings (offheap.Enabled: Linux, not the race
// detector) a value takes a slot of a size-classed slab carved from an
// anonymous mapping, so cached blocks are neither Go heap the collector
// scans nor counted in its heap goal (which lets the heap grow to twice
// the live heap: with the cache on the heap its budget cost about twice
// its size in RSS). A value larger than the largest class gets a
// mapping of its own. Without mappings values are heap slices and the
// collector frees them.
//
// Size classes are 64 bytes apart up to 1 KiB and then 16 per power of
// two (so a class is at most 1/16, on average about 3%, above the sizes
// it holds: a 4101-byte block takes a 4352-byte slot); the charge is the
// slot. A slab holds at least 8 slots and is at least slabMin bytes; its
// free slots are reused last-freed first, and allocations come from the
// oldest slab with room, so that newer slabs tend to empty out. A
// slab with no live value goes back to the kernel: one per class is kept
// mapped with its pages dropped (MADV_DONTNEED) for the next allocation,
// the others are unmapped.
//
// Under the invariants tag each value gets a mapping of its own, which
// Free makes inaccessible (PROT_NONE) and unmaps only after later frees
// (offheap's quarantine), so a read of a freed block faults; beyond
// maxOwnMappings live values (the kernel bounds the mappings of a process)
// further values take slab slots, which are poisoned when freed.
const (
	smallStep      = 64
	smallMax       = 1024
	stepsPerPower  = 16
	maxClassSize   = 64 << 10
	slabMin        = 256 << 10
	pageSize4K     = 4096
	maxOwnMappings = 16384
)

// numClasses: 16 classes up to 1 KiB, then 16 per power of two to 64 KiB.
// (TestClassOf checks it against classOf.)
const numClasses = smallMax/smallStep + stepsPerPower*6

// classOf returns the index and slot size of the class for n bytes
// (0 < n ≤ maxClassSize).
func classOf(n int) (int, int) {
	if n <= smallMax {
		i := (n+smallStep-1)/smallStep - 1
		return i, (i + 1) * smallStep
	}
	k := bits.Len(uint(n-1)) - 1 // 2^k < n ≤ 2^(k+1)
	step := 1 << (k - 4)
	j := (n - 1<<k + step - 1) / step // 1..16
	return smallMax/smallStep + (k-10)*stepsPerPower + j - 1, 1<<k + j*step
}

// memory is the allocation behind a value: b is all of it (its length is
// what the value is charged), in slab s at slot, or a mapping of its own
// (mapped), or heap memory.
type memory struct {
	b      []byte
	s      *slab
	slot   int32
	mapped bool
}

// allocator hands out the memory of values.
type allocator struct {
	classes [numClasses]slabClass
	// own counts the values with a mapping of their own under the
	// invariants tag.
	own atomic.Int64
	// mapped is the memory of the mappings: slabs (spares included) and
	// values with a mapping of their own. The cache counts its own, so
	// offheap.LiveBytes stays the pinned metadata's.
	mapped atomic.Int64
}

type slabClass struct {
	mu   sync.Mutex
	size int
	// partial lists the slabs with a free slot, oldest first.
	partial slabList
	// spare is an empty slab kept mapped, its pages dropped.
	spare *slab
}

type slab struct {
	mem        []byte
	free       []int32 // free slot numbers, a stack
	live       int32
	prev, next *slab
	listed     bool
}

type slabList struct{ head, tail *slab }

func (l *slabList) pushBack(s *slab) {
	s.prev, s.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = s
	} else {
		l.head = s
	}
	l.tail = s
	s.listed = true
}

func (l *slabList) remove(s *slab) {
	if s.prev != nil {
		s.prev.next = s.next
	} else {
		l.head = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	} else {
		l.tail = s.prev
	}
	s.prev, s.next, s.listed = nil, nil, false
}

// slotSize returns the bytes an allocation of n takes (what it is
// charged, with EntryOverhead).
func slotSize(n int) int {
	switch {
	case n <= 0:
		return 0
	case !offheap.Enabled:
		return AllocSize(n)
	case n > maxClassSize:
		return (n + pageSize4K - 1) &^ (pageSize4K - 1)
	}
	_, size := classOf(n)
	return size
}

// alloc sets m to a new allocation of at least n bytes and returns its
// first n.
func (a *allocator) alloc(m *memory, n int) []byte {
	switch {
	case n <= 0:
		return nil
	case !offheap.Enabled:
		m.b = make([]byte, AllocSize(n))
		return m.b[:n]
	case n > maxClassSize || invariants.Enabled && a.own.Load() < maxOwnMappings:
		if b, err := offheap.Map(slotSize(n)); err == nil {
			m.b, m.mapped = b, true
			if n <= maxClassSize {
				a.own.Add(1)
			}
			a.mapped.Add(int64(len(b)))
			return b[:n]
		}
		m.b = make([]byte, AllocSize(n))
		return m.b[:n]
	}
	ci, size := classOf(n)
	c := &a.classes[ci]
	c.mu.Lock()
	s := c.partial.head
	if s == nil {
		s = c.spare
		if s != nil {
			c.spare = nil
			offheap.Unpark(s.mem)
		} else if s = a.newSlab(size); s == nil {
			c.mu.Unlock()
			m.b = make([]byte, AllocSize(n))
			return m.b[:n]
		}
		c.partial.pushBack(s)
	}
	slot := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	s.live++
	if len(s.free) == 0 {
		c.partial.remove(s)
	}
	c.mu.Unlock()
	off := int(slot) * size
	m.b, m.s, m.slot = s.mem[off:off+size:off+size], s, slot
	return m.b[:n]
}

// newSlab maps a slab of slots of size bytes, or returns nil when the
// mapping fails. The class's mutex is held.
func (a *allocator) newSlab(size int) *slab {
	n := max(slabMin, 8*size)
	n = (n + pageSize4K - 1) &^ (pageSize4K - 1)
	b, err := offheap.Map(n)
	if err != nil {
		return nil
	}
	slots := n / size
	s := &slab{mem: b, free: make([]int32, slots)}
	for i := range s.free {
		s.free[i] = int32(slots - 1 - i) // pop the lowest first
	}
	a.mapped.Add(int64(n))
	return s
}

// free releases m's allocation, after the last read of it.
func (a *allocator) free(m *memory) {
	b := m.b
	m.b = nil
	switch {
	case b == nil:
	case m.mapped:
		if len(b) <= maxClassSize {
			a.own.Add(-1)
		}
		a.mapped.Add(-int64(len(b)))
		offheap.Unmap(b) // inaccessible at once under invariants
	case m.s != nil:
		if invariants.Enabled {
			poison(b)
		}
		a.freeSlot(m.s, m.slot, len(b))
	default:
		if invariants.Enabled {
			// A late reader sees garbage, not the block: checksums,
			// block-format checks and tests' value checks notice.
			poison(b)
		}
	}
}

func poison(b []byte) {
	for i := range b {
		b[i] = 0xdb
	}
}

func (a *allocator) freeSlot(s *slab, slot int32, size int) {
	ci, _ := classOf(size)
	c := &a.classes[ci]
	c.mu.Lock()
	defer c.mu.Unlock()
	s.free = append(s.free, slot)
	s.live--
	if s.live > 0 {
		if !s.listed {
			c.partial.pushBack(s)
		}
		return
	}
	// Empty: back to the kernel.
	if s.listed {
		c.partial.remove(s)
	}
	if c.spare == nil {
		// Reset the stack so the lowest slots go first again.
		slots := int32(len(s.free))
		for i := range s.free {
			s.free[i] = slots - 1 - int32(i)
		}
		offheap.Park(s.mem)
		c.spare = s
		return
	}
	a.mapped.Add(-int64(len(s.mem)))
	offheap.Unmap(s.mem)
	s.mem = nil
}
