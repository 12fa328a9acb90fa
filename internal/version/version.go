package version

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/stratadb/strata/internal/base"
)

// Version is an immutable shape of the LSM tree: the files of each level.
//
// Invariants (checked by CheckOrdering):
//   - L0 is ordered newest first: by LargestSeq descending, then FileNum
//     descending. L0 files may overlap.
//   - Each level Ln, n >= 1, is sorted by Smallest and its files do not
//     overlap in internal-key order: a file's Largest sorts before the next
//     file's Smallest. Two adjacent files may share a boundary user key
//     (RocksDB and LevelDB write such levels): the newer versions of that
//     key are in the first file, the older ones in the second. A
//     range-deletion sentinel Largest (an exclusive bound) may equal the
//     next file's Smallest user key.
//   - A file number appears at most once in a Version.
//
// Reference counting: a Version stays in its VersionSet's list of live
// versions (and so its files stay live for LiveFileNums) while its count is
// above zero. The VersionSet holds one reference to the current Version;
// an iterator or snapshot that reads a Version takes its own with Ref and
// drops it with Unref. Ref and Unref are safe for concurrent use; the rest of
// a Version never changes once installed.
type Version struct {
	Levels [NumLevels][]*FileMetadata
	// BlobFiles are the family's live blob files, by number ascending (see
	// builder.finishBlobs for when one leaves). Never modified once the
	// Version is built.
	BlobFiles []*BlobFileMeta

	// sizes caches each level's total file size, filled once by cacheSizes
	// before the Version is shared (sized then true). A Version built as a
	// literal (tests) has sized false and LevelSize sums its files.
	sizes [NumLevels]uint64
	sized bool
	// pending memoizes PendingCompactionBytes for the last PickerOptions
	// asked: the write path asks once per commit group, and the options
	// change only through SetOptions.
	pending atomic.Pointer[pendingMemo]

	refs atomic.Int32
	// vs is the owning VersionSet, nil for a free-standing Version.
	vs *VersionSet
	// prev and next link the live list of vs; guarded by vs.listMu.
	prev, next *Version
	// cmp is the family's user-key order; nil (a literal) means bytewise.
	cmp *base.Comparer
}

// Comparer returns the order of the Version's family (never nil).
func (v *Version) Comparer() *base.Comparer { return v.cmp.OrDefault() }

// NewEmpty returns an empty free-standing Version of a family ordered by
// cmp (nil: bytewise).
func NewEmpty(cmp *base.Comparer) *Version { return &Version{cmp: cmp} }

// Ref adds a reference.
func (v *Version) Ref() { v.refs.Add(1) }

// Unref drops a reference; the last one removes v from its VersionSet's
// live list.
func (v *Version) Unref() {
	n := v.refs.Add(-1)
	if n < 0 {
		panic(base.AssertionFailedf("version: Unref of an unreferenced version"))
	}
	if n == 0 && v.vs != nil {
		v.vs.removeLive(v)
	}
}

// Refs returns the current reference count (for tests and assertions).
func (v *Version) Refs() int32 { return v.refs.Load() }

// NumFiles returns the number of files in level.
func (v *Version) NumFiles(level int) int { return len(v.Levels[level]) }

// LevelSize returns the total size of the files in level: O(1) for a
// Version built by a VersionSet.
func (v *Version) LevelSize(level int) uint64 {
	if v.sized {
		return v.sizes[level]
	}
	return sumSizes(v.Levels[level])
}

func sumSizes(files []*FileMetadata) uint64 {
	var n uint64
	for _, f := range files {
		n += f.Size
	}
	return n
}

// cacheSizes fills the level-size cache. It must run before v is shared:
// a Version's files never change once built.
func (v *Version) cacheSizes() {
	for level, files := range v.Levels {
		v.sizes[level] = sumSizes(files)
	}
	v.sized = true
}

// AddLiveFileNums adds the number of every file of v to m.
func (v *Version) AddLiveFileNums(m map[uint64]struct{}) {
	for _, files := range v.Levels {
		for _, f := range files {
			m[f.FileNum] = struct{}{}
		}
	}
	for _, b := range v.BlobFiles {
		m[b.FileNum] = struct{}{}
	}
}

// FindFile returns the index of the first file of level (n >= 1) whose
// Largest user key is >= ukey, or NumFiles(level) if there is none. When
// ukey is a boundary user key shared by adjacent files, the following
// files may hold older versions of ukey too.
func (v *Version) FindFile(level int, ukey []byte) int {
	files := v.Levels[level]
	cmp := v.Comparer()
	return sort.Search(len(files), func(i int) bool {
		return cmp.CompareUser(files[i].Largest.UserKey, ukey) >= 0
	})
}

// Overlaps returns the files of level whose user-key range [Smallest,
// Largest] intersects [start, end] (both inclusive). For L0 every file is
// tested (without RocksDB's range expansion); for L1+ the search is binary.
// The result is in level order and may alias v's slice for L1+.
func (v *Version) Overlaps(level int, start, end []byte) []*FileMetadata {
	files := v.Levels[level]
	cmp := v.Comparer()
	if level == 0 {
		var out []*FileMetadata
		for _, f := range files {
			if overlaps(cmp, f, start, end) {
				out = append(out, f)
			}
		}
		return out
	}
	i := v.FindFile(level, start)
	j := i
	for j < len(files) && cmp.CompareUser(files[j].Smallest.UserKey, end) <= 0 {
		j++
	}
	return files[i:j:j]
}

func overlaps(cmp *base.Comparer, f *FileMetadata, start, end []byte) bool {
	return cmp.CompareUser(f.Largest.UserKey, start) >= 0 && cmp.CompareUser(f.Smallest.UserKey, end) <= 0
}

// l0Less orders L0 newest first.
func l0Less(a, b *FileMetadata) bool {
	if a.LargestSeq != b.LargestSeq {
		return a.LargestSeq > b.LargestSeq
	}
	return a.FileNum > b.FileNum
}

// CheckOrdering verifies the invariants stated on Version.
func (v *Version) CheckOrdering() error {
	seen := make(map[uint64]int)
	for level, files := range v.Levels {
		for i, f := range files {
			if l, ok := seen[f.FileNum]; ok {
				return base.AssertionFailedf("version: file %06d in L%d and L%d", f.FileNum, l, level)
			}
			seen[f.FileNum] = level
			if v.Comparer().InternalCompare(f.Smallest, f.Largest) > 0 {
				return base.AssertionFailedf("version: L%d file %s: smallest > largest", level, f)
			}
			if i == 0 {
				continue
			}
			if err := checkPair(v.Comparer(), level, files[i-1], f); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPair checks the order of two adjacent files of level.
func checkPair(cmp *base.Comparer, level int, prev, f *FileMetadata) error {
	if level == 0 {
		if !l0Less(prev, f) {
			return base.AssertionFailedf("version: L0 files %s and %s not newest first", prev, f)
		}
		return nil
	}
	if cmp.InternalCompare(prev.Largest, f.Smallest) < 0 ||
		(IsSentinel(prev.Largest) && cmp.CompareUser(prev.Largest.UserKey, f.Smallest.UserKey) == 0) {
		return nil
	}
	return base.AssertionFailedf("version: L%d files %s and %s overlap or are out of order", level, prev, f)
}

// String lists the files level by level, in the manner of ldb's
// manifest_dump.
func (v *Version) String() string {
	var sb strings.Builder
	for level, files := range v.Levels {
		fmt.Fprintf(&sb, "--- level %d ---\n", level)
		for _, f := range files {
			fmt.Fprintf(&sb, " %s\n", f)
		}
	}
	return sb.String()
}
