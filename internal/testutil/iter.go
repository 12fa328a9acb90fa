package testutil

import (
	"bytes"
	"sort"

	"github.com/stratadb/strata/prefix"
)

// ModelIter is the reference iterator: it walks a sorted entry list (already
// cut to the bounds) with the PrefixSameAsStart semantics of the contract:
// after a Seek or SeekForPrev to a key in the extractor's domain it yields
// only keys in the domain with that key's prefix; SeekToFirst and
// SeekToLast narrow nothing.
type ModelIter struct {
	kvs        []KV
	pos        int // -1: not valid
	ext        prefix.Extractor
	prefixSame bool
	prefix     []byte // nil: no narrowing
}

// NewModelIter returns an unpositioned iterator over kvs, sorted by key.
// ext is the extractor in force at NewIterator (nil for none).
func NewModelIter(kvs []KV, ext prefix.Extractor, prefixSameAsStart bool) *ModelIter {
	return &ModelIter{kvs: kvs, pos: -1, ext: ext, prefixSame: prefixSameAsStart}
}

func (it *ModelIter) setPrefix(key []byte) {
	it.prefix = nil
	if it.prefixSame && it.ext != nil && it.ext.InDomain(key) {
		it.prefix = append([]byte{}, it.ext.Transform(key)...)
	}
}

func (it *ModelIter) visible(i int) bool {
	if it.prefix == nil {
		return true
	}
	k := []byte(it.kvs[i].Key)
	return it.ext.InDomain(k) && bytes.Equal(it.ext.Transform(k), it.prefix)
}

func (it *ModelIter) forwardFrom(i int) {
	for ; i < len(it.kvs); i++ {
		if it.visible(i) {
			it.pos = i
			return
		}
	}
	it.pos = -1
}

func (it *ModelIter) backwardFrom(i int) {
	for ; i >= 0; i-- {
		if it.visible(i) {
			it.pos = i
			return
		}
	}
	it.pos = -1
}

// SeekToFirst moves to the first entry.
func (it *ModelIter) SeekToFirst() { it.prefix = nil; it.forwardFrom(0) }

// SeekToLast moves to the last entry.
func (it *ModelIter) SeekToLast() { it.prefix = nil; it.backwardFrom(len(it.kvs) - 1) }

// Seek moves to the first visible entry >= key.
func (it *ModelIter) Seek(key []byte) {
	it.setPrefix(key)
	it.forwardFrom(sort.Search(len(it.kvs), func(i int) bool { return it.kvs[i].Key >= string(key) }))
}

// SeekForPrev moves to the last visible entry <= key.
func (it *ModelIter) SeekForPrev(key []byte) {
	it.setPrefix(key)
	it.backwardFrom(sort.Search(len(it.kvs), func(i int) bool { return it.kvs[i].Key > string(key) }) - 1)
}

// Next moves forward; the iterator must be valid.
func (it *ModelIter) Next() { it.forwardFrom(it.pos + 1) }

// Prev moves backward; the iterator must be valid.
func (it *ModelIter) Prev() { it.backwardFrom(it.pos - 1) }

// Valid reports whether the iterator is on an entry.
func (it *ModelIter) Valid() bool { return it.pos >= 0 }

// Entry returns the current entry.
func (it *ModelIter) Entry() KV { return it.kvs[it.pos] }
