package db

import (
	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/version"
)

// checkTables verifies, as RocksDB's paranoid checks do at recovery, that
// every table the recovered Version names is in the directory with the size
// the MANIFEST records. A missing or resized table means the MANIFEST (or
// the directory) does not describe this database: opening anyway would
// answer reads without that table's data, or fail them later, and the
// obsolete-file sweep could delete tables the real history still needs.
// tables is the directory listing's table numbers, ascending.
func (d *DB) checkTables(v *version.Version, tables []uint64, manifest string) error {
	present := make(map[uint64]struct{}, len(tables))
	for _, n := range tables {
		present[n] = struct{}{}
	}
	for level, files := range v.Levels {
		for _, f := range files {
			name := base.MakeFilename(base.FileKindTable, f.FileNum)
			if _, ok := present[f.FileNum]; !ok {
				return base.CorruptionErrorf("%s: table %s (L%d) named by %s is missing",
					d.dirname, name, level, manifest)
			}
			st, err := d.fs.Stat(d.path(name))
			if err != nil {
				return errors.Wrapf(err, "strata: stat of table %s", d.path(name))
			}
			if uint64(st.Size()) != f.Size {
				return base.CorruptionErrorf("%s: table %s (L%d) is %d bytes, %s records %d",
					d.dirname, name, level, st.Size(), manifest, f.Size)
			}
		}
	}
	return nil
}

// checkLogNumber catches a MANIFEST that ends early, cut at a record
// boundary or damaged so that its last records are taken for a torn write.
// The MANIFEST records the oldest WAL that may hold unflushed writes, and a
// WAL is deleted only after an edit moving that number past it is durable.
// So when that WAL is missing while the directory holds a table written
// after it that the recovered Version does not name, the edit that flushed
// the WAL into that table is gone from the MANIFEST: opening would replay
// nothing and drop the table's data (the sweep would delete it).
//
// A missing WAL alone proves nothing: RocksDB's recovery records the
// highest recovered WAL number plus one, which no WAL carries (ldb leaves
// exactly that). An unnamed table alone proves nothing either: a crash
// during a flush or compaction leaves one. Both together can still be a
// false alarm in one narrow case: a RocksDB-written directory whose last
// session recovered WALs, flushed nothing, and crashed during a compaction.
// Opening it with RocksDB once clears the leftover table.
func (d *DB) checkLogNumber(vs *version.VersionSet, logs, tables []uint64, manifest string) error {
	logNum := vs.LogNumber()
	for _, n := range logs {
		if n == logNum {
			return nil
		}
	}
	live := vs.LiveFileNums()
	for _, n := range tables {
		if _, ok := live[n]; ok || n <= logNum {
			continue
		}
		return base.CorruptionErrorf("%s: %s ends early: it names WAL %s as the oldest live one, "+
			"which is missing, and table %s, written after that WAL, is in no version it records",
			d.dirname, manifest, base.MakeFilename(base.FileKindLog, logNum),
			base.MakeFilename(base.FileKindTable, n))
	}
	return nil
}
