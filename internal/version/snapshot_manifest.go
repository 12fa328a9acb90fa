package version

import (
	"path/filepath"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/internal/vfs"
)

// SnapshotState is what WriteSnapshotManifest records besides the files of
// a Version: the counters a MANIFEST carries.
type SnapshotState struct {
	LogNumber      uint64
	PrevLogNumber  uint64
	NextFileNumber uint64
	LastSequence   base.SeqNum
}

// WriteSnapshotManifest writes, in dir, MANIFEST-num describing exactly v
// and st (a comparator record, then one edit with the counters and every
// file of v), syncs it, and then writes and syncs CURRENT naming it. It does
// not sync dir. It is how a checkpoint gets a MANIFEST that matches the
// files it holds, rather than a copy of a live MANIFEST that keeps growing.
//
// st.NextFileNumber must be above num and every file number of v.
func WriteSnapshotManifest(fs vfs.FS, dir string, num uint64, v *Version, st SnapshotState) error {
	if st.NextFileNumber <= num {
		return base.AssertionFailedf("version: next file number %d not above MANIFEST %d", st.NextFileNumber, num)
	}
	edits := [2]Edit{{ComparatorName: base.ComparatorName, HasComparator: true}}
	e := &edits[1]
	e.LogNumber, e.HasLogNumber = st.LogNumber, true
	e.PrevLogNumber, e.HasPrevLogNumber = st.PrevLogNumber, true
	e.NextFileNumber, e.HasNextFileNumber = st.NextFileNumber, true
	e.LastSequence, e.HasLastSequence = st.LastSequence, true
	for level, files := range v.Levels {
		for _, f := range files {
			if f.FileNum >= st.NextFileNumber {
				return base.AssertionFailedf("version: file %d not below next file number %d", f.FileNum, st.NextFileNumber)
			}
			e.NewFiles = append(e.NewFiles, NewFileEntry{Level: level, Meta: f})
		}
	}
	name := base.MakeFilename(base.FileKindManifest, num)
	if err := writeSynced(fs, filepath.Join(dir, name), func(w *record.Writer) error {
		var buf []byte
		for i := range edits {
			buf = edits[i].Encode(buf[:0])
			if _, err := w.WriteRecord(buf); err != nil {
				return err
			}
		}
		return w.Flush()
	}, num); err != nil {
		return errors.Wrapf(err, "strata: version: writing %s", name)
	}
	cur := filepath.Join(dir, base.MakeFilename(base.FileKindCurrent, 0))
	if err := vfs.WriteFileSynced(fs, cur, []byte(name+"\n")); err != nil {
		return errors.Wrapf(err, "strata: version: writing %s", cur)
	}
	return nil
}

// writeSynced creates path, lets fill write records to it, and syncs it.
func writeSynced(fs vfs.FS, path string, fill func(*record.Writer) error, logNum uint64) error {
	f, err := fs.Create(path)
	if err != nil {
		return err
	}
	err = fill(record.NewWriter(f, logNum))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
