package table

import (
	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/bloom"
	"github.com/stratadb/strata/internal/cache"
)

// indexIter walks the data-block handles of a table: a single index block,
// or (two-level index) a top-level block whose entries point to pinned
// partitions. Keys are in the table's index key form (user or internal).
//
// Invariant: when valid, part rests on an entry (two-level) or top does
// (single level); err is set on the first corrupt block. partH holds the
// block-cache handle of the partition part walks when it came from the
// cache (CacheIndexAndFilterBlocks), until the next partition is loaded or
// release is called: whoever owns an indexIter calls release when done.
type indexIter struct {
	r        *Reader
	top      blockIter
	part     blockIter
	partH    cache.Handle
	twoLevel bool
	err      error
}

func (x *indexIter) init(r *Reader) {
	x.release()
	x.r = r
	x.twoLevel = r.twoLevel
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

// release drops the cached partition the iterator holds, if any; part is
// left walking nothing.
func (x *indexIter) release() {
	if x.partH.Valid() {
		x.part = blockIter{keyBuf: x.part.keyBuf[:0]}
		x.partH.Release()
		x.partH = cache.Handle{}
	}
}

// loadPart points part at the partition the top entry names.
func (x *indexIter) loadPart() bool {
	if x.r.partitions == nil {
		x.release()
		b, h, err := x.r.indexPartition(x.top.handle)
		if err != nil {
			x.err = err
			return false
		}
		x.partH = h
		x.r.initIndexIter(&x.part, b, x.r.firstKeyIndex, true)
		x.part.prefixes = nil
		return true
	}
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

// partitionedFilter is a partitioned filter: an index block over filter
// partitions, each an ordinary full filter. The index is pinned; the
// partitions are pinned too (parts) unless the reader reads them through
// the block cache (ReaderOptions.CacheIndexAndFilterBlocks), when parts is
// nil and each partition is cached under (cacheID, its offset).
type partitionedFilter struct {
	top   []byte
	parts map[uint64][]byte
}

func (r *Reader) readPartitionedFilter(h blockHandle) (*partitionedFilter, error) {
	b, err := r.readRaw(h, nil, false)
	if err != nil {
		return nil, err
	}
	pf := &partitionedFilter{top: b}
	cached := r.cachesMetadata()
	if !cached {
		pf.parts = make(map[uint64][]byte)
	}
	var it blockIter
	if !r.initIndexIter(&it, b, false, false) {
		return nil, r.corruptf("bad partitioned filter index at offset %d", h.offset)
	}
	for ok := it.first(); ok; ok = it.next() {
		ph := it.handle
		if cached {
			if err := r.checkHandle(ph); err != nil {
				return nil, err
			}
			continue
		}
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

// cachesMetadata reports whether filter and index partitions are read
// through the block cache rather than pinned.
func (r *Reader) cachesMetadata() bool {
	return r.opts.CacheIndexAndFilterBlocks && r.opts.Cache != nil
}

// partition returns the filter partition at h: the pinned one, or the one
// the cache holds, read from the file (checksum-verified) and cached on a
// miss, with the handle the caller releases after the probe. It returns
// nil, and no error, when the partition is unknown or too large for the
// cache. A hit does not allocate.
func (pf *partitionedFilter) partition(r *Reader, h blockHandle) ([]byte, cache.Handle, error) {
	if pf.parts != nil {
		return pf.parts[h.offset], cache.Handle{}, nil
	}
	return r.cachedMetadataBlock(h, "reading filter partition")
}

// mayContain probes the partition whose key is the first >= key (a user
// key, or a prefix: see Reader.prefixPartitions) with key, or with its
// hash h when hashed. A key past every partition is not in the table.
func (pf *partitionedFilter) mayContain(r *Reader, key []byte, h uint64, hashed bool) (bool, error) {
	var it blockIter
	if !r.initIndexIter(&it, pf.top, false, true) {
		return true, nil
	}
	target := key
	if !r.userKeyIndex {
		var buf [64]byte
		target = base.MakeInternalKey(key, base.MaxSeqNum, base.KindSeek).Append(buf[:0])
	}
	if !it.seekGE(target) {
		return it.corrupt, nil
	}
	part, ph, err := pf.partition(r, it.handle)
	if part == nil || err != nil {
		return true, err
	}
	var may bool
	if hashed {
		may = bloom.MayContainHash(part, h, key)
	} else {
		may = bloom.MayContain(part, key)
	}
	ph.Release()
	return may, nil
}

// indexPartition returns the index partition at h through the block cache
// (CacheIndexAndFilterBlocks): cached, or read from the file, verified
// (checksum and block structure) and cached; with the handle the caller
// releases after its last use of the bytes.
func (r *Reader) indexPartition(h blockHandle) ([]byte, cache.Handle, error) {
	c := r.opts.Cache
	if ch, ok := c.Get(r.cacheID, h.offset); ok {
		return ch.Bytes(), ch, nil
	}
	ch, err := r.readBlockForCache(h)
	if err != nil {
		return nil, cache.Handle{}, errors.Wrap(err, "reading index partition")
	}
	b := ch.Bytes()
	var it blockIter
	if !r.initIndexIter(&it, b, r.firstKeyIndex, false) {
		ch.Release()
		return nil, cache.Handle{}, r.corruptf("bad index partition at offset %d", h.offset)
	}
	r.cacheMetadata(h.offset, ch)
	return b, ch, nil
}
