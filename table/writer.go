package table

import (
	"bytes"
	"encoding/binary"
	"io"
	"slices"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/bloom"
	"github.com/stratadb/strata/internal/checksum"
)

// WriterMetadata describes a finished table.
type WriterMetadata struct {
	Size uint64
	// Smallest and Largest bound the point keys and the range tombstones
	// (a tombstone contributes (Start, Seq, RangeDelete) and
	// (End, MaxSeqNum, RangeDelete)), as in RocksDB's MANIFEST.
	Smallest, Largest       InternalKey
	SmallestSeq, LargestSeq SeqNum
	NumEntries              uint64 // point entries
	NumDeletions            uint64 // Delete + SingleDelete + range tombstones
	NumRangeDeletions       uint64
	HasPointKeys            bool
}

// indexEntry is one pending index entry: the separator as an internal key
// and the handle of the data block it closes.
type indexEntry struct {
	sep    []byte // encoded internal key
	handle blockHandle
}

// Writer writes one table. It is not safe for concurrent use.
//
// Invariants: lastKey is the last added internal key (encoded); the data
// block in progress holds keys > every key of flushed blocks; pending is
// true when a data block was flushed and its index entry waits for the next
// key (or Finish) to choose a separator; offset is the number of bytes
// written so far; err is sticky.
type Writer struct {
	cmp  *base.Comparer
	w    io.Writer
	opts WriterOptions
	err  error

	offset   uint64
	data     blockWriter
	index    []indexEntry
	sepBuf   []byte
	pending  bool
	pendingH blockHandle
	lastKey  []byte
	// userKeyIndex is false once a user key straddles a block boundary.
	userKeyIndex bool
	blockLastUK  []byte // user key ending the last flushed block

	filter       *bloom.Builder
	lastFilterUK []byte
	lastPrefix   []byte
	hasLastUK    bool
	hasPrefix    bool

	tombstones []base.Tombstone
	compBuf    []byte
	trailer    [blockTrailerLen]byte

	props Properties
	meta  WriterMetadata
	// external adds RocksDB's external-file properties (ExternalWriter).
	external bool
	// part, when not nil, cuts the index (and the filter) into partitions.
	part *partitioner
}

// NewWriter returns a Writer that writes a table to w. Errors in opts are
// reported by the first Add or Finish.
func NewWriter(w io.Writer, opts WriterOptions) *Writer {
	opts = opts.withDefaults()
	wr := &Writer{w: w, opts: opts, err: opts.validate(), userKeyIndex: opts.FormatVersion >= 3,
		cmp: opts.Comparer.OrDefault()}
	wr.data.restartInterval = opts.BlockRestartInterval
	if opts.BloomBitsPerKey > 0 && (opts.WholeKeyFiltering || opts.PrefixExtractor != nil) {
		format := bloom.Legacy
		if opts.FormatVersion >= 5 {
			format = bloom.FastLocal
		}
		wr.filter = bloom.NewBuilder(opts.BloomBitsPerKey, format)
	}
	if opts.TwoLevelIndex {
		wr.part = newPartitioner(wr)
	}
	return wr
}

// Add appends a point entry. Keys must be strictly increasing in
// internal-key order. Range deletions go through AddTombstone.
func (w *Writer) Add(key InternalKey, value []byte) error {
	if w.err != nil {
		return w.err
	}
	switch key.Kind() {
	case base.KindSet, base.KindMerge, base.KindDelete, base.KindSingleDelete, base.KindBlobIndex:
	default:
		return base.InvalidArgumentf("table: cannot add key of kind %s", key.Kind())
	}
	if w.meta.HasPointKeys {
		prev, _ := base.DecodeInternalKey(w.lastKey)
		if w.cmp.InternalCompare(prev, key) >= 0 {
			return base.InvalidArgumentf("table: keys out of order: %s after %s", key, prev)
		}
	}
	if w.pending {
		w.addIndexEntry(key)
	}
	if w.data.nEntries > 0 && w.shouldFlush(key, value) {
		if err := w.flushData(); err != nil {
			return err
		}
		w.addIndexEntry(key)
	}
	w.addFilter(key.UserKey)
	w.lastKey = key.Append(w.lastKey[:0])
	w.data.add(w.lastKey, value)
	w.account(key, value)
	return nil
}

func (w *Writer) account(key base.InternalKey, value []byte) {
	m := &w.meta
	if !m.HasPointKeys {
		m.Smallest = key.Clone()
		m.HasPointKeys = true
	}
	m.NumEntries++
	switch key.Kind() {
	case base.KindDelete, base.KindSingleDelete:
		m.NumDeletions++
	case base.KindMerge:
		w.props.NumMergeOperands++
	}
	w.seq(key.SeqNum())
	w.props.RawKeySize += uint64(key.Size())
	w.props.RawValueSize += uint64(len(value))
}

func (w *Writer) seq(s base.SeqNum) {
	m := &w.meta
	if m.NumEntries+m.NumRangeDeletions == 1 || s < m.SmallestSeq {
		m.SmallestSeq = s
	}
	if s > m.LargestSeq {
		m.LargestSeq = s
	}
}

// shouldFlush applies RocksDB's FlushBlockBySizePolicy before key is added.
func (w *Writer) shouldFlush(key base.InternalKey, value []byte) bool {
	cur := w.data.estimatedSize()
	if cur >= w.opts.BlockSize {
		return true
	}
	limit := (w.opts.BlockSize*(100-blockSizeDeviation) + 99) / 100
	return w.data.sizeAfter(key.UserKey, value)+base.TrailerLen > w.opts.BlockSize && cur > limit
}

// addIndexEntry records the pending block's index entry with a separator
// between the block's last key and next (the first key of the next block).
func (w *Writer) addIndexEntry(next base.InternalKey) {
	if w.part != nil {
		w.part.beforeEntry(w, w.blockLastKey(), w.pendingH)
	}
	last, _ := base.DecodeInternalKey(w.blockLastKey())
	var sep []byte
	if w.cmp.Bytewise {
		if bytes.Equal(last.UserKey, next.UserKey) {
			w.userKeyIndex = false
		}
		w.sepBuf = findShortestSeparator(w.sepBuf[:0], last.UserKey, next.UserKey)
	} else {
		if w.cmp.Compare(last.UserKey, next.UserKey) == 0 {
			w.userKeyIndex = false
		}
		w.sepBuf = append(w.sepBuf[:0], last.UserKey...)
		if w.cmp.Separator != nil {
			w.sepBuf = w.cmp.Separator(w.sepBuf[:0], last.UserKey, next.UserKey)
		}
	}
	// As RocksDB's InternalKeyComparator: a separator no longer than the
	// user key (<=, not LevelDB's <) but larger replaces the block's last key.
	if len(w.sepBuf) <= len(last.UserKey) && w.cmp.CompareUser(last.UserKey, w.sepBuf) < 0 {
		sep = base.MakeInternalKey(w.sepBuf, base.MaxSeqNum, base.KindSeek).Append(nil)
	} else {
		sep = last.Append(nil)
	}
	w.index = append(w.index, indexEntry{sep: sep, handle: w.pendingH})
	w.pending = false
	if w.part != nil {
		w.part.added(w)
	}
}

func (w *Writer) blockLastKey() []byte { return w.blockLastUK }

func (w *Writer) addFilter(ukey []byte) {
	if w.filter == nil {
		return
	}
	if w.part != nil && w.part.filters {
		w.part.addFilter(w, ukey)
		return
	}
	if pe := w.opts.PrefixExtractor; pe != nil && pe.InDomain(ukey) {
		p := pe.Transform(ukey)
		if !w.hasPrefix || !bytes.Equal(p, w.lastPrefix) {
			w.filter.AddKey(p)
			w.lastPrefix = append(w.lastPrefix[:0], p...)
			w.hasPrefix = true
		}
	}
	if w.opts.WholeKeyFiltering && (!w.hasLastUK || !bytes.Equal(ukey, w.lastFilterUK)) {
		w.filter.AddKey(ukey)
		w.lastFilterUK = append(w.lastFilterUK[:0], ukey...)
		w.hasLastUK = true
	}
}

// flushData writes the data block in progress.
func (w *Writer) flushData() error {
	raw := w.data.finish()
	h, err := w.writeBlock(raw, w.opts.Compression)
	if err != nil {
		return err
	}
	w.props.NumDataBlocks++
	w.props.DataSize += h.size + blockTrailerLen
	w.blockLastUK = append(w.blockLastUK[:0], w.data.lastKey...)
	w.pendingH = h
	w.pending = true
	w.data.reset()
	return nil
}

// writeBlock writes a block (compressed with c when worthwhile) and its
// trailer, and returns its handle.
func (w *Writer) writeBlock(raw []byte, c Compression) (blockHandle, error) {
	stored, ct := raw, NoCompression
	if c != NoCompression {
		if out := compressBlock(w.compBuf, raw, c, w.opts.FormatVersion); out != nil {
			stored, ct = out, c
			w.compBuf = out[:0]
		}
	}
	w.trailer[0] = byte(ct)
	binary.LittleEndian.PutUint32(w.trailer[1:], checksum.Block(w.opts.Checksum, stored, byte(ct)))
	h := blockHandle{offset: w.offset, size: uint64(len(stored))}
	if err := w.write(stored); err != nil {
		return h, err
	}
	return h, w.write(w.trailer[:])
}

func (w *Writer) write(b []byte) error {
	if w.err != nil {
		return w.err
	}
	n, err := w.w.Write(b)
	w.offset += uint64(n)
	if err != nil {
		w.err = errors.Wrap(err, "strata: table write")
	}
	return w.err
}

// AddTombstone adds a range deletion [t.Start, t.End) at t.Seq.
// Tombstones may come in any order; Finish sorts them.
func (w *Writer) AddTombstone(t Tombstone) error {
	if w.err != nil {
		return w.err
	}
	if w.cmp.CompareUser(t.Start, t.End) >= 0 {
		return base.InvalidArgumentf("table: empty tombstone %s", t)
	}
	w.tombstones = append(w.tombstones, base.Tombstone{
		Start: slices.Clone(t.Start), End: slices.Clone(t.End), Seq: t.Seq})
	w.meta.NumRangeDeletions++
	w.meta.NumDeletions++
	w.seq(t.Seq)
	return nil
}

// EstimatedSize is the number of bytes written plus the data block in
// progress.
func (w *Writer) EstimatedSize() uint64 {
	return w.offset + uint64(w.data.estimatedSize())
}
