package table

import (
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/bloom"
)

// indexIter walks the data-block handles of a table: a single index block,
// or (two-level index) a top-level block whose entries point to pinned
// partitions. Keys are in the table's index key form (user or internal).
//
// Invariant: when valid, part rests on an entry (two-level) or top does
// (single level); err is set on the first corrupt block.
type indexIter struct {
	r        *Reader
	top      blockIter
	part     blockIter
	twoLevel bool
	err      error
}

func (x *indexIter) init(r *Reader) {
	x.r = r
	x.twoLevel = r.partitions != nil
	x.err = nil
	r.initIndexIter(&x.top, r.index, r.firstKeyIndex && !x.twoLevel, true)
	x.top.prefixes = r.indexPrefixes
}

func (x *indexIter) cur() *blockIter {
	if x.twoLevel {
		return &x.part
	}
	return &x.top
}

func (x *indexIter) handle() blockHandle { return x.cur().handle }

func (x *indexIter) check(ok bool, it *blockIter, what string) bool {
	if !ok && it.corrupt && x.err == nil {
		x.err = x.r.corruptf("bad %s", what)
	}
	return ok
}

// loadPart points part at the partition the top entry names.
func (x *indexIter) loadPart() bool {
	b, ok := x.r.partitions[x.top.handle.offset]
	if !ok {
		x.err = x.r.corruptf("index partition at offset %d not found", x.top.handle.offset)
		return false
	}
	if !x.r.initIndexIter(&x.part, b, x.r.firstKeyIndex, true) {
		x.err = x.r.corruptf("bad index partition at offset %d", x.top.handle.offset)
		return false
	}
	x.part.prefixes = x.r.partPrefixes[x.top.handle.offset]
	return true
}

func (x *indexIter) first() bool {
	if !x.twoLevel {
		return x.check(x.top.first(), &x.top, "index block")
	}
	if !x.check(x.top.first(), &x.top, "index block") || !x.loadPart() {
		return false
	}
	if x.check(x.part.first(), &x.part, "index partition") {
		return true
	}
	return x.err == nil && x.nextPart()
}

func (x *indexIter) last() bool {
	if !x.twoLevel {
		return x.check(x.top.last(), &x.top, "index block")
	}
	if !x.check(x.top.last(), &x.top, "index block") || !x.loadPart() {
		return false
	}
	if x.check(x.part.last(), &x.part, "index partition") {
		return true
	}
	return x.err == nil && x.prevPart()
}

func (x *indexIter) nextPart() bool {
	for x.check(x.top.next(), &x.top, "index block") {
		if !x.loadPart() {
			return false
		}
		if x.check(x.part.first(), &x.part, "index partition") {
			return true
		}
		if x.err != nil {
			return false
		}
	}
	return false
}

func (x *indexIter) prevPart() bool {
	for x.check(x.top.prev(), &x.top, "index block") {
		if !x.loadPart() {
			return false
		}
		if x.check(x.part.last(), &x.part, "index partition") {
			return true
		}
		if x.err != nil {
			return false
		}
	}
	return false
}

func (x *indexIter) next() bool {
	if !x.twoLevel {
		return x.check(x.top.next(), &x.top, "index block")
	}
	if x.check(x.part.next(), &x.part, "index partition") {
		return true
	}
	return x.err == nil && x.nextPart()
}

func (x *indexIter) prev() bool {
	if !x.twoLevel {
		return x.check(x.top.prev(), &x.top, "index block")
	}
	if x.check(x.part.prev(), &x.part, "index partition") {
		return true
	}
	return x.err == nil && x.prevPart()
}

func (x *indexIter) seekGE(target []byte) bool {
	if !x.twoLevel {
		return x.check(x.top.seekGE(target), &x.top, "index block")
	}
	if !x.check(x.top.seekGE(target), &x.top, "index block") || !x.loadPart() {
		return false
	}
	if x.check(x.part.seekGE(target), &x.part, "index partition") {
		return true
	}
	return x.err == nil && x.nextPart()
}

// partitionedFilter is a pinned partitioned filter: an index block over
// filter partitions, each an ordinary full filter.
type partitionedFilter struct {
	top   []byte
	parts map[uint64][]byte
}

func (r *Reader) readPartitionedFilter(h blockHandle) (*partitionedFilter, error) {
	b, err := r.readRaw(h, nil, false)
	if err != nil {
		return nil, err
	}
	pf := &partitionedFilter{top: b, parts: make(map[uint64][]byte)}
	var it blockIter
	if !r.initIndexIter(&it, b, false, false) {
		return nil, r.corruptf("bad partitioned filter index at offset %d", h.offset)
	}
	for ok := it.first(); ok; ok = it.next() {
		ph := it.handle
		pb, err := r.readRaw(ph, nil, false)
		if err != nil {
			return nil, err
		}
		pf.parts[ph.offset] = pb
	}
	if it.corrupt {
		return nil, r.corruptf("bad partitioned filter index at offset %d", h.offset)
	}
	return pf, nil
}

// mayContain probes the partition whose separator is the first >= key. A
// key past every separator is not in the table.
func (pf *partitionedFilter) mayContain(r *Reader, key []byte) bool {
	var it blockIter
	if !r.initIndexIter(&it, pf.top, false, true) {
		return true
	}
	target := key
	if !r.userKeyIndex {
		var buf [64]byte
		target = base.MakeInternalKey(key, base.MaxSeqNum, base.KindSeek).Append(buf[:0])
	}
	if !it.seekGE(target) {
		return it.corrupt
	}
	part, ok := pf.parts[it.handle.offset]
	if !ok {
		return true
	}
	return bloom.MayContain(part, key)
}
