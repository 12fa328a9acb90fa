package memtable

import (
	"math"

	"github.com/stratadb/strata/internal/base"
)

// Iter walks the point entries of a memtable in internal-key order. It
// implements the iterator.Iterator contract; positioning calls, Key and Value
// do not allocate. Range tombstones are not part of the walk (see
// MemTable.Tombstones).
//
// An Iter may run while the writer adds entries: it sees every entry added
// before the positioning call that reaches it, and may or may not see entries
// added concurrently. The order it reports is always the internal-key order.
//
// Invariants: nd is a node of list; it is list.head after an exhausted
// backward move or before any positioning, list.tail after an exhausted
// forward move.
//
// The zero Iter must be set up with Init before use; an Iter may be
// re-initialized at any time, so it can be embedded and reused without an
// allocation per read.
type Iter struct {
	list *skiplist
	nd   uint32
}

// NewIter returns an iterator over the point entries of m.
func (m *MemTable) NewIter() *Iter {
	it := &Iter{}
	it.Init(m)
	return it
}

// Init points it at m, unpositioned.
func (it *Iter) Init(m *MemTable) {
	*it = Iter{list: m.points, nd: m.points.head}
}

// SeekGE moves to the first entry whose user key is >= key.
func (it *Iter) SeekGE(key []byte) bool {
	_, it.nd = it.list.seek(key, math.MaxUint64)
	return it.nd != it.list.tail
}

// SeekLT moves to the last entry whose user key is < key.
func (it *Iter) SeekLT(key []byte) bool {
	it.nd, _ = it.list.seek(key, math.MaxUint64)
	return it.nd != it.list.head
}

// First moves to the first entry.
func (it *Iter) First() bool {
	it.nd = it.list.next(it.list.head, 0)
	return it.nd != it.list.tail
}

// Last moves to the last entry.
func (it *Iter) Last() bool {
	it.nd = it.list.last()
	return it.nd != it.list.head
}

// Next moves to the next entry.
func (it *Iter) Next() bool {
	if it.nd == it.list.tail {
		return false // misuse: the contract forbids Next after exhaustion
	}
	it.nd = it.list.next(it.nd, 0)
	return it.nd != it.list.tail
}

// NextKV is Next, then Key and Value (iterator.KVNexter).
func (it *Iter) NextKV() (base.InternalKey, []byte, bool) {
	if !it.Next() {
		return base.InternalKey{}, nil, false
	}
	return it.Key(), it.Value(), true
}

// Prev moves to the previous entry.
func (it *Iter) Prev() bool {
	if it.nd == it.list.head {
		return false // misuse: the contract forbids Prev after exhaustion
	}
	it.nd = it.list.prev(it.nd)
	return it.nd != it.list.head
}

// Key returns the current internal key. UserKey aliases the arena (its
// capacity is its length); it never changes.
func (it *Iter) Key() base.InternalKey {
	return base.InternalKey{UserKey: it.list.key(it.nd), Trailer: it.list.trailer(it.nd)}
}

// Value returns the current value, aliasing the arena; it never changes.
func (it *Iter) Value() []byte { return it.list.value(it.nd) }

// Error returns nil: a memtable has no I/O and no corruption.
func (it *Iter) Error() error { return nil }

// Close releases the iterator. It returns nil.
func (it *Iter) Close() error {
	*it = Iter{}
	return nil
}
