// WAL file recycling (Options.RecycleLogFileNum, RocksDB's
// recycle_log_file_num): the obsolete WALs kept instead of deleted, and
// the creation of a WAL file, which takes a kept one when there is one.
// See docs/wal.md.

package db

import (
	"io"
	"log/slog"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/internal/vfs"
)

// keepWALForRecycleLocked keeps the obsolete WAL num for a later rotation
// to overwrite, when recycling is on and fewer than RecycleLogFileNum are
// kept, as RocksDB's FindObsoleteFiles does. It reports whether it kept
// it; the caller deletes it otherwise. d.mu must be held.
func (d *DB) keepWALForRecycleLocked(num uint64) bool {
	if len(d.mu.recycleWALs) >= d.opts.RecycleLogFileNum {
		return false
	}
	d.mu.recycleWALs = append(d.mu.recycleWALs, num)
	d.logf(slog.LevelInfo, "WAL kept for recycling", "file", base.MakeFilename(base.FileKindLog, num))
	return true
}

// takeRecycleWALLocked takes the oldest kept WAL off the list, for the
// next WAL file to overwrite, or returns 0 when recycling is off or none is
// kept. The caller owns the file from then on: createWALFileFrom reuses it
// or removes it. d.mu must be held.
func (d *DB) takeRecycleWALLocked() uint64 {
	if d.opts.RecycleLogFileNum == 0 || len(d.mu.recycleWALs) == 0 {
		return 0
	}
	num := d.mu.recycleWALs[0]
	d.mu.recycleWALs = d.mu.recycleWALs[1:]
	return num
}

// createWALFileFrom creates the file of a new WAL, name. With recycling
// on it renames the kept WAL recycle (taken by takeRecycleWALLocked) to
// name and overwrites it, or, when recycle is 0 or the reuse fails (the
// file system has no vfs.Reuser, or the rename or open fails), creates a
// new file, which rotation will recycle in its turn: either way with
// write(2). Otherwise the file is mapped unless Options.WALWriteSyscalls.
// It takes no lock: the WAL created ahead is made on a goroutine.
func (d *DB) createWALFileFrom(name string, recycle uint64) (vfs.File, error) {
	if d.opts.RecycleLogFileNum == 0 {
		if d.opts.WALWriteSyscalls {
			return d.fs.Create(name)
		}
		return vfs.CreateMapped(d.fs, name)
	}
	if recycle != 0 {
		old := d.path(base.MakeFilename(base.FileKindLog, recycle))
		f, err := vfs.ReuseForWrite(d.fs, old, name)
		if err == nil {
			d.logf(slog.LevelInfo, "WAL recycled", "from", old, "to", name)
			return f, nil
		}
		// The kept file goes: renamed already (Create truncates it) or
		// not (it is obsolete).
		d.logf(slog.LevelWarn, "WAL not recycled; creating a new one", "from", old, "to", name, "err", err)
		_ = d.fs.Remove(old)
	}
	return d.fs.Create(name)
}

// newWALWriter returns the record writer of a new WAL: recyclable records
// when recycling is on, since the file may hold an older log's records
// past what this one writes (and a WAL created new now is recycled later).
func (d *DB) newWALWriter(f io.Writer, logNum uint64) *record.Writer {
	if d.opts.RecycleLogFileNum > 0 {
		return record.NewRecyclableWriter(f, logNum)
	}
	return record.NewWriter(f, logNum)
}
