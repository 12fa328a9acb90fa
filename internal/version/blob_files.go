package version

import (
	"sort"

	"github.com/stratadb/strata/internal/base"
)

// BlobFileMeta describes one blob file of a Version: its totals from its
// BlobFileAddition and the garbage recorded against it since. Immutable
// once in a Version; a garbage record makes a new one.
type BlobFileMeta struct {
	FileNum        uint64
	TotalCount     uint64
	TotalBytes     uint64
	GarbageCount   uint64
	GarbageBytes   uint64
	ChecksumMethod string
	ChecksumValue  []byte
}

// LiveBytes is TotalBytes less GarbageBytes.
func (b *BlobFileMeta) LiveBytes() uint64 {
	if b.GarbageBytes >= b.TotalBytes {
		return 0
	}
	return b.TotalBytes - b.GarbageBytes
}

// BlobFile returns the blob file num of v, or nil.
func (v *Version) BlobFile(num uint64) *BlobFileMeta {
	i := sort.Search(len(v.BlobFiles), func(i int) bool { return v.BlobFiles[i].FileNum >= num })
	if i < len(v.BlobFiles) && v.BlobFiles[i].FileNum == num {
		return v.BlobFiles[i]
	}
	return nil
}

// applyBlob adds e's blob file additions and garbage to the builder.
func (b *builder) applyBlob(e *Edit) error {
	if len(e.BlobFiles) == 0 && len(e.BlobGarbage) == 0 {
		return nil
	}
	if b.blobs == nil {
		b.blobs = make(map[uint64]*BlobFileMeta, len(b.base.BlobFiles))
		for _, m := range b.base.BlobFiles {
			b.blobs[m.FileNum] = m
		}
	}
	for _, a := range e.BlobFiles {
		if b.blobs[a.FileNum] != nil {
			return base.CorruptionErrorf("version: blob file %06d added twice", a.FileNum)
		}
		b.blobs[a.FileNum] = &BlobFileMeta{FileNum: a.FileNum, TotalCount: a.TotalCount, TotalBytes: a.TotalBytes,
			ChecksumMethod: a.ChecksumMethod, ChecksumValue: a.ChecksumValue}
	}
	for _, g := range e.BlobGarbage {
		m := b.blobs[g.FileNum]
		if m == nil {
			return base.CorruptionErrorf("version: garbage recorded for blob file %06d, which is not in the version", g.FileNum)
		}
		c := *m
		c.GarbageCount += g.GarbageCount
		c.GarbageBytes += g.GarbageBytes
		if c.GarbageCount > c.TotalCount || c.GarbageBytes > c.TotalBytes {
			return base.CorruptionErrorf("version: blob file %06d: garbage %d blobs/%d bytes exceeds its %d blobs/%d bytes",
				g.FileNum, c.GarbageCount, c.GarbageBytes, c.TotalCount, c.TotalBytes)
		}
		b.blobs[g.FileNum] = &c
	}
	return nil
}

// finishBlobs sets v.BlobFiles by RocksDB 7.8's rule (VersionBuilder's
// SaveBlobFilesTo): with m the smallest OldestBlobFile of v's tables, a
// blob file stays if its number is at least m and some table names it as
// its oldest blob file or not all its blobs are garbage. A file below m is
// referenced by no table (every table's references are at or above its own
// oldest). No table with a blob reference: no blob file stays. Then every
// table's oldest blob file must be in v, RocksDB's consistency check.
func (b *builder) finishBlobs(v *Version) error {
	minOldest := uint64(0)
	linked := make(map[uint64]bool)
	for _, files := range v.Levels {
		for _, f := range files {
			if f.OldestBlobFile == 0 {
				continue
			}
			linked[f.OldestBlobFile] = true
			if minOldest == 0 || f.OldestBlobFile < minOldest {
				minOldest = f.OldestBlobFile
			}
		}
	}
	var all []*BlobFileMeta
	if b.blobs != nil {
		all = make([]*BlobFileMeta, 0, len(b.blobs))
		for _, m := range b.blobs {
			all = append(all, m)
		}
		sort.Slice(all, func(i, j int) bool { return all[i].FileNum < all[j].FileNum })
	} else {
		all = b.base.BlobFiles
	}
	var kept []*BlobFileMeta
	if minOldest != 0 {
		kept = make([]*BlobFileMeta, 0, len(all))
		for _, m := range all {
			if m.FileNum >= minOldest && (linked[m.FileNum] || m.GarbageCount < m.TotalCount) {
				kept = append(kept, m)
			}
		}
	}
	v.BlobFiles = kept
	for num := range linked {
		if v.BlobFile(num) == nil {
			return base.CorruptionErrorf("version: blob file %06d, the oldest blob file of a table, is missing", num)
		}
	}
	return nil
}
