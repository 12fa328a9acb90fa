package table

import (
	"bytes"
	"io"
	"slices"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/prefix"
)

// ErrInvalidArgument is the error class of calls made out of order or with
// bad arguments. It is the value db.ErrInvalidArgument names, so
// errors.Is works with either.
var ErrInvalidArgument = base.ErrInvalidArgument

// ErrCorruption is the error class of damaged files; it is the value
// db.ErrCorruption names.
var ErrCorruption = base.ErrCorruption

// unknownColumnFamily is RocksDB's kUnknownColumnFamily, the column family
// id SstFileWriter records when it is not told one: the file may be
// ingested into any column family.
const unknownColumnFamily = 0x7fffffff

// ExternalWriterOptions configure an ExternalWriter. Zero values are the
// defaults.
type ExternalWriterOptions struct {
	// BlockSize is the target uncompressed size of a data block; 0 means
	// 4096.
	BlockSize int
	// Compression of data and index blocks; default NoCompression.
	Compression Compression
	// BloomBitsPerKey adds a Bloom filter with that many bits per key;
	// 0 = no filter.
	BloomBitsPerKey int
	// PrefixExtractor, when set, adds the prefixes of in-domain keys to
	// the filter and records its Name in the file.
	PrefixExtractor prefix.Extractor
	// NoWholeKeyFiltering leaves whole keys out of the filter (only
	// prefixes go in).
	NoWholeKeyFiltering bool
	// Comparer orders the file's keys; it must be the comparer of the
	// column family the file is ingested into (Ingest refuses a file whose
	// rocksdb.comparator property is another's). A db.Comparer fits it:
	// db.ReverseBytewiseComparer() for a reverse family, or the user
	// comparer the family was opened with, whose optional Separator and
	// Successor methods (see db.Comparer) shorten the file's index keys.
	// Nil: bytewise (leveldb.BytewiseComparator).
	Comparer KeyComparer
}

// KeyComparer is the order of an external file's keys: db.Comparer's
// methods, so that any db.Comparer is one.
type KeyComparer interface {
	Name() string
	Compare(a, b []byte) int
}

// ExternalFileInfo describes a finished external table file.
type ExternalFileInfo struct {
	// Size is the file's length in bytes.
	Size uint64
	// Smallest and Largest are the smallest and largest user keys of the
	// point entries (Put and Delete), in the comparer's order; nil when
	// there are none.
	Smallest, Largest []byte
	// NumEntries counts the point entries.
	NumEntries uint64
	// SmallestRangeDel and LargestRangeDel are the smallest start and the
	// largest (exclusive) end of the range deletions, in the comparer's
	// order; nil when there are none.
	SmallestRangeDel, LargestRangeDel []byte
	// NumRangeDeletions counts the range deletions.
	NumRangeDeletions uint64
}

// ExternalWriter writes a table file meant to be ingested into a database
// (db.DB.Ingest, or RocksDB's IngestExternalFile): the Go counterpart of
// RocksDB's SstFileWriter. Point entries are added with user keys in
// strictly ascending order of ExternalWriterOptions.Comparer (bytewise by
// default); every entry is stored with sequence
// number 0 and the file carries RocksDB's external-file properties
// (rocksdb.external_sst_file.version 2, global_seqno 0), so the database
// that ingests it assigns the sequence number.
//
// An ExternalWriter is not safe for concurrent use. After an error other
// than an out-of-order key, the writer is unusable.
type ExternalWriter struct {
	w       *Writer
	cmp     *base.Comparer
	lastKey []byte
	hasLast bool
	info    ExternalFileInfo
	done    bool
}

// NewExternalWriter returns a writer of an external table file to w. The
// caller syncs and closes the underlying file after Finish.
func NewExternalWriter(w io.Writer, opts ExternalWriterOptions) *ExternalWriter {
	cmp := base.FromKeyComparer(opts.Comparer)
	wo := WriterOptions{
		Comparer:          cmp,
		BlockSize:         opts.BlockSize,
		Compression:       opts.Compression,
		BloomBitsPerKey:   opts.BloomBitsPerKey,
		PrefixExtractor:   opts.PrefixExtractor,
		WholeKeyFiltering: !opts.NoWholeKeyFiltering,
		ColumnFamilyID:    unknownColumnFamily,
	}
	tw := NewWriter(w, wo)
	tw.external = true
	return &ExternalWriter{w: tw, cmp: cmp}
}

// Put adds key with value. key must sort after every key added before.
func (x *ExternalWriter) Put(key, value []byte) error {
	return x.add(key, value, base.KindSet)
}

// Delete adds a deletion of key. key must sort after every key added
// before.
func (x *ExternalWriter) Delete(key []byte) error {
	return x.add(key, nil, base.KindDelete)
}

func (x *ExternalWriter) add(key, value []byte, kind base.Kind) error {
	if x.done {
		return base.InvalidArgumentf("table: external writer used after Finish")
	}
	if x.hasLast && x.cmp.CompareUser(key, x.lastKey) <= 0 {
		what := "out of order"
		if bytes.Equal(key, x.lastKey) {
			what = "duplicate"
		}
		return base.InvalidArgumentf("table: external file key %q is %s (previous key %q)", key, what, x.lastKey)
	}
	if err := x.w.Add(base.MakeInternalKey(key, 0, kind), value); err != nil {
		return err
	}
	x.lastKey = append(x.lastKey[:0], key...)
	if !x.hasLast {
		x.info.Smallest = slices.Clone(key)
	}
	x.hasLast = true
	x.info.NumEntries++
	return nil
}

// DeleteRange adds a deletion of every key in [start, end) (in the
// comparer's order) that the database holds when the file is ingested; the
// file's own points, which get the same sequence number, are not covered
// (as with RocksDB's SstFileWriter). Range deletions may come in any order relative to point
// entries and to each other. start > end is an error; start == end adds
// nothing.
func (x *ExternalWriter) DeleteRange(start, end []byte) error {
	if x.done {
		return base.InvalidArgumentf("table: external writer used after Finish")
	}
	switch c := x.cmp.CompareUser(start, end); {
	case c > 0:
		return base.InvalidArgumentf("table: external file range deletion start %q > end %q", start, end)
	case c == 0:
		return nil
	}
	if err := x.w.AddTombstone(base.Tombstone{Start: start, End: end, Seq: 0}); err != nil {
		return err
	}
	if x.info.NumRangeDeletions == 0 || x.cmp.CompareUser(start, x.info.SmallestRangeDel) < 0 {
		x.info.SmallestRangeDel = slices.Clone(start)
	}
	if x.info.NumRangeDeletions == 0 || x.cmp.CompareUser(end, x.info.LargestRangeDel) > 0 {
		x.info.LargestRangeDel = slices.Clone(end)
	}
	x.info.NumRangeDeletions++
	return nil
}

// Finish writes the rest of the file and returns its description. A file
// with no entry at all is refused (RocksDB refuses to finish one too).
func (x *ExternalWriter) Finish() (ExternalFileInfo, error) {
	if x.done {
		return ExternalFileInfo{}, base.InvalidArgumentf("table: external writer used after Finish")
	}
	if x.info.NumEntries == 0 && x.info.NumRangeDeletions == 0 {
		return ExternalFileInfo{}, base.InvalidArgumentf("table: cannot finish an external file with no entries")
	}
	x.done = true
	m, err := x.w.Finish()
	if err != nil {
		return ExternalFileInfo{}, err
	}
	if x.hasLast {
		x.info.Largest = slices.Clone(x.lastKey)
	}
	x.info.Size = m.Size
	return x.info, nil
}
