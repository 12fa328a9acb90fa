package version

import (
	"path/filepath"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/internal/vfs"
)

// SnapshotState is what WriteSnapshotManifest records besides the files of
// the Versions: the counters a MANIFEST carries. LogNumber is the default
// family's log number for WriteSnapshotManifest; WriteSnapshotManifestFamilies
// takes each family's from its SnapshotFamily and ignores it.
// MaxColumnFamily is the largest column family id ever used (the largest id
// in the snapshot if that is larger).
type SnapshotState struct {
	LogNumber       uint64
	PrevLogNumber   uint64
	NextFileNumber  uint64
	LastSequence    base.SeqNum
	MaxColumnFamily uint32
}

// SnapshotFamily is one column family for WriteSnapshotManifestFamilies.
type SnapshotFamily struct {
	ID        uint32
	Name      string
	Version   *Version
	LogNumber uint64
}

// WriteSnapshotManifest writes, in dir, MANIFEST-num describing exactly v
// (as the default column family, the only one) and st (a comparator record,
// then one edit with the counters and every file of v), syncs it, and then
// writes and syncs CURRENT naming it. It does not sync dir. It is how a
// checkpoint gets a MANIFEST that matches the files it holds, rather than a
// copy of a live MANIFEST that keeps growing.
//
// st.NextFileNumber must be above num and every file number of v.
func WriteSnapshotManifest(fs vfs.FS, dir string, num uint64, v *Version, st SnapshotState) error {
	return WriteSnapshotManifestFamilies(fs, dir, num,
		[]SnapshotFamily{{ID: 0, Name: DefaultFamilyName, Version: v, LogNumber: st.LogNumber}}, st)
}

// WriteSnapshotManifestFamilies is WriteSnapshotManifest for several column
// families: fams lists them by id ascending, the default (id 0) first, and
// the MANIFEST holds, for each, a record naming it and one with its files
// and log number (RocksDB's layout of a new MANIFEST); the counters of st go
// on the default family's record.
func WriteSnapshotManifestFamilies(fs vfs.FS, dir string, num uint64, fams []SnapshotFamily, st SnapshotState) error {
	if st.NextFileNumber <= num {
		return base.AssertionFailedf("version: next file number %d not above MANIFEST %d", st.NextFileNumber, num)
	}
	if len(fams) == 0 || fams[0].ID != 0 {
		return base.AssertionFailedf("version: snapshot without the default column family first")
	}
	names := make(map[string]bool, len(fams))
	for i, f := range fams {
		if i > 0 && f.ID <= fams[i-1].ID {
			return base.AssertionFailedf("version: snapshot column family ids %d, %d not ascending", fams[i-1].ID, f.ID)
		}
		if names[f.Name] {
			return base.AssertionFailedf("version: snapshot column family name %q twice", f.Name)
		}
		names[f.Name] = true
		if f.ID > st.MaxColumnFamily {
			st.MaxColumnFamily = f.ID
		}
		if f.Version == nil {
			return base.AssertionFailedf("version: snapshot column family %d without a Version", f.ID)
		}
		for _, files := range f.Version.Levels {
			for _, m := range files {
				if m.FileNum >= st.NextFileNumber {
					return base.AssertionFailedf("version: file %d not below next file number %d", m.FileNum, st.NextFileNumber)
				}
			}
		}
	}
	edits := snapshotLayout(fams, st, 0)
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
