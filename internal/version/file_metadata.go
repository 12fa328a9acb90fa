package version

import (
	"fmt"
	"sync/atomic"

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
	// OldestBlobFile is the smallest blob file number among the file's
	// blob indexes (NewFile4 custom field 4), 0 when it has none. The
	// Version keeps that blob file while the table is live (see
	// Version.BlobFiles).
	OldestBlobFile uint64

	// Compacting is set while a compaction reads the file. Guarded by the
	// db mutex; it is not recorded in the MANIFEST.
	Compacting bool

	// seek is the file's read-triggered compaction budget, in memory only.
	// clone gives every file entering a Version a fresh one; a file built
	// by hand outside a Version has none and is never charged. The pointer
	// itself is immutable, so copying a FileMetadata while reads charge
	// its budget is not a race.
	seek *seekBudget
}

// SeekCostBytes is the compaction work one wasted seek is taken to cost:
// LevelDB's rule, one seek (about 10 ms of disk time in its reckoning)
// costs about as much as compacting 16 KiB.
const SeekCostBytes = 16 << 10

// MinAllowedSeeks is the smallest seek budget of a file.
const MinAllowedSeeks = 100

// seekBudget counts the seeks charged to a file.
type seekBudget struct {
	used     atomic.Int64
	recorded atomic.Bool // the file was made a seek-compaction candidate
}

// AllowedSeeks returns the number of wasted seeks f absorbs before a
// read-triggered compaction is due: max(100, Size/16 KiB).
func (f *FileMetadata) AllowedSeeks() int64 {
	return max(MinAllowedSeeks, int64(f.Size/SeekCostBytes))
}

// ChargeSeek charges one wasted seek to f: a read looked in f, did not
// find the key there, and had to read another table. It reports whether
// f's budget is spent and f has not yet been recorded as a seek-compaction
// candidate (see RecordSeekCandidate). It does not allocate; once f is
// recorded it only loads a flag.
func (f *FileMetadata) ChargeSeek() bool {
	s := f.seek
	if s == nil || s.recorded.Load() {
		return false
	}
	return s.used.Add(1) >= f.AllowedSeeks()
}

// RecordSeekCandidate marks f as recorded, so that ChargeSeek reports its
// spent budget no more. It returns false when f already was: each file
// becomes a candidate at most once.
func (f *FileMetadata) RecordSeekCandidate() bool {
	return f.seek != nil && f.seek.recorded.CompareAndSwap(false, true)
}

// SeeksUsed returns the seeks charged to f so far.
func (f *FileMetadata) SeeksUsed() int64 {
	if f.seek == nil {
		return 0
	}
	return f.seek.used.Load()
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
	c.seek = &seekBudget{}
	return &c
}
