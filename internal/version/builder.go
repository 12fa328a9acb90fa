package version

import (
	"sort"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
)

// builder accumulates edits on top of a base Version and produces the
// resulting Version, so that replaying a long MANIFEST costs one sort per
// level rather than one per edit.
//
// Invariants: for each level, added and deleted are disjoint; deleted holds
// only files of base's level; a file number is in at most one added map.
type builder struct {
	base    *Version
	inBase  [NumLevels]map[uint64]bool // lazily built index of base
	added   [NumLevels]map[uint64]*FileMetadata
	deleted [NumLevels]map[uint64]bool
	// blobs is the blob file set with the edits applied, nil until an
	// edit touches blob files (the base's set then stands).
	blobs map[uint64]*BlobFileMeta
}

func newBuilder(v *Version) *builder { return &builder{base: v} }

func (b *builder) baseHas(level int, num uint64) bool {
	if b.inBase[level] == nil {
		m := make(map[uint64]bool, len(b.base.Levels[level]))
		for _, f := range b.base.Levels[level] {
			m[f.FileNum] = true
		}
		b.inBase[level] = m
	}
	return b.inBase[level][num]
}

// apply adds e's deletions, then its additions. The metadata of added files
// is copied, so the Version never aliases the caller's edit.
func (b *builder) apply(e *Edit) error {
	for _, d := range e.DeletedFiles {
		if d.Level < 0 || d.Level >= NumLevels {
			return errors.Newf("deleted file %06d: level %d out of range", d.FileNum, d.Level)
		}
		switch {
		case b.added[d.Level][d.FileNum] != nil:
			delete(b.added[d.Level], d.FileNum)
		case b.baseHas(d.Level, d.FileNum) && !b.deleted[d.Level][d.FileNum]:
			if b.deleted[d.Level] == nil {
				b.deleted[d.Level] = make(map[uint64]bool)
			}
			b.deleted[d.Level][d.FileNum] = true
		default:
			return errors.Newf("deleting file %06d, which is not in L%d", d.FileNum, d.Level)
		}
	}
	for _, nf := range e.NewFiles {
		l, f := nf.Level, nf.Meta
		if l < 0 || l >= NumLevels || f == nil {
			return errors.Newf("new file: bad level %d or nil metadata", l)
		}
		if b.added[l][f.FileNum] != nil || (b.baseHas(l, f.FileNum) && !b.deleted[l][f.FileNum]) {
			return errors.Newf("adding file %06d, which is already in L%d", f.FileNum, l)
		}
		if b.added[l] == nil {
			b.added[l] = make(map[uint64]*FileMetadata)
		}
		b.added[l][f.FileNum] = f.clone()
	}
	return b.applyBlob(e)
}

// finish returns the new Version (unreferenced, not in any live list).
// Levels without changes share the base's slices: Versions never modify
// them.
func (b *builder) finish() (*Version, error) {
	v := &Version{cmp: b.base.cmp}
	// The bounds of added files are checked here, not in apply: a MANIFEST
	// replay knows a family's comparer only once it has read all of it.
	for level := range b.added {
		for _, f := range b.added[level] {
			if v.Comparer().InternalCompare(f.Smallest, f.Largest) > 0 {
				return nil, errors.Newf("adding file %06d with smallest key %s > largest key %s",
					f.FileNum, f.Smallest, f.Largest)
			}
		}
	}
	addedLevel := make(map[uint64]int)
	for level := range v.Levels {
		if len(b.added[level]) == 0 && len(b.deleted[level]) == 0 {
			v.Levels[level] = b.base.Levels[level]
			continue
		}
		files := make([]*FileMetadata, 0, len(b.base.Levels[level])+len(b.added[level]))
		for _, f := range b.base.Levels[level] {
			if !b.deleted[level][f.FileNum] {
				files = append(files, f)
			}
		}
		for num, f := range b.added[level] {
			files = append(files, f)
			addedLevel[num] = level
		}
		sortLevel(v.Comparer(), level, files)
		for i := 1; i < len(files); i++ {
			if err := checkPair(v.Comparer(), level, files[i-1], files[i]); err != nil {
				return nil, err
			}
		}
		v.Levels[level] = files
	}
	// A file added to one level must not remain in another.
	if len(addedLevel) > 0 {
		for level, files := range v.Levels {
			for _, f := range files {
				if l, ok := addedLevel[f.FileNum]; ok && l != level {
					return nil, errors.Newf("file %06d would be in both L%d and L%d", f.FileNum, l, level)
				}
			}
		}
	}
	if err := b.finishBlobs(v); err != nil {
		return nil, err
	}
	v.cacheSizes()
	return v, nil
}

func sortLevel(cmp *base.Comparer, level int, files []*FileMetadata) {
	if level == 0 {
		sort.Slice(files, func(i, j int) bool { return l0Less(files[i], files[j]) })
		return
	}
	sort.Slice(files, func(i, j int) bool {
		return cmp.InternalCompare(files[i].Smallest, files[j].Smallest) < 0
	})
}
