package table

import (
	"sync"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stratadb/strata/internal/invariants"
	"github.com/stratadb/strata/internal/iterator"
)

// Iter walks a table's point entries in internal-key order; it implements
// iterator.Iterator (range tombstones come from Reader.Tombstones).
//
// Invariants: when valid, index rests on the entry of the loaded data
// block (dataH) and data rests on an entry with a key of at least 8 bytes.
// Key's UserKey and Value alias the block (or keyBuf inside data) and stay
// valid until the next positioning call. err is reset by each positioning
// call. block is the block-cache handle of the loaded data block when it is
// cache memory (a hit, or a block read for the cache), held until another
// block is loaded, Close, or the return of a Get's iterator to the pool
// (releaseData); a block read around the cache lies in scratch or the
// readahead chunk and has no handle.
type Iter struct {
	r       *Reader
	index   indexIter
	data    blockIter
	dataH   blockHandle
	block   cache.Handle
	loaded  bool
	scratch []byte
	// point: a Get's iterator, which reads one block per lookup and never
	// reads ahead.
	point bool
	// noFill: blocks missing from the cache are read without adding them
	// to it (NewCompactionIter).
	noFill  bool
	seekBuf []byte
	err     error
	ra      readahead
	// upper is the bound SetUpperBound gave (nil: none); blockBelow says
	// that every key of the loaded data block is below it, decided from
	// the block's index separator when the block is loaded (see
	// NextInBounds).
	upper      []byte
	blockBelow bool
}

// compressedScratch holds buffers that compressed blocks are read into
// before they are decompressed into the buffer the cache keeps.
var compressedScratch = sync.Pool{New: func() any { return new([]byte) }}

// readBlockForCache reads block h into cache memory (Cache.Alloc, not yet
// inserted), returning the handle the caller inserts and releases. A
// block of a table without compression is read straight into it; a
// compressed one is read into a pooled buffer and decompressed into it.
func (r *Reader) readBlockForCache(h blockHandle) (cache.Handle, error) {
	c := r.opts.Cache
	n := int(h.size) + blockTrailerLen
	if r.noCompression {
		if err := r.checkHandle(h); err != nil {
			return cache.Handle{}, err
		}
		ch := c.Alloc(n)
		b, err := r.readRaw(h, ch.Bytes(), true)
		if err != nil {
			ch.Release()
			return cache.Handle{}, err
		}
		ch.SetLen(len(b))
		return ch, nil
	}
	sp := compressedScratch.Get().(*[]byte)
	defer compressedScratch.Put(sp)
	if cap(*sp) < n && n <= maxBlockSize {
		*sp = make([]byte, n)
	}
	if err := r.checkHandle(h); err != nil {
		return cache.Handle{}, err
	}
	raw := *sp
	if cap(raw) < n {
		raw = make([]byte, n)
	}
	raw = raw[:n]
	if err := r.readAt(raw, int64(h.offset)); err != nil {
		return cache.Handle{}, err
	}
	return r.decodeForCache(h, raw)
}

// decodeForCache verifies and decompresses block h, whose bytes (trailer
// included) are raw, into cache memory, returning its handle (see
// readBlockForCache). raw is not kept.
func (r *Reader) decodeForCache(h blockHandle, raw []byte) (cache.Handle, error) {
	c := r.opts.Cache
	var ch cache.Handle
	b, err := r.decodeRawTo(h, raw, true, func(n int) []byte {
		ch = c.Alloc(n)
		return ch.Bytes()
	})
	if err != nil {
		ch.Release()
		return cache.Handle{}, err
	}
	if ch.Valid() && len(b) > 0 && &b[0] == &ch.Bytes()[0] {
		ch.SetLen(len(b))
		return ch, nil
	}
	// Stored uncompressed (aliasing raw), empty, or decompressed by a
	// format that allocates its own output: copy it into cache memory.
	ch.Release()
	ch = c.Alloc(len(b))
	copy(ch.Bytes(), b)
	return ch, nil
}

// readahead implements RocksDB's automatic readahead for iterators: after
// two data blocks read from disk back to back (in either direction), blocks
// are read in chunks
// that start at 8 KiB and double up to 256 KiB, so a scan costs one system
// call per chunk instead of one per block. Blocks served from the chunk
// are verified like any other and are added to the block cache only while
// it has free room (see admitReadahead: a scan must not evict the blocks
// point reads keep hot); those not cached alias buf and stay valid until
// the iterator's next read.
type readahead struct {
	buf     []byte // the chunk, starting at file offset off
	off     uint64
	nextOff uint64 // the offset following the last block read
	lastOff uint64 // the offset of the last block read
	seq     int    // back-to-back block reads so far
	size    int    // current chunk size
}

const (
	readaheadInitial = 8 << 10
	readaheadMax     = 256 << 10
)

// readaheadBlock returns block h from the readahead chunk, reading a new
// chunk when the access pattern is sequential, with its cache handle when
// it was cached (see admitReadahead). ok is false when h should be read on
// its own.
func (it *Iter) readaheadBlock(h blockHandle) (b []byte, ch cache.Handle, ok bool, err error) {
	r := it.r
	ra := &it.ra
	if err := r.checkHandle(h); err != nil {
		return nil, cache.Handle{}, true, err
	}
	n := h.size + blockTrailerLen // no overflow: h lies within the file
	if ra.buf != nil && h.offset >= ra.off && h.offset+n <= ra.off+uint64(len(ra.buf)) {
		ra.nextOff, ra.lastOff = h.offset+n, h.offset
		start := h.offset - ra.off
		return it.admitReadahead(h, ra.buf[start:start+n:start+n])
	}
	backward := false
	switch {
	case h.offset == ra.nextOff:
		ra.seq++
	case h.offset+n == ra.lastOff:
		// A reverse scan: the block just before the previous one.
		ra.seq++
		backward = true
	default:
		ra.seq, ra.size = 0, 0
	}
	ra.nextOff, ra.lastOff = h.offset+n, h.offset
	if ra.seq < 2 {
		return nil, cache.Handle{}, false, nil
	}
	if ra.size == 0 {
		ra.size = readaheadInitial
	} else if ra.size < readaheadMax {
		ra.size *= 2
	}
	size := uint64(ra.size)
	if size < n {
		size = n
	}
	start := h.offset
	if backward {
		// The chunk ends where block h ends.
		if size > h.offset+n {
			size = h.offset + n
		}
		start = h.offset + n - size
	} else if lim := r.dataEnd - h.offset; size > lim {
		size = lim
	}
	if uint64(cap(ra.buf)) < size {
		ra.buf = make([]byte, size)
	}
	ra.buf = ra.buf[:size]
	ra.off = start
	if err := r.readAt(ra.buf, int64(start)); err != nil {
		ra.buf = nil
		return nil, cache.Handle{}, true, err
	}
	i := h.offset - start
	return it.admitReadahead(h, ra.buf[i:i+n:i+n])
}

// admitReadahead verifies block h, whose bytes (trailer included) lie in
// the readahead chunk at raw, and caches it if the cache has room to spare:
// with a cache larger than the data, a repeated scan then reads and
// verifies each block once. A block that would evict anything is not
// cached (SetIfRoom), so scans never push out the blocks point reads keep
// hot. A block that is cached is decompressed (or, uncompressed, copied
// out of the chunk, which is reused) into cache memory, and returned with
// its handle; one that is not aliases the chunk or a heap buffer.
func (it *Iter) admitReadahead(h blockHandle, raw []byte) ([]byte, cache.Handle, bool, error) {
	r := it.r
	c := r.opts.Cache
	// The decompressed size is not known yet: decide on the stored one.
	if it.noFill || !c.HasRoom(r.cacheID, h.offset, int(h.size)) {
		b, err := r.decodeRaw(h, raw, true)
		return b, cache.Handle{}, true, err
	}
	ch, err := r.decodeForCache(h, raw)
	if err != nil {
		return nil, cache.Handle{}, true, err
	}
	c.InsertIfRoom(r.cacheID, h.offset, ch)
	return ch.Bytes(), ch, true, nil
}

var _ iterator.Iterator = (*Iter)(nil)

// NewIter returns an iterator over the table's point entries.
func (r *Reader) NewIter() *Iter {
	it := &Iter{r: r}
	it.index.init(r)
	return it
}

// maxKeptScratch bounds the scratch buffer InitIter keeps: a block read
// around the cache can be of any size, and a recycled iterator should not
// hold a large one for the next table it reads.
const maxKeptScratch = 64 << 10

// InitIter makes *it the iterator NewIter returns, keeping the memory of
// its key and scratch buffers. it must be the zero Iter or closed, and
// nothing may use what it returned before: its keys are overwritten.
// Whoever recycles table iterators (the read path opens one per table a
// seek reads) saves an allocation per table and the regrowth of its key
// buffers.
func (r *Reader) InitIter(it *Iter) {
	data, top, part := it.data.keyBuf[:0], it.index.top.keyBuf[:0], it.index.part.keyBuf[:0]
	scratch, seekBuf := it.scratch[:0], it.seekBuf[:0]
	if cap(scratch) > maxKeptScratch {
		scratch = nil
	}
	if invariants.Enabled {
		// A reader still holding a key of the iterator's last life would
		// read these bytes instead of failing silently later.
		for _, b := range [][]byte{data, top, part, scratch, seekBuf} {
			b = b[:cap(b)]
			for i := range b {
				b[i] = 0xa5
			}
		}
	}
	*it = Iter{r: r, scratch: scratch, seekBuf: seekBuf}
	it.data.keyBuf = data
	it.index.top.keyBuf, it.index.part.keyBuf = top, part
	it.index.init(r)
}

// NewCompactionIter returns an iterator over the table's point entries that
// reads blocks from the cache when they are there but never adds the
// blocks it reads (RocksDB's fill_cache=false for compaction inputs): a
// compaction reads each block of its inputs once, and caching them would
// evict what readers keep hot, or grow a cache that has room to its whole
// budget with blocks no reader asked for.
func (r *Reader) NewCompactionIter() *Iter {
	it := &Iter{r: r, noFill: true}
	it.index.init(r)
	return it
}

// readDataBlock returns the data block at h, from the cache if possible,
// with its cache handle when it is cache memory (the caller holds it while
// it uses the block).
func (it *Iter) readDataBlock(h blockHandle) ([]byte, cache.Handle, error) {
	r := it.r
	if c := r.opts.Cache; c != nil {
		if ch, ok := c.Get(r.cacheID, h.offset); ok {
			return ch.Bytes(), ch, nil
		}
		if !it.point {
			if b, ch, ok, err := it.readaheadBlock(h); ok {
				return b, ch, err
			}
		}
		if it.noFill {
			b, err := it.readUncached(h)
			return b, cache.Handle{}, err
		}
		ch, err := r.readBlockForCache(h)
		if err != nil {
			return nil, cache.Handle{}, err
		}
		c.Insert(r.cacheID, h.offset, ch, cache.LowPriority)
		return ch.Bytes(), ch, nil
	}
	b, err := it.readUncached(h)
	return b, cache.Handle{}, err
}

// readUncached reads block h from the file, into the iterator's scratch
// buffer (valid until the next read).
func (it *Iter) readUncached(h blockHandle) ([]byte, error) {
	r := it.r
	if n := int(h.size) + blockTrailerLen; cap(it.scratch) < n && n <= maxBlockSize {
		it.scratch = make([]byte, n)
	}
	return r.readRaw(h, it.scratch, true)
}

// loadData loads the block the index rests on.
func (it *Iter) loadData() bool {
	h := it.index.handle()
	if it.loaded && h == it.dataH {
		it.blockBelow = it.blockBelowUpper()
		return true
	}
	// Leave the previous block: if this one fails to load, a Next or Prev
	// after the false return must not yield its entries.
	it.releaseData()
	b, ch, err := it.readDataBlock(h)
	if err != nil {
		it.err = err
		return false
	}
	it.block = ch
	if !it.data.init(b, it.r.dataCmp) {
		it.err = it.r.corruptf("bad data block at offset %d", h.offset)
		return false
	}
	if it.r.cmp.Bytewise {
		it.data.setMode(cmpInternal)
	}
	it.dataH, it.loaded = h, true
	it.blockBelow = it.blockBelowUpper()
	return true
}

// releaseData leaves the loaded data block and releases its cache handle:
// nothing may read the block's bytes afterwards, and loaded is false so
// that no move steps from it.
func (it *Iter) releaseData() {
	it.data.invalidate()
	it.data.data = nil
	it.loaded, it.blockBelow = false, false
	if it.block.Valid() {
		it.block.Release()
		it.block = cache.Handle{}
	}
}

// SetUpperBound gives the iterator the bound its caller checks keys
// against (nil: none), for NextInBounds; it filters nothing. The slice is
// kept, not copied. A positioning call must follow before NextInBounds
// says anything but false.
func (it *Iter) SetUpperBound(upper []byte) {
	it.upper = upper
	it.blockBelow = false
}

// NextInBounds reports whether every key of the data block the iterator
// rests in is below the SetUpperBound bound, so that a caller stepping
// through the block with Next or NextKV need not compare each key with
// it: the block's index separator, which is at least the block's last key
// (RocksDB's FindShortestSeparator and FindShortSuccessor), is below the
// bound. It is decided once a block, when the block is loaded. False
// without a bound, before a positioning call and after a failed one.
func (it *Iter) NextInBounds() bool { return it.blockBelow }

// blockBelowUpper reports whether there is a bound and the index separator
// of the block the index rests on has a user key below it.
func (it *Iter) blockBelowUpper() bool {
	if it.upper == nil {
		return false
	}
	sep := it.index.cur().key
	if !it.r.userKeyIndex {
		if len(sep) < base.TrailerLen {
			return false // malformed: no verdict, each key is compared
		}
		sep = sep[:len(sep)-base.TrailerLen]
	}
	return it.r.cmp.CompareUser(sep, it.upper) < 0
}

// settle checks the data move's result and converts corruption.
func (it *Iter) settle(ok bool) bool {
	if ok {
		if len(it.data.key) < base.TrailerLen {
			it.err = it.r.corruptf("short key in data block at offset %d", it.dataH.offset)
			it.data.invalidate()
			return false
		}
		return true
	}
	if it.data.corrupt && it.err == nil {
		it.err = it.r.corruptf("bad data block at offset %d", it.dataH.offset)
	}
	return false
}

// indexErr ends a positioning call whose index move failed (an error, or
// no block left): the data block's position is dropped too, so that a Next
// or Prev after the false return cannot step from it.
func (it *Iter) indexErr() bool {
	if it.index.err != nil {
		it.err = it.index.err
	}
	it.data.invalidate()
	return false
}

// forward moves to the first entry of the next non-empty data block.
func (it *Iter) forward() bool {
	for it.err == nil && it.index.next() {
		if !it.loadData() {
			return false
		}
		if it.settle(it.data.first()) {
			return true
		}
	}
	return it.indexErr()
}

// backward moves to the last entry of the previous non-empty data block.
func (it *Iter) backward() bool {
	for it.err == nil && it.index.prev() {
		if !it.loadData() {
			return false
		}
		if it.settle(it.data.last()) {
			return true
		}
	}
	return it.indexErr()
}

// First implements iterator.Iterator.
func (it *Iter) First() bool {
	it.err = nil
	if !it.index.first() {
		return it.indexErr()
	}
	if !it.loadData() {
		return false
	}
	if it.settle(it.data.first()) {
		return true
	}
	return it.err == nil && it.forward()
}

// Last implements iterator.Iterator.
func (it *Iter) Last() bool {
	it.err = nil
	if !it.index.last() {
		return it.indexErr()
	}
	if !it.loadData() {
		return false
	}
	if it.settle(it.data.last()) {
		return true
	}
	return it.err == nil && it.backward()
}

// Next implements iterator.Iterator.
func (it *Iter) Next() bool {
	if it.settle(it.data.nextData()) {
		return true
	}
	return it.err == nil && it.forward()
}

// NextKV implements iterator.KVNexter: Next, then Key and Value, in one
// call.
func (it *Iter) NextKV() (InternalKey, []byte, bool) {
	if !it.settle(it.data.nextData()) && (it.err != nil || !it.forward()) {
		return InternalKey{}, nil, false
	}
	return it.Key(), it.data.value(), true
}

// Prev implements iterator.Iterator.
func (it *Iter) Prev() bool {
	if it.settle(it.data.prev()) {
		return true
	}
	return it.err == nil && it.backward()
}

// seekTargets encodes the data-block target (ukey, seq, KindSeek) and
// returns it with the index target in the table's index key form.
func (it *Iter) seekTargets(ukey []byte, seq base.SeqNum) (data, index []byte) {
	it.seekBuf = base.MakeInternalKey(ukey, seq, base.KindSeek).Append(it.seekBuf[:0])
	if it.r.userKeyIndex {
		return it.seekBuf, ukey
	}
	return it.seekBuf, it.seekBuf
}

func (it *Iter) seekGE(ukey []byte, seq base.SeqNum) bool {
	it.err = nil
	target, itarget := it.seekTargets(ukey, seq)
	if !it.index.seekGE(itarget) {
		return it.indexErr()
	}
	if !it.loadData() {
		return false
	}
	if it.settle(it.data.seekGE(target)) {
		return true
	}
	return it.err == nil && it.forward()
}

// SeekGE implements iterator.Iterator: the first entry with user key >= key.
func (it *Iter) SeekGE(key []byte) bool { return it.seekGE(key, base.MaxSeqNum) }

// SeekLT implements iterator.Iterator: the last entry with user key < key.
func (it *Iter) SeekLT(key []byte) bool {
	it.err = nil
	target, itarget := it.seekTargets(key, base.MaxSeqNum)
	if !it.index.seekGE(itarget) {
		if it.index.err != nil {
			return it.indexErr()
		}
		return it.Last()
	}
	if !it.loadData() {
		return false
	}
	if it.settle(it.data.seekLT(target)) {
		return true
	}
	return it.err == nil && it.backward()
}

// Key implements iterator.Iterator.
func (it *Iter) Key() InternalKey {
	k, _ := base.DecodeInternalKey(it.data.key)
	if it.r.hasGlobalSeq {
		k.Trailer = base.MakeTrailer(it.r.globalSeq, k.Kind())
	}
	return k
}

// Value implements iterator.Iterator.
func (it *Iter) Value() []byte { return it.data.value() }

// Error implements iterator.Iterator.
func (it *Iter) Error() error { return it.err }

// Close implements iterator.Iterator. It releases the blocks the iterator
// holds (keeping only its key buffer, for InitIter); Close may be called
// more than once.
func (it *Iter) Close() error {
	err := it.err
	it.releaseData()
	it.data = blockIter{keyBuf: it.data.keyBuf[:0]}
	it.index.release()
	return err
}

// Get returns the newest entry for ukey visible at snap (seq < snap). It
// does not consult the filter. The value is a copy the caller owns: the
// block it was read from is released before Get returns.
func (r *Reader) Get(ukey []byte, snap SeqNum) (value []byte, kind Kind, seq SeqNum, found bool, err error) {
	if snap == 0 {
		return nil, 0, 0, false, nil
	}
	it, _ := r.iterPool.Get().(*Iter)
	if it == nil {
		it = &Iter{r: r, point: true}
	}
	it.index.init(r)
	it.loaded = false
	target := snap - 1
	if r.hasGlobalSeq {
		// Every entry is stored at sequence number 0 and reads at the
		// global one: the table is visible at snap entirely or not at all.
		if !base.Visible(r.globalSeq, snap) {
			r.iterPool.Put(it)
			return nil, 0, 0, false, nil
		}
		target = base.MaxSeqNum
	}
	if it.seekGE(ukey, target) {
		k := it.Key()
		if r.cmp.CompareUser(k.UserKey, ukey) == 0 {
			// Copy before the block is released. make and copy: the
			// compiler allocates that without clearing first.
			v := it.Value()
			value = make([]byte, len(v))
			copy(value, v)
			kind, seq, found = k.Kind(), k.SeqNum(), true
		}
	}
	err = it.err
	it.releaseData()
	it.index.release()
	r.iterPool.Put(it)
	if err != nil {
		return nil, 0, 0, false, err
	}
	return value, kind, seq, found, nil
}

// VerifyChecksums reads every block of the table from the file (bypassing
// the cache), verifying checksums and decompressing.
func (r *Reader) VerifyChecksums() error {
	for _, h := range r.metaHandles {
		if _, err := r.readRaw(h, nil, true); err != nil {
			return err
		}
	}
	// Index and filter partitions, which the cache may hold (and which
	// are not meta blocks).
	tops := [][]byte{}
	if r.twoLevel {
		tops = append(tops, r.index)
	}
	if r.partFilter != nil {
		tops = append(tops, r.partFilter.top)
	}
	for i, top := range tops {
		var it blockIter
		r.initIndexIter(&it, top, false, true)
		for ok := it.first(); ok; ok = it.next() {
			if _, err := r.readRaw(it.handle, nil, i == 0 && r.twoLevel); err != nil {
				return err
			}
		}
	}
	var x indexIter
	x.init(r)
	defer x.release()
	for ok := x.first(); ok; ok = x.next() {
		if _, err := r.readRaw(x.handle(), nil, true); err != nil {
			return err
		}
	}
	return x.err
}
