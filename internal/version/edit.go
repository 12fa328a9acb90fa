package version

import (
	"encoding/binary"

	"github.com/stratadb/strata/internal/base"
)

// Edit tags (frozen on-disk values; see the package comment).
const (
	tagComparator         = 1
	tagLogNumber          = 2
	tagNextFileNumber     = 3
	tagLastSequence       = 4
	tagCompactCursor      = 5
	tagDeletedFile        = 6
	tagNewFile            = 7
	tagPrevLogNumber      = 9
	tagMinLogNumberToKeep = 10
	tagNewFile2           = 100
	tagNewFile3           = 102
	tagNewFile4           = 103
	tagColumnFamily       = 200
	tagColumnFamilyAdd    = 201
	tagColumnFamilyDrop   = 202
	tagMaxColumnFamily    = 203
	tagInAtomicGroup      = 300
	tagBlobFileAddition   = 400
	tagBlobFileGarbage    = 401
	tagSafeIgnoreMask     = 1 << 13
	tagDBID               = tagSafeIgnoreMask + 1
	tagWalAddition2       = tagSafeIgnoreMask + 7
	tagWalDeletion2       = tagSafeIgnoreMask + 8
)

// NewFile4 custom tags.
const (
	customTerminate           = 1
	customNeedCompaction      = 2
	customMinLogNumberHack    = 3
	customOldestBlobFile      = 4
	customOldestAncesterTime  = 5
	customFileCreationTime    = 6
	customFileChecksum        = 7
	customFileChecksumFunc    = 8
	customPathID              = 65
	customSafeIgnoreMaskBit64 = 64
)

// customNumRangeDeletions is Strata's own NewFile4 custom field: the file's
// range tombstone count (a varint in the field). Bit 6 is clear, so RocksDB
// skips it as safe to ignore; the value is far above RocksDB's own tags
// (1-16 as of RocksDB 8) so that a later RocksDB tag will not collide.
const customNumRangeDeletions = 0x1001

// Blob file record custom-field tags (RocksDB's blob_file_addition.h and
// blob_file_garbage.h): the list ends with blobEndMarker; a tag with
// blobForwardIncompatible set may not be skipped.
const (
	blobEndMarker           = 0
	blobForwardIncompatible = 1 << 6
)

// BlobFileAddition records a new blob file (kBlobFileAddition). TotalBytes
// counts each blob's record header, key and stored value, not the file's
// header and footer.
type BlobFileAddition struct {
	FileNum        uint64
	TotalCount     uint64
	TotalBytes     uint64
	ChecksumMethod string
	ChecksumValue  []byte
}

// BlobFileGarbage records blobs of a file that no table refers to any more
// (kBlobFileGarbage), counted as BlobFileAddition counts them.
type BlobFileGarbage struct {
	FileNum      uint64
	GarbageCount uint64
	GarbageBytes uint64
}

// ErrUnsupportedColumnFamily is base.ErrUnsupportedColumnFamily, kept here
// for the packages that test for it by this name. This package no longer
// returns it: VersionSet supports column families.
var ErrUnsupportedColumnFamily = base.ErrUnsupportedColumnFamily

// NewFileEntry adds a file to a level.
type NewFileEntry struct {
	Level int
	Meta  *FileMetadata
}

// DeletedFileEntry removes a file from a level.
type DeletedFileEntry struct {
	Level   int
	FileNum uint64
}

// CompactCursor records where the next round-robin compaction of a level
// starts (kept for round trips; not used by the engine).
type CompactCursor struct {
	Level int
	Key   base.InternalKey
}

// WalAddition records a WAL and, if known, its synced size.
type WalAddition struct {
	Number        uint64
	SyncedSize    uint64
	HasSyncedSize bool
}

// Edit is one change to the LSM shape and the counters, one MANIFEST
// record. A Has* flag says whether the field beside it is present.
type Edit struct {
	ComparatorName string
	HasComparator  bool
	// Comparer is the order of the family a ColumnFamilyAdd edit creates
	// (nil: bytewise). It is not encoded: LogAndApply records its Name as
	// the edit's comparator.
	Comparer *base.Comparer

	LogNumber          uint64
	PrevLogNumber      uint64
	NextFileNumber     uint64
	LastSequence       base.SeqNum
	MinLogNumberToKeep uint64
	MaxColumnFamily    uint32

	HasLogNumber          bool
	HasPrevLogNumber      bool
	HasNextFileNumber     bool
	HasLastSequence       bool
	HasMinLogNumberToKeep bool
	HasMaxColumnFamily    bool

	// ColumnFamily is the column family the edit applies to (0 = default).
	ColumnFamily uint32
	// ColumnFamilyAdd is the name of a column family the edit creates.
	ColumnFamilyAdd    string
	HasColumnFamilyAdd bool
	ColumnFamilyDrop   bool
	// InAtomicGroup marks an edit of an atomic group with RemainingEntries
	// more edits to follow.
	InAtomicGroup    bool
	RemainingEntries uint32

	DBID string

	CompactCursors []CompactCursor
	DeletedFiles   []DeletedFileEntry
	NewFiles       []NewFileEntry
	BlobFiles      []BlobFileAddition
	BlobGarbage    []BlobFileGarbage
	WalAdditions   []WalAddition
	// WalDeletions records WAL numbers below which every WAL is obsolete.
	WalDeletions []uint64
}

// Encode appends the encoded edit to dst, in RocksDB 7.8's field order.
func (e *Edit) Encode(dst []byte) []byte {
	if e.HasComparator {
		dst = putTag(dst, tagComparator)
		dst = putVarstring(dst, []byte(e.ComparatorName))
	}
	if e.DBID != "" {
		dst = putTag(dst, tagDBID)
		dst = putVarstring(dst, []byte(e.DBID))
	}
	dst = putOptUvarint(dst, tagLogNumber, e.HasLogNumber, e.LogNumber)
	dst = putOptUvarint(dst, tagPrevLogNumber, e.HasPrevLogNumber, e.PrevLogNumber)
	dst = putOptUvarint(dst, tagNextFileNumber, e.HasNextFileNumber, e.NextFileNumber)
	dst = putOptUvarint(dst, tagMaxColumnFamily, e.HasMaxColumnFamily, uint64(e.MaxColumnFamily))
	dst = putOptUvarint(dst, tagMinLogNumberToKeep, e.HasMinLogNumberToKeep, e.MinLogNumberToKeep)
	dst = putOptUvarint(dst, tagLastSequence, e.HasLastSequence, uint64(e.LastSequence))
	for _, c := range e.CompactCursors {
		dst = putTag(dst, tagCompactCursor)
		dst = binary.AppendUvarint(dst, uint64(c.Level))
		dst = putVarstring(dst, c.Key.Append(nil))
	}
	for _, d := range e.DeletedFiles {
		dst = putTag(dst, tagDeletedFile)
		dst = binary.AppendUvarint(dst, uint64(d.Level))
		dst = binary.AppendUvarint(dst, d.FileNum)
	}
	for _, nf := range e.NewFiles {
		dst = encodeNewFile4(dst, nf)
	}
	for _, a := range e.BlobFiles {
		dst = putTag(dst, tagBlobFileAddition)
		dst = binary.AppendUvarint(dst, a.FileNum)
		dst = binary.AppendUvarint(dst, a.TotalCount)
		dst = binary.AppendUvarint(dst, a.TotalBytes)
		dst = putVarstring(dst, []byte(a.ChecksumMethod))
		dst = putVarstring(dst, a.ChecksumValue)
		dst = putTag(dst, blobEndMarker)
	}
	for _, g := range e.BlobGarbage {
		dst = putTag(dst, tagBlobFileGarbage)
		dst = binary.AppendUvarint(dst, g.FileNum)
		dst = binary.AppendUvarint(dst, g.GarbageCount)
		dst = binary.AppendUvarint(dst, g.GarbageBytes)
		dst = putTag(dst, blobEndMarker)
	}
	for _, w := range e.WalAdditions {
		var body []byte
		body = binary.AppendUvarint(body, w.Number)
		if w.HasSyncedSize {
			body = binary.AppendUvarint(body, 2)
			body = binary.AppendUvarint(body, w.SyncedSize)
		}
		body = binary.AppendUvarint(body, 1)
		dst = putTag(dst, tagWalAddition2)
		dst = putVarstring(dst, body)
	}
	for _, n := range e.WalDeletions {
		dst = putTag(dst, tagWalDeletion2)
		dst = putVarstring(dst, binary.AppendUvarint(nil, n))
	}
	if e.ColumnFamily != 0 {
		dst = putTag(dst, tagColumnFamily)
		dst = binary.AppendUvarint(dst, uint64(e.ColumnFamily))
	}
	if e.HasColumnFamilyAdd {
		dst = putTag(dst, tagColumnFamilyAdd)
		dst = putVarstring(dst, []byte(e.ColumnFamilyAdd))
	}
	if e.ColumnFamilyDrop {
		dst = putTag(dst, tagColumnFamilyDrop)
	}
	if e.InAtomicGroup {
		dst = putTag(dst, tagInAtomicGroup)
		dst = binary.AppendUvarint(dst, uint64(e.RemainingEntries))
	}
	return dst
}

// encodeNewFile4 appends a NewFile4 field as RocksDB 7.8 writes it, minus
// the unique id (custom tag 12), plus Strata's range-deletion count when it
// is known.
func encodeNewFile4(dst []byte, nf NewFileEntry) []byte {
	f := nf.Meta
	dst = putTag(dst, tagNewFile4)
	dst = binary.AppendUvarint(dst, uint64(nf.Level))
	dst = binary.AppendUvarint(dst, f.FileNum)
	dst = binary.AppendUvarint(dst, f.Size)
	dst = putVarstring(dst, f.Smallest.Append(nil))
	dst = putVarstring(dst, f.Largest.Append(nil))
	dst = binary.AppendUvarint(dst, uint64(f.SmallestSeq))
	dst = binary.AppendUvarint(dst, uint64(f.LargestSeq))

	dst = putTag(dst, customOldestAncesterTime)
	dst = putVarstring(dst, binary.AppendUvarint(nil, uint64(f.OldestAncesterTime)))
	dst = putTag(dst, customFileCreationTime)
	dst = putVarstring(dst, binary.AppendUvarint(nil, uint64(f.CreationTime)))
	dst = putTag(dst, customFileChecksum)
	dst = putVarstring(dst, f.FileChecksum)
	name := f.FileChecksumFuncName
	if name == "" {
		name = unknownChecksumFuncName
	}
	dst = putTag(dst, customFileChecksumFunc)
	dst = putVarstring(dst, []byte(name))
	if f.OldestBlobFile != 0 {
		dst = putTag(dst, customOldestBlobFile)
		dst = putVarstring(dst, binary.AppendUvarint(nil, f.OldestBlobFile))
	}
	if f.MarkedForCompaction {
		dst = putTag(dst, customNeedCompaction)
		dst = putVarstring(dst, []byte{1})
	}
	if f.RangeDelsKnown {
		dst = putTag(dst, customNumRangeDeletions)
		dst = putVarstring(dst, binary.AppendUvarint(nil, f.NumRangeDeletions))
	}
	return putTag(dst, customTerminate)
}

func putTag(dst []byte, tag uint32) []byte { return binary.AppendUvarint(dst, uint64(tag)) }

func putVarstring(dst, s []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func putOptUvarint(dst []byte, tag uint32, has bool, v uint64) []byte {
	if !has {
		return dst
	}
	return binary.AppendUvarint(putTag(dst, tag), v)
}
