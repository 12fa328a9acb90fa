package db

import (
	"os"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
)

// deleteObsoleteFilesLocked deletes the tables that no live version
// references and the WALs whose memtables are all flushed. d.mu must be held.
//
// Files are tracked as they become obsolete rather than found by listing
// the directory: a listing per flush would cost O(files) on large databases.
// Open sweeps the directory once for leftovers of a crash.
func (d *DB) deleteObsoleteFilesLocked() {
	if d.opts.ReadOnly {
		return
	}
	if len(d.mu.obsoleteTables) > 0 || len(d.blobs.known) > 0 {
		live := d.mu.versions.LiveFileNums()
		// A blob file goes when no live version lists it (see
		// version.builder.finishBlobs for when a version stops listing
		// one). Blob files are few beside tables: each sweep checks them
		// all rather than tracking which versions dropped which.
		for num := range d.blobs.known {
			if _, ok := live[num]; ok {
				continue
			}
			if _, pending := d.mu.pendingOutputs[num]; pending {
				continue
			}
			delete(d.blobs.known, num)
			d.blobs.forget(num)
			d.removeFile(base.FileKindBlob, num)
		}
		kept := d.mu.obsoleteTables[:0]
		for _, num := range d.mu.obsoleteTables {
			if _, ok := live[num]; ok {
				kept = append(kept, num)
				continue
			}
			// The cached reader is closed first: on Windows an open file
			// cannot be removed.
			d.tables.evict(num)
			if d.removeFile(base.FileKindTable, num) != nil {
				kept = append(kept, num)
			}
		}
		d.mu.obsoleteTables = kept
	}
	if len(d.mu.obsoleteWALs) > 0 {
		kept := d.mu.obsoleteWALs[:0]
		for _, num := range d.mu.obsoleteWALs {
			d.waitWALClosedLocked(num)
			if d.removeFile(base.FileKindLog, num) != nil {
				kept = append(kept, num)
			}
		}
		d.mu.obsoleteWALs = kept
	}
	// An obsolete WAL is closed, or being closed in the background
	// (closeWALInBackground): its removal waits for the close.
	minLog := d.minUnflushedLogLocked()
	n := 0
	for n < len(d.mu.wals) && d.mu.wals[n] < minLog {
		// Kept or removed, the file's background close is done first: a
		// recycled WAL is reopened and overwritten by the next rotation.
		d.waitWALClosedLocked(d.mu.wals[n])
		if d.keepWALForRecycleLocked(d.mu.wals[n]) {
			n++
			continue
		}
		if d.removeFile(base.FileKindLog, d.mu.wals[n]) != nil {
			d.mu.obsoleteWALs = append(d.mu.obsoleteWALs, d.mu.wals[n])
		}
		n++
	}
	d.mu.wals = d.mu.wals[n:]
	d.mu.walStarts = d.mu.walStarts[n:]
	if n > 0 && len(d.mu.fams) > 1 {
		// The live WALs shrank: they may be back under max_total_wal_size.
		d.refreshRoomFreeLocked()
	}
}

// minUnflushedLogLocked is the oldest WAL still holding unflushed writes of
// any family. d.mu must be held.
func (d *DB) minUnflushedLogLocked() uint64 {
	min := uint64(1<<64 - 1)
	for _, cf := range d.mu.fams {
		if n := cf.minUnflushedLogLocked(); n < min {
			min = n
		}
	}
	return min
}

// minUnflushedLogLocked is the oldest WAL still holding unflushed writes of
// cf. d.mu must be held.
func (cf *ColumnFamily) minUnflushedLogLocked() uint64 {
	if len(cf.mu.imm) > 0 {
		return cf.mu.imm[0].logNum
	}
	return cf.mu.mem.logNum
}

// removeFile deletes a file and returns the failure, if any: a file
// already gone is not one. A failure is no error of the operation that
// made the file obsolete; callers that track the file keep its number so
// the next sweep tries again (on Windows, a file some handle still holds
// open cannot be removed until it is closed), and the next Open sweeps the
// directory in any case.
func (d *DB) removeFile(kind base.FileKind, num uint64) error {
	name := d.path(base.MakeFilename(kind, num))
	err := d.fs.Remove(name)
	d.evFileDeleted(kind, num, name, err)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
