// Package iterator defines the internal iterator contract shared by blocks,
// tables, memtables, levels and the merging view, and the generic
// combinators over it. It is not covered by the API contract.
package iterator

import "github.com/stratadb/strata/internal/base"

// Iterator walks internal keys in internal-key order (user key ascending,
// then sequence number descending).
//
// Positioning: SeekGE, SeekLT, First, Last, Next and Prev position the
// iterator and report whether it now rests on an entry. Once a positioning
// call returns false the iterator is exhausted in that direction; Next after
// an exhausted forward move (or Prev after an exhausted backward move) is not
// allowed; any Seek/First/Last may follow. Next directly after an exhausted
// SeekLT/Prev, or Prev after an exhausted SeekGE/Next, is also not allowed.
//
// Keys and values: Key and Value may be called only while the last
// positioning call returned true. The returned slices stay valid until the
// next positioning call or Close; callers copy what they keep.
//
// Errors: a positioning call that meets an error (I/O, corruption) returns
// false and Error reports it until the next successful positioning call. An
// iterator never skips corrupt data.
//
// Bounds: Seek keys are user keys. SeekGE(k) rests on the first entry whose
// user key is >= k; SeekLT(k) on the last entry whose user key is < k.
// Iterators do not enforce user-facing bounds; the db iterator does, with a
// single comparison per step.
//
// Close releases resources and returns the accumulated error. The owner of
// an iterator closes it exactly once.
type Iterator interface {
	SeekGE(key []byte) bool
	SeekLT(key []byte) bool
	First() bool
	Last() bool
	Next() bool
	Prev() bool
	Key() base.InternalKey
	Value() []byte
	Error() error
	Close() error
}

// KVNexter is an Iterator that can also step forward and return the new
// entry's key and value in one call: NextKV is Next followed, when it
// returns true, by Key and Value (an Iterator may implement it to spare
// its callers two further calls through the interface per entry). It has
// Next's contract; after a false return Error reports why, as after Next.
type KVNexter interface {
	NextKV() (base.InternalKey, []byte, bool)
}

// UpperBounded is an Iterator that can tell, for a part of its keys at a
// time (a table's data block), that the entry it rests on and those a
// forward step reaches within that part are below an upper bound, so that
// its caller need not compare them with the bound one by one. The bound
// filters nothing: the iterator still returns keys past it.
type UpperBounded interface {
	// SetUpperBound sets the bound (nil: none); the slice is kept. A
	// positioning call must follow before NextInBounds reports true.
	SetUpperBound(upper []byte)
	// NextInBounds reports whether the entry the last positioning call or
	// step moved to is known to be below the bound (false: unknown).
	NextInBounds() bool
}
