package version

import (
	"fmt"

	"github.com/stratadb/strata/internal/base"
)

// NumLevels is the number of levels of the LSM tree.
const NumLevels = 7

// unknownChecksumFuncName is what RocksDB records for a table without a
// file checksum.
const unknownChecksumFuncName = "Unknown"

// FileMetadata describes one table file.
//
// Invariants: Smallest <= Largest in internal-key order; SmallestSeq <=
// LargestSeq; the keys own their bytes (never alias a buffer). Everything but
// Compacting is immutable once the file is in a Version.
type FileMetadata struct {
	FileNum uint64
	Size    uint64
	// Smallest and Largest bound the file's keys, point keys and range
	// tombstones alike. Largest may be a range-deletion sentinel
	// (end key, MaxSeqNum, KindRangeDelete), an exclusive bound.
	Smallest, Largest base.InternalKey
	// SmallestSeq and LargestSeq bound the sequence numbers in the file.
	SmallestSeq, LargestSeq base.SeqNum
	// CreationTime and OldestAncesterTime are Unix seconds (0 = unknown).
	// The spelling follows RocksDB's.
	CreationTime       int64
	OldestAncesterTime int64
	// FileChecksum and FileChecksumFuncName are kept as read.
	FileChecksum         []byte
	FileChecksumFuncName string
	// MarkedForCompaction asks the compaction picker to rewrite the file.
	MarkedForCompaction bool
	// NumRangeDeletions is the number of range tombstones in the file,
	// meaningful only when RangeDelsKnown. Strata records it in the
	// MANIFEST as a safe-to-ignore NewFile4 custom field, so that a reader
	// can skip opening a table for its tombstones when it has none. A file
	// described by a MANIFEST that lacks the field (one RocksDB wrote) has
	// RangeDelsKnown false: its count is learned by opening it.
	NumRangeDeletions uint64
	RangeDelsKnown    bool

	// Compacting is set while a compaction reads the file. Guarded by the
	// db mutex; it is not recorded in the MANIFEST.
	Compacting bool
}

// IsSentinel reports whether k is a range-deletion sentinel: an exclusive
// upper bound, which may share its user key with the next file's smallest.
func IsSentinel(k base.InternalKey) bool {
	return k.Trailer == base.MakeTrailer(base.MaxSeqNum, base.KindRangeDelete)
}

// MayHaveRangeDeletions reports whether the file may hold range
// tombstones: it does unless its count is known to be zero.
func (f *FileMetadata) MayHaveRangeDeletions() bool {
	return !f.RangeDelsKnown || f.NumRangeDeletions > 0
}

func (f *FileMetadata) String() string {
	return fmt.Sprintf("%06d:%d[%d..%d][%s..%s]", f.FileNum, f.Size, f.SmallestSeq, f.LargestSeq,
		f.Smallest, f.Largest)
}

// clone returns a copy of f that owns its bytes.
func (f *FileMetadata) clone() *FileMetadata {
	c := *f
	c.Smallest = f.Smallest.Clone()
	c.Largest = f.Largest.Clone()
	c.FileChecksum = append([]byte(nil), f.FileChecksum...)
	c.Compacting = false
	return &c
}
