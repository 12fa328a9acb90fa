package table

import (
	"bytes"
	"encoding/binary"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/klauspost/compress/zstd"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/bloom"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stratadb/strata/internal/checksum"
)

// ReadableFile is what a Reader needs from a file.
type ReadableFile interface {
	io.ReaderAt
	Close() error
}

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// Comparer orders the user keys. Nil: the comparer that
	// ComparerByName returns for the table's rocksdb.comparator property
	// (a table records the order it was written in); with ComparerByName
	// nil too, the built-in comparer of that name. A name neither knows
	// fails Open with ErrInvalidArgument.
	Comparer *Comparer
	// ComparerByName resolves the comparator name a table records (see
	// Comparer). It returns nil for a name it does not know.
	ComparerByName func(name string) *Comparer
	// Cache holds data blocks; nil means no caching.
	Cache *Cache
	// FileName names the file in every error message.
	FileName string
	// FileNum is the table's file number.
	FileNum uint64
	// LargestSeqNum is the largest sequence number the MANIFEST records
	// for the file. A table written for ingestion (one with the
	// rocksdb.external_sst_file.version property) stores every entry at
	// sequence number 0; the sequence number its entries read with, its
	// global sequence number, is its global_seqno property when that is
	// non-zero and LargestSeqNum otherwise, as RocksDB reads it.
	LargestSeqNum uint64
	// CacheIndexAndFilterBlocks, when Cache is not nil, reads a full
	// (unpartitioned) filter block through Cache when a probe needs it,
	// keyed like data blocks by the reader's cache id and the block's
	// offset and charged its size, instead of pinning it for the
	// reader's life: RocksDB's BlockBasedTableOptions
	// cache_index_and_filter_blocks. Open checks only that the filter's
	// handle lies within the file; a corrupt filter is reported by the
	// probe that reads it. A filter too large for the cache to keep (see
	// Cache.Fits) is not read at all: probes answer "may contain", so a
	// lookup reads the data block instead of the much larger filter.
	//
	// With a partitioned filter and a two-level index (RocksDB's
	// partition_filters and kTwoLevelIndexSearch), only the top-level
	// index and the filter's partition index stay pinned: each filter
	// partition and index partition is read through Cache when a probe or
	// seek needs it (checksum-verified, charged its size like a data
	// block), and a corrupt one fails the read that needs it. Open checks
	// only that their handles lie within the file. Single-level index
	// blocks stay pinned.
	CacheIndexAndFilterBlocks bool
	// CacheIndexAndFilterBlocksWithHighPriority caches the blocks that
	// CacheIndexAndFilterBlocks reads through Cache (filters, filter and
	// index partitions) with cache.HighPriority, so that data blocks do
	// not evict them while Cache's high-priority pool has room (RocksDB's
	// cache_index_and_filter_blocks_with_high_priority).
	CacheIndexAndFilterBlocksWithHighPriority bool
}

// Reader reads one table. It is safe for concurrent use by iterators and
// Get calls.
//
// Invariants: footer, props, the index (and its partitions) and the filter
// were read and checksum-verified at Open and stay pinned, immutable, until
// Close, except under CacheIndexAndFilterBlocks a full filter, which is read
// through the cache under (cacheID, filterH.offset) like a data block, and
// index and filter partitions, read through the cache under (cacheID, their
// offset) (partitions and partFilter.parts are then nil); data
// blocks are read through the cache under (cacheID, offset); dataEnd is
// where the footer starts, so every block handle followed lies below it.
type Reader struct {
	// cmp orders user keys; dataCmp is its internal-key order, the
	// comparator of data and range-deletion blocks.
	cmp     *base.Comparer
	dataCmp func(a, b []byte) int
	// closed makes Close idempotent.
	closed  atomic.Bool
	f       ReadableFile
	opts    ReaderOptions
	cacheID uint64
	dataEnd uint64
	footer  footer
	props   *Properties

	noCompression bool
	dict          *zstd.Decoder

	index []byte // top-level index block
	// twoLevel: index holds handles of index partitions, pinned in
	// partitions (by offset), or, when partitions is nil, read through the
	// block cache (CacheIndexAndFilterBlocks).
	twoLevel   bool
	partitions map[uint64][]byte
	// indexPrefixes and partPrefixes narrow index seeks (nil: too small).
	indexPrefixes *keyPrefixes
	partPrefixes  map[uint64]*keyPrefixes
	indexCmp      func(a, b []byte) int
	userKeyIndex  bool
	deltaIndex    bool
	firstKeyIndex bool

	filter []byte
	// filterH is the full filter's block, read through the cache by
	// filterBlock, when cachedFilter (CacheIndexAndFilterBlocks); filter
	// is then nil.
	filterH        blockHandle
	cachedFilter   bool
	partFilter     *partitionedFilter
	wholeKeyFilter bool
	prefixFilter   bool
	tombstones     []base.Tombstone
	metaHandles    map[string]blockHandle
	iterPool       sync.Pool
	// globalSeq, when hasGlobalSeq, replaces the sequence number of every
	// entry and tombstone (an ingested external table).
	globalSeq    base.SeqNum
	hasGlobalSeq bool
	// pinned, when not nil, holds index, partitions, filter and prefix
	// arrays outside the Go heap until Close (see movePinned).
	pinned *pinnedMem
}

// Open reads the footer, metaindex, properties, index, filter and
// range-deletion blocks of a table of the given size.
func Open(f ReadableFile, size int64, opts ReaderOptions) (*Reader, error) {
	r := &Reader{f: f, opts: opts, cacheID: opts.Cache.NewID()}
	if err := r.open(size); err != nil {
		return nil, err
	}
	r.movePinned()
	return r, nil
}

func (r *Reader) corruptf(format string, args ...interface{}) error {
	return base.CorruptionErrorf("table %s: "+format, append([]interface{}{r.opts.FileName}, args...)...)
}

func (r *Reader) open(size int64) error {
	if size < legacyFooterLen {
		return r.corruptf("file of %d bytes is too short to be a table", size)
	}
	n := min(size, footerLen)
	buf := make([]byte, n)
	if err := r.readAt(buf, size-n); err != nil {
		return err
	}
	ft, msg := decodeFooter(buf)
	if msg != "" {
		return r.corruptf("%s (footer at offset %d)", msg, size-n)
	}
	r.footer = ft
	r.dataEnd = uint64(size) - uint64(ft.len)
	if err := r.readMetaindex(); err != nil {
		return err
	}
	if err := r.readProperties(); err != nil {
		return err
	}
	if h, ok := r.metaHandles[metaCompressionDict]; ok {
		d, err := r.readRaw(h, nil, false)
		if err != nil {
			return err
		}
		if r.dict, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(maxRawSize), zstd.WithDecoderDictRaw(0, d)); err != nil {
			return r.corruptf("bad compression dictionary at offset %d: %v", h.offset, err)
		}
	}
	if err := r.readIndex(); err != nil {
		return err
	}
	if err := r.readFilter(); err != nil {
		return err
	}
	return r.readRangeDels()
}

func (r *Reader) readAt(buf []byte, off int64) error {
	n, err := r.f.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || err == io.EOF {
		return r.corruptf("short read of %d bytes at offset %d", len(buf), off)
	}
	return errors.Wrapf(err, "strata: table %s: read at offset %d", r.opts.FileName, off)
}

// readRaw reads the block at h, trailer included, into buf (reallocated
// when too small) and verifies its checksum. A compressed block is
// decompressed into a new buffer when decompress is true and is reported as
// corruption when it is false (blocks that are never compressed, such as
// the compression dictionary); an uncompressed block aliases buf.
func (r *Reader) readRaw(h blockHandle, buf []byte, decompress bool) ([]byte, error) {
	if err := r.checkHandle(h); err != nil {
		return nil, err
	}
	n := int(h.size) + blockTrailerLen
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if err := r.readAt(buf, int64(h.offset)); err != nil {
		return nil, err
	}
	return r.decodeRaw(h, buf, decompress)
}

// checkHandle reports whether h lies within the blocks of the file.
func (r *Reader) checkHandle(h blockHandle) error {
	if h.size > r.dataEnd || h.offset > r.dataEnd-h.size || r.dataEnd-h.size-h.offset < blockTrailerLen {
		return r.corruptf("block handle (offset %d, size %d) beyond end of data %d", h.offset, h.size, r.dataEnd)
	}
	return nil
}

// decodeRaw verifies the checksum of the block h whose bytes, trailer
// included, are buf, and decompresses it when decompress is true. An
// uncompressed block aliases buf.
func (r *Reader) decodeRaw(h blockHandle, buf []byte, decompress bool) ([]byte, error) {
	return r.decodeRawTo(h, buf, decompress, nil)
}

// decodeRawTo is decodeRaw decompressing into alloc(n) where the output
// size n is known before decompressing (nil: a new heap buffer); the
// result may still be a heap buffer of its own (formats whose size is not
// known first).
func (r *Reader) decodeRawTo(h blockHandle, buf []byte, decompress bool, alloc func(int) []byte) ([]byte, error) {
	data, ct := buf[:h.size], buf[h.size]
	if t := r.footer.checksum; t != checksum.None {
		stored := binary.LittleEndian.Uint32(buf[h.size+1:])
		if got := checksum.Block(t, data, ct); got != stored {
			return nil, r.corruptf("block checksum mismatch at offset %d size %d: stored %#08x, computed %#08x, type %s",
				h.offset, h.size, stored, got, t)
		}
	}
	if ct == byte(NoCompression) || r.noCompression {
		return data, nil
	}
	if !decompress {
		return nil, r.corruptf("unexpected compressed block (type %d) at offset %d", ct, h.offset)
	}
	out, msg := decompressBlock(Compression(ct), data, r.footer.formatVersion, r.dict, alloc)
	if msg != "" {
		return nil, r.corruptf("block at offset %d size %d: %s", h.offset, h.size, msg)
	}
	return out, nil
}

func (r *Reader) readMetaindex() error {
	h := r.footer.metaindex
	b, err := r.readRaw(h, nil, true)
	if err != nil {
		return err
	}
	var it blockIter
	if !it.init(b, bytes.Compare) {
		return r.corruptf("bad metaindex block at offset %d", h.offset)
	}
	r.metaHandles = make(map[string]blockHandle)
	for ok := it.first(); ok; ok = it.next() {
		mh, n := decodeHandle(it.value())
		if n <= 0 {
			return r.corruptf("bad handle in metaindex block at offset %d", h.offset)
		}
		r.metaHandles[string(it.key)] = mh
	}
	if it.corrupt {
		return r.corruptf("bad metaindex block at offset %d", h.offset)
	}
	return nil
}

func (r *Reader) readProperties() error {
	h, ok := r.metaHandles[metaProperties]
	if !ok {
		h, ok = r.metaHandles[metaPropertiesOld]
	}
	if !ok {
		r.props = &Properties{}
	} else {
		b, err := r.readPropertiesBlock(h)
		if err != nil {
			return err
		}
		p, msg := decodeProperties(b)
		if msg != "" {
			return r.corruptf("%s (properties block at offset %d)", msg, h.offset)
		}
		r.props = p
	}
	p := r.props
	p.FormatVersion = r.footer.formatVersion
	p.ChecksumType = r.footer.checksum
	r.noCompression = p.HasCompressionName && p.CompressionName == NoCompression.String()
	r.userKeyIndex = p.IndexKeyIsUserKey
	r.deltaIndex = p.IndexValueIsDeltaEncoded
	r.firstKeyIndex = p.IndexType == IndexBinarySearchWithFirstKey
	if err := r.resolveComparer(); err != nil {
		return err
	}
	r.indexCmp = r.dataCmp
	if r.userKeyIndex {
		r.indexCmp = r.cmp.Compare
	}
	if p.IndexType > IndexBinarySearchWithFirstKey {
		return r.corruptf("unknown index type %d", p.IndexType)
	}
	return r.setGlobalSeq()
}

// Comparer returns the order the table is read in (never nil).
func (r *Reader) Comparer() *Comparer { return r.cmp }

// resolveComparer settles the table's order (see ReaderOptions.Comparer).
func (r *Reader) resolveComparer() error {
	r.cmp = r.opts.Comparer
	if r.cmp == nil {
		name := r.props.ComparatorName
		if r.opts.ComparerByName != nil {
			r.cmp = r.opts.ComparerByName(name)
		}
		if r.cmp == nil {
			r.cmp = base.BuiltinComparer(name)
		}
		if r.cmp == nil {
			return base.InvalidArgumentf("table %s: comparator %q is not known", r.opts.FileName, name)
		}
	}
	// Bound once: a method value allocates, and data blocks are opened
	// on every seek. Bytewise tables take the plain function, which a
	// bytewise comparer's method would only forward to.
	r.dataCmp = r.cmp.CompareEncoded
	if r.cmp.Bytewise {
		r.dataCmp = base.CompareEncoded
	}
	return nil
}

// initIndexIter prepares it to walk an index block (or partition).
// checked says the block was accepted by a full init before: readIndex
// checks every index block and partition once when the table opens, and
// they stay pinned, so later iterators skip the O(restarts) check.
func (r *Reader) initIndexIter(it *blockIter, block []byte, firstKey, checked bool) bool {
	it.isIndex, it.deltaValues, it.firstKey = true, r.deltaIndex, firstKey
	var ok bool
	if checked {
		ok = it.initTrusted(block, r.indexCmp)
	} else {
		ok = it.init(block, r.indexCmp)
	}
	if r.cmp.Bytewise {
		if r.userKeyIndex {
			it.setMode(cmpBytewise)
		} else {
			it.setMode(cmpInternal)
		}
	}
	return ok
}

func (r *Reader) readIndex() error {
	h := r.footer.index
	b, err := r.readRaw(h, nil, true)
	if err != nil {
		return err
	}
	r.index = b
	var it blockIter
	if !r.initIndexIter(&it, b, r.firstKeyIndex && r.props.IndexType != IndexTwoLevelSearch, false) {
		return r.corruptf("bad index block at offset %d", h.offset)
	}
	r.indexPrefixes = r.buildKeyPrefixes(b, r.firstKeyIndex && r.props.IndexType != IndexTwoLevelSearch)
	if r.props.IndexType != IndexTwoLevelSearch {
		return nil
	}
	r.twoLevel = true
	cached := r.cachesMetadata()
	if !cached {
		r.partitions = make(map[uint64][]byte)
	}
	for ok := it.first(); ok; ok = it.next() {
		ph := it.handle
		if cached {
			if err := r.checkHandle(ph); err != nil {
				return err
			}
			continue
		}
		pb, err := r.readRaw(ph, nil, true)
		if err != nil {
			return err
		}
		var pit blockIter
		if !r.initIndexIter(&pit, pb, false, false) {
			return r.corruptf("bad index partition at offset %d", ph.offset)
		}
		r.partitions[ph.offset] = pb
		if kp := r.buildKeyPrefixes(pb, r.firstKeyIndex); kp != nil {
			if r.partPrefixes == nil {
				r.partPrefixes = make(map[uint64]*keyPrefixes)
			}
			r.partPrefixes[ph.offset] = kp
		}
	}
	if it.corrupt {
		return r.corruptf("bad index block at offset %d", h.offset)
	}
	return nil
}

func (r *Reader) readFilter() error {
	p := r.props
	r.wholeKeyFilter = !hasRaw(p, propWholeKeyFiltering) || p.WholeKeyFiltering
	r.prefixFilter = p.PrefixFiltering
	for _, name := range filterNameAliases {
		if h, ok := r.metaHandles[fullFilterPrefix+name]; ok {
			if r.cachesMetadata() {
				if err := r.checkHandle(h); err != nil {
					return err
				}
				r.filterH, r.cachedFilter = h, true
				return nil
			}
			b, err := r.readRaw(h, nil, false)
			if err != nil {
				return err
			}
			r.filter = b
			return nil
		}
		if h, ok := r.metaHandles[partFilterPrefix+name]; ok {
			pf, err := r.readPartitionedFilter(h)
			if err != nil {
				return err
			}
			r.partFilter = pf
			return nil
		}
	}
	return nil
}

func hasRaw(p *Properties, name string) bool {
	for _, e := range p.Raw {
		if e.Name == name {
			return true
		}
	}
	return false
}

func (r *Reader) readRangeDels() error {
	h, ok := r.metaHandles[metaRangeDel]
	if !ok {
		return nil
	}
	b, err := r.readRaw(h, nil, true)
	if err != nil {
		return err
	}
	var it blockIter
	if !it.init(b, r.dataCmp) {
		return r.corruptf("bad range deletion block at offset %d", h.offset)
	}
	for ok := it.first(); ok; ok = it.next() {
		k, ok := base.DecodeInternalKey(it.key)
		if !ok || k.Kind() != base.KindRangeDelete {
			return r.corruptf("bad range deletion key in block at offset %d", h.offset)
		}
		seq := k.SeqNum()
		if r.hasGlobalSeq {
			seq = r.globalSeq
		}
		r.tombstones = append(r.tombstones, base.Tombstone{
			Start: bytes.Clone(k.UserKey), End: bytes.Clone(it.value()), Seq: seq})
	}
	if it.corrupt {
		return r.corruptf("bad range deletion block at offset %d", h.offset)
	}
	sort.SliceStable(r.tombstones, func(i, j int) bool {
		return r.cmp.CompareUser(r.tombstones[i].Start, r.tombstones[j].Start) < 0
	})
	return nil
}

// Properties returns the table's properties. Callers must not modify them.
func (r *Reader) Properties() *Properties { return r.props }

// Tombstones returns the range deletions, sorted by start key. Callers must
// not modify them.
func (r *Reader) Tombstones() []Tombstone { return r.tombstones }

// FileNum returns the table's file number.
func (r *Reader) FileNum() uint64 { return r.opts.FileNum }

// HasFilter reports whether the table has a filter this reader uses.
func (r *Reader) HasFilter() bool { return r.filter != nil || r.cachedFilter || r.partFilter != nil }

// filterBlock returns the full filter block: the pinned one, or the one the
// cache holds, read from the file (checksum-verified) and cached on a miss,
// with the handle the caller releases after the probe. It returns nil, and
// no error, when there is no full filter or it is too large for the cache
// to keep (reading it for every probe would cost more than the data block
// it may save). A hit does not allocate.
func (r *Reader) filterBlock() ([]byte, cache.Handle, error) {
	if !r.cachedFilter {
		return r.filter, cache.Handle{}, nil
	}
	return r.cachedMetadataBlock(r.filterH, "reading filter block")
}

// cachedMetadataBlock returns the filter block (or filter partition) at h
// through the block cache: a hit, or a read verified, kept uncompressed
// and cached with cacheMetadata; with its handle, which the caller
// releases after its last use of the bytes. It returns nil, and no error,
// when the block could never be cached (larger than a cache shard): the
// caller then does without it. what names the block in a read error.
func (r *Reader) cachedMetadataBlock(h blockHandle, what string) ([]byte, cache.Handle, error) {
	c := r.opts.Cache
	if ch, ok := c.Get(r.cacheID, h.offset); ok {
		return ch.Bytes(), ch, nil
	}
	if !c.Fits(int(h.size) + blockTrailerLen) {
		return nil, cache.Handle{}, nil
	}
	ch := c.Alloc(int(h.size) + blockTrailerLen)
	b, err := r.readRaw(h, ch.Bytes(), false)
	if err != nil {
		ch.Release()
		return nil, cache.Handle{}, errors.Wrap(err, what)
	}
	ch.SetLen(len(b))
	r.cacheMetadata(h.offset, ch)
	return b, ch, nil
}

// cacheMetadata caches the index or filter block of ch at offset, with
// high priority under CacheIndexAndFilterBlocksWithHighPriority. The
// caller keeps (and releases) ch.
func (r *Reader) cacheMetadata(offset uint64, ch cache.Handle) {
	pri := cache.LowPriority
	if r.opts.CacheIndexAndFilterBlocksWithHighPriority {
		pri = cache.HighPriority
	}
	r.opts.Cache.Insert(r.cacheID, offset, ch, pri)
}

// KeyMayMatch probes the whole-key filter. It is true when there is no
// filter or the table was built without whole-key filtering, and when the
// filter cannot be read (see KeyMayMatchErr).
func (r *Reader) KeyMayMatch(ukey []byte) bool {
	ok, err := r.KeyMayMatchErr(ukey)
	return ok || err != nil
}

// KeyMayMatchErr is KeyMayMatch with the error of reading a filter block
// that is not pinned (ReaderOptions.CacheIndexAndFilterBlocks).
func (r *Reader) KeyMayMatchErr(ukey []byte) (bool, error) {
	if !r.wholeKeyFilter {
		return true, nil
	}
	return r.mayContain(ukey, 0, false)
}

// PrefixMayMatch probes the filter for a prefix. It is true when there is
// no filter or the table was built without a prefix extractor, and when
// the filter cannot be read (see PrefixMayMatchErr); callers check that
// the table's PrefixExtractorName matches theirs.
func (r *Reader) PrefixMayMatch(prefix []byte) bool {
	ok, err := r.PrefixMayMatchErr(prefix)
	return ok || err != nil
}

// PrefixMayMatchErr is PrefixMayMatch with the error of reading a filter
// block that is not pinned.
func (r *Reader) PrefixMayMatchErr(prefix []byte) (bool, error) {
	if !r.prefixFilter || (r.partFilter != nil && !r.prefixPartitions()) {
		return true, nil
	}
	return r.mayContain(prefix, 0, false)
}

// prefixPartitions reports whether a partitioned filter may be probed for
// a prefix in the partition the prefix itself selects. Its partition is the
// first whose key is >= the prefix; when the prefix's first key lies in the
// next partition, RocksDB's writer has added the prefix to this one too
// (the prefix of the key following a cut goes into the partition before
// it). That holds when every key with a prefix sorts at or after the
// prefix and the keys of a prefix are contiguous: a built-in extractor
// (fixed, capped or noop: a byte prefix of the key). Tables of a custom
// extractor are not probed for prefixes.
func (r *Reader) prefixPartitions() bool {
	return strings.HasPrefix(r.props.PrefixExtractorName, "rocksdb.")
}

// WholeKeyFiltering reports whether the filter holds whole keys: the
// table's whole.key.filtering property, true when the property is absent
// (older RocksDB tables), as RocksDB reads it.
func (r *Reader) WholeKeyFiltering() bool { return r.wholeKeyFilter }

// KeyMayMatchHash is KeyMayMatch for a key already hashed with
// bloom.HashKey, so that a lookup probing many tables hashes once.
func (r *Reader) KeyMayMatchHash(ukey []byte, h uint64) bool {
	ok, err := r.KeyMayMatchHashErr(ukey, h)
	return ok || err != nil
}

// KeyMayMatchHashErr is KeyMayMatchHash with the error of reading a filter
// block that is not pinned. It does not allocate when the block is pinned
// or cached.
func (r *Reader) KeyMayMatchHashErr(ukey []byte, h uint64) (bool, error) {
	if !r.wholeKeyFilter {
		return true, nil
	}
	return r.mayContain(ukey, h, true)
}

// PrefixMayMatchHash is PrefixMayMatch for a prefix already hashed with
// bloom.HashKey.
func (r *Reader) PrefixMayMatchHash(prefix []byte, h uint64) bool {
	ok, err := r.PrefixMayMatchHashErr(prefix, h)
	return ok || err != nil
}

// PrefixMayMatchHashErr is PrefixMayMatchHash with the error of reading a
// filter block that is not pinned.
func (r *Reader) PrefixMayMatchHashErr(prefix []byte, h uint64) (bool, error) {
	if !r.prefixFilter || (r.partFilter != nil && !r.prefixPartitions()) {
		return true, nil
	}
	return r.mayContain(prefix, h, true)
}

// mayContain probes the filter (the full filter, or key's partition) for
// key, a whole key or a prefix, with its bloom.HashKey hash h when hashed.
// It is true when the filter cannot be used (too large for the cache) and,
// with the error, when it cannot be read.
func (r *Reader) mayContain(key []byte, h uint64, hashed bool) (bool, error) {
	if r.partFilter != nil {
		return r.partFilter.mayContain(r, key, h, hashed)
	}
	f, fh, err := r.filterBlock()
	if f == nil || err != nil {
		return true, err
	}
	var may bool
	if hashed {
		may = bloom.MayContainHash(f, h, key)
	} else {
		may = bloom.MayContain(f, key)
	}
	fh.Release()
	return may, nil
}

// Close closes the file and frees the index and filter blocks the reader
// pinned. The caller closes the Reader after its last use, iterators
// included: a read after Close may fault.
//
// The table's blocks stay in the block cache: their id is this reader's
// alone, so no later reader looks them up, and they age out like any cold
// block (as in RocksDB). Evicting them here cost a scan of the whole cache
// per Close (about 2.5 ms on a full 1 GiB cache).
func (r *Reader) Close() error {
	if r.closed.Swap(true) {
		return nil // closed already: the file and dictionary are not closed twice
	}
	if r.dict != nil {
		r.dict.Close()
	}
	err := r.f.Close()
	r.freePinned()
	return err
}

// String names the table for messages.
func (r *Reader) String() string {
	return strings.TrimSpace(r.opts.FileName)
}
