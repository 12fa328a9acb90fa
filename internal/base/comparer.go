package base

import "bytes"

// Comparer orders the user keys of one column family. Every layer that
// compares user keys (memtables, tables, iterators, versions, compactions)
// takes the family's Comparer; none assumes bytewise order unless Bytewise
// is set.
//
// Bytewise marks the comparer whose order is bytes.Compare exactly. The
// engine's bytewise shortcuts (the skiplist's key summaries, shared-prefix
// separators in table indexes, the index's common-prefix compare) depend on
// that order and are used only when it is set; any other comparer goes the
// general way, through Compare.
type Comparer struct {
	// Name is recorded in the MANIFEST, the OPTIONS file and each table's
	// properties, and checked against them at Open and Ingest.
	Name string
	// Compare orders two user keys: negative, zero or positive as a sorts
	// before, with or after b.
	Compare func(a, b []byte) int
	// Separator, if set, appends to dst a key k with a <= k < b (b > a),
	// preferably short; the table writer uses it for index keys. Nil: the
	// index keeps a itself.
	Separator func(dst, a, b []byte) []byte
	// Successor, if set, appends to dst a key k >= a, preferably short; the
	// table writer uses it for the last index key. Nil: a itself.
	Successor func(dst, a []byte) []byte
	// Bytewise is set only for an order identical to bytes.Compare.
	Bytewise bool
}

// DefaultComparer is leveldb.BytewiseComparator, the default of every family.
var DefaultComparer = &Comparer{
	Name:     ComparatorName,
	Compare:  bytes.Compare,
	Bytewise: true,
}

// ReverseComparatorName is RocksDB's name for the reverse bytewise order.
const ReverseComparatorName = "rocksdb.ReverseBytewiseComparator"

// ReverseComparer is rocksdb.ReverseBytewiseComparator: bytewise order
// reversed. It has no Separator or Successor (RocksDB's shortens only when
// the result stays between its arguments; full keys are always correct).
var ReverseComparer = &Comparer{
	Name:    ReverseComparatorName,
	Compare: func(a, b []byte) int { return bytes.Compare(b, a) },
}

// OrDefault returns c, or DefaultComparer when c is nil.
func (c *Comparer) OrDefault() *Comparer {
	if c == nil {
		return DefaultComparer
	}
	return c
}

// CompareUser orders user keys; bytewise comparers skip the indirect call.
func (c *Comparer) CompareUser(a, b []byte) int {
	if c.Bytewise {
		return bytes.Compare(a, b)
	}
	return c.Compare(a, b)
}

// InternalCompare orders internal keys: user key in c's order, then trailer
// descending.
func (c *Comparer) InternalCompare(a, b InternalKey) int {
	if c.Bytewise {
		return InternalCompare(a, b)
	}
	if r := c.Compare(a.UserKey, b.UserKey); r != 0 {
		return r
	}
	return compareTrailers(a.Trailer, b.Trailer)
}

// CompareEncoded orders two encoded internal keys in c's order. Keys
// shorter than a trailer compare as if their trailer were zero.
func (c *Comparer) CompareEncoded(a, b []byte) int {
	if c.Bytewise {
		return CompareEncoded(a, b)
	}
	ak, _ := DecodeInternalKey(a)
	bk, _ := DecodeInternalKey(b)
	return c.InternalCompare(ak, bk)
}

// BuiltinComparer returns the built-in comparer of that name (RocksDB's
// bytewise and reverse bytewise; "" is bytewise), or nil.
func BuiltinComparer(name string) *Comparer {
	switch name {
	case "", ComparatorName:
		return DefaultComparer
	case ReverseComparatorName:
		return ReverseComparer
	}
	return nil
}

// KeyComparer is the method form of an order (the db package's Comparer).
type KeyComparer interface {
	Name() string
	Compare(a, b []byte) int
}

// EngineComparer is implemented by the db package's built-in comparers: it
// returns the engine's own form of the order, so that the bytewise one
// keeps its shortcuts wherever it is passed as a KeyComparer.
type EngineComparer interface {
	EngineComparer() *Comparer
}

// FromKeyComparer returns the engine's form of c: DefaultComparer for nil,
// a built-in comparer's own form, else a Comparer calling c's methods (with
// its optional Separator and Successor). A user comparer whose Name is a
// built-in one's is wrapped as any other: its order is its own code.
func FromKeyComparer(c KeyComparer) *Comparer {
	if c == nil {
		return DefaultComparer
	}
	if e, ok := c.(EngineComparer); ok {
		return e.EngineComparer()
	}
	ic := &Comparer{Name: c.Name(), Compare: c.Compare}
	if s, ok := c.(interface {
		Separator(dst, a, b []byte) []byte
	}); ok {
		ic.Separator = s.Separator
	}
	if s, ok := c.(interface{ Successor(dst, a []byte) []byte }); ok {
		ic.Successor = s.Successor
	}
	return ic
}
