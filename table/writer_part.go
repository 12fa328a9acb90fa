package table

import (
	"bytes"
	"encoding/binary"

	"github.com/stratadb/strata/internal/base"
)

// partitioner is the Writer's state for a two-level index and, with
// PartitionFilters, for partitioned filters. It follows RocksDB 7.8's
// PartitionedIndexBuilder and PartitionedFilterBlockBuilder decision for
// decision, so that a table has the partitions RocksDB would cut:
//
//   - An index partition is cut before the entry of a newly flushed data
//     block is added when a cut was requested, or when the partition (in
//     the key form the index uses so far) is at least MetadataBlockSize, or
//     would pass it with the block's last key and handle while above the
//     10% deviation limit (FlushBlockBySizePolicy over the index block).
//   - A filter partition is cut exactly when an index partition is: by the
//     next filter Add, which first adds the prefix of that key (so that a
//     prefix probe that lands on the partition before the prefix's first
//     key still finds it). Its key is the separator of the index entry
//     just added (the last data block whose keys it holds).
//   - The filter asks for a cut once it holds keysPerPartition keys (the
//     number a filter of about 90% of MetadataBlockSize holds), counted as
//     RocksDB counts its AddKey calls.
//
// Invariants: cuts lists the end (exclusive, in Writer.index) of each
// finished index partition, start the first entry of the partition in
// progress; sizeUK and sizeIK are that partition's block size in user-key
// and internal-key form; cutFilter is set by an index cut and cleared by the
// filter cut that follows it.
type partitioner struct {
	metaSize int
	devLimit int

	cuts           []int
	start          int
	sizeUK, sizeIK int
	cutRequested   bool

	filters          bool
	cutFilter        bool
	keysPerPartition int
	keysInPartition  int
	anyFilterKey     bool
	numFilterEntries uint64
	filterParts      []filterPart
	lastWhole        []byte
	hasWhole         bool
	// lastPrefix outlives a cut (hasPrefix does not), as RocksDB's
	// last_prefix_str_ does: the next-key prefix added at a cut compares
	// with it.
	lastPrefix []byte
	hasPrefix  bool
	// lastInDomain: the last key added was in the extractor's domain.
	lastInDomain bool
}

type filterPart struct {
	key  []byte // encoded internal key
	data []byte
}

func newPartitioner(w *Writer) *partitioner {
	o := &w.opts
	p := &partitioner{
		metaSize: o.MetadataBlockSize,
		devLimit: (o.MetadataBlockSize*(100-blockSizeDeviation) + 99) / 100,
		filters:  o.PartitionFilters && w.filter != nil,
	}
	p.resetSizes()
	if p.filters {
		// As RocksDB: aim a partition's filter at the deviation limit, the
		// size an index partition may be cut at.
		size := max(p.devLimit, 1)
		p.keysPerPartition = w.filter.ApproximateNumEntries(size)
		if p.keysPerPartition < 1 {
			for larger := max(size+4, 16); ; larger += larger / 4 {
				if p.keysPerPartition = w.filter.ApproximateNumEntries(larger); p.keysPerPartition >= 1 {
					break
				}
				if larger > 100000 {
					p.keysPerPartition = size
					break
				}
			}
		}
	}
	return p
}

func (p *partitioner) resetSizes() {
	// An index block's restart count; each entry adds its restart.
	p.sizeUK, p.sizeIK = 4, 4
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

func handleLen(h blockHandle) int { return uvarintLen(h.offset) + uvarintLen(h.size) }

// beforeEntry decides, before the entry of the block that ends with the
// internal key lastKey is added, whether the partition in progress is cut
// (RocksDB applies the flush policy only while adding a block followed by
// another one).
func (p *partitioner) beforeEntry(w *Writer, lastKey []byte, h blockHandle) {
	if len(w.index) == p.start {
		return
	}
	cur := p.sizeIK
	if w.userKeyIndex {
		cur = p.sizeUK
	}
	k, v := len(lastKey), handleLen(h)
	after := cur + k + v + 4 + 4 + uvarintLen(uint64(k)) + uvarintLen(uint64(v))
	if p.cutRequested || cur >= p.metaSize || (after > p.metaSize && cur > p.devLimit) {
		p.cut(len(w.index))
	}
}

// added accounts for the entry just appended to w.index.
func (p *partitioner) added(w *Writer) {
	if len(w.index)-1 == p.start {
		p.cutRequested = false // a new partition: RocksDB's new sub-builder
	}
	e := w.index[len(w.index)-1]
	v := handleLen(e.handle)
	if w.opts.FormatVersion < 4 {
		v += uvarintLen(uint64(v))
	}
	ik := len(e.sep)
	uk := ik - base.TrailerLen
	p.sizeIK += 1 + uvarintLen(uint64(ik)) + ik + v + 4
	p.sizeUK += 1 + uvarintLen(uint64(uk)) + uk + v + 4
}

func (p *partitioner) cut(end int) {
	p.cuts = append(p.cuts, end)
	p.start = end
	p.resetSizes()
	p.cutFilter = true
}

// addFilter is FullFilterBlockBuilder::Add for a partitioned filter, cut
// first if the index was just cut. hasPrefix is RocksDB's
// last_prefix_recorded_: only whole-key filtering records prefixes, so
// without it the (never assigned, empty) last prefix is added once per
// partition, as RocksDB 7.8 does.
func (p *partitioner) addFilter(w *Writer, ukey []byte) {
	p.maybeCutFilter(w, ukey, true)
	pe := w.opts.PrefixExtractor
	whole := w.opts.WholeKeyFiltering
	if pe == nil {
		if whole {
			p.addKey(w, ukey)
		}
		return
	}
	inDomain := pe.InDomain(ukey)
	if !p.hasPrefix && p.lastInDomain {
		// A new partition (or, without whole keys, the first Add after an
		// in-domain key) starts with the last recorded prefix, as RocksDB
		// does for prefix SeekForPrev.
		p.addKey(w, p.lastPrefix)
		p.hasPrefix = true
	}
	p.lastInDomain = inDomain
	if whole {
		if !inDomain {
			p.addKey(w, ukey)
		} else if !p.hasWhole || !bytes.Equal(p.lastWhole, ukey) {
			p.addKey(w, ukey)
			p.lastWhole = append(p.lastWhole[:0], ukey...)
			p.hasWhole = true
		}
	}
	if !inDomain {
		return
	}
	pfx := pe.Transform(ukey)
	if !whole {
		p.addKey(w, pfx)
		return
	}
	if !p.hasPrefix || !bytes.Equal(p.lastPrefix, pfx) {
		p.addKey(w, pfx)
		p.lastPrefix = append(p.lastPrefix[:0], pfx...)
		p.hasPrefix = true
	}
}

func (p *partitioner) addKey(w *Writer, key []byte) {
	w.filter.AddKey(key)
	p.anyFilterKey = true
	p.keysInPartition++
}

// maybeCutFilter is MaybeCutAFilterBlock: request an index cut once the
// partition is full, and cut the filter partition after an index cut.
func (p *partitioner) maybeCutFilter(w *Writer, next []byte, hasNext bool) {
	if p.keysInPartition == p.keysPerPartition {
		p.cutRequested = true
	}
	if !p.cutFilter {
		return
	}
	p.cutFilter = false
	if pe := w.opts.PrefixExtractor; hasNext && pe != nil && pe.InDomain(next) {
		if np := pe.Transform(next); !bytes.Equal(np, p.lastPrefix) {
			p.addKey(w, np)
		}
	}
	p.numFilterEntries += uint64(w.filter.NumEntries())
	data := w.filter.Finish()
	w.filter.Reset()
	key := bytes.Clone(w.index[len(w.index)-1].sep)
	p.filterParts = append(p.filterParts, filterPart{key: key, data: data})
	p.keysInPartition = 0
	p.hasWhole, p.hasPrefix = false, false
}

// indexKey returns the stored form of an index separator.
func (w *Writer) indexKey(sep []byte) []byte {
	if w.userKeyIndex {
		return sep[:len(sep)-base.TrailerLen]
	}
	return sep
}

// writePartitionedFilter writes the filter partitions and the index over
// them, and returns the index's handle. ok is false when no key reached
// the filter (no filter block, as RocksDB).
func (w *Writer) writePartitionedFilter() (h blockHandle, ok bool, err error) {
	p := w.part
	if !p.anyFilterKey {
		w.filter.Release()
		return h, false, nil
	}
	p.maybeCutFilter(w, nil, false)
	w.filter.Release()
	w.props.NumFilterEntries = p.numFilterEntries
	bw := blockWriter{restartInterval: 1, noValueLen: w.opts.FormatVersion >= 4}
	var val []byte
	for _, fp := range p.filterParts {
		ph, err := w.writeBlock(fp.data, NoCompression)
		if err != nil {
			return h, false, err
		}
		w.props.FilterSize += uint64(len(fp.data))
		val = ph.append(val[:0])
		bw.add(w.indexKey(fp.key), val)
	}
	p.filterParts = nil
	top := bw.finish()
	w.props.FilterSize += uint64(len(top))
	h, err = w.writeBlock(top, NoCompression)
	return h, err == nil, err
}

// writeTwoLevelIndex writes the index partitions and the top-level index
// over them (keyed by each partition's last separator), and returns the
// top-level index's handle. As RocksDB, the index size property counts the
// blocks' uncompressed contents (and one trailer).
func (w *Writer) writeTwoLevelIndex() (blockHandle, error) {
	p := w.part
	noValueLen := w.opts.FormatVersion >= 4
	top := blockWriter{restartInterval: 1, noValueLen: noValueLen}
	bw := blockWriter{restartInterval: 1, noValueLen: noValueLen}
	var val []byte
	size := 0
	start := 0
	for _, end := range p.cuts {
		bw.reset()
		for _, e := range w.index[start:end] {
			val = e.handle.append(val[:0])
			bw.add(w.indexKey(e.sep), val)
		}
		raw := bw.finish()
		size += len(raw)
		h, err := w.writeBlock(raw, w.opts.Compression)
		if err != nil {
			return h, err
		}
		val = h.append(val[:0])
		top.add(w.indexKey(w.index[end-1].sep), val)
		start = end
	}
	raw := top.finish()
	size += len(raw)
	w.props.IndexPartitions = uint64(len(p.cuts))
	w.props.TopLevelIndexSize = uint64(len(raw))
	w.props.IndexSize = uint64(size) + blockTrailerLen
	return w.writeBlock(raw, w.opts.Compression)
}

// appendIndexTypeProps adds the index type and, for a two-level index,
// its partition properties.
func (w *Writer) appendIndexTypeProps(out []Property) []Property {
	typ := uint32(IndexBinarySearch)
	if w.part != nil {
		typ = IndexTwoLevelSearch
		if w.props.IndexPartitions != 0 {
			out = append(out,
				Property{Name: propIndexPartitions, Value: binary.AppendUvarint(nil, w.props.IndexPartitions)},
				Property{Name: propTopLevelIndexSize, Value: binary.AppendUvarint(nil, w.props.TopLevelIndexSize)})
		}
	}
	return append(out, Property{Name: propIndexType, Value: binary.LittleEndian.AppendUint32(nil, typ)})
}
