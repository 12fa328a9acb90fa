package db

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/batch"
	"github.com/stratadb/strata/internal/record"
)

// WALRecoveryMode chooses what Open does with damaged write-ahead logs.
// The values and their numbers are RocksDB's WALRecoveryMode; the OPTIONS
// file records the mode as wal_recovery_mode, under RocksDB's name.
//
// Damage is a fragment whose checksum, length or type is wrong, fragments
// out of order, a batch that does not decode, a zero-filled region with
// records after it, or a torn tail: a log that ends inside a record (what a
// crash during a write leaves).
type WALRecoveryMode int

const (
	// WALRecoveryTolerateCorruptedTail (RocksDB's
	// kTolerateCorruptedTailRecords) is the default: a torn tail of the
	// newest WAL is dropped (those writes were never acknowledged); any
	// other damage fails Open with ErrCorruption naming the file and
	// offset. Unlike RocksDB, a torn tail in an older WAL is damage too
	// (Strata syncs a WAL before it starts the next one). A zero-filled
	// header ends the newest WAL even if records follow it (a power loss
	// can leave unsynced blocks as zeroes); in an older WAL, records after
	// zeroes are damage: applying the newer WALs would leave a hole in the
	// history.
	WALRecoveryTolerateCorruptedTail WALRecoveryMode = iota
	// WALRecoveryAbsoluteConsistency (kAbsoluteConsistency): any damage,
	// a torn tail of the newest WAL included, fails Open with
	// ErrCorruption. For databases that were shut down cleanly.
	WALRecoveryAbsoluteConsistency
	// WALRecoveryPointInTime (kPointInTimeRecovery, RocksDB's default):
	// replay stops at the first damage; Open succeeds with every record
	// before it and none after it, in that WAL or in any newer one. The
	// database is then a consistent prefix of its history.
	WALRecoveryPointInTime
	// WALRecoverySkipAnyCorrupted (kSkipAnyCorruptedRecords): damaged
	// records are skipped and replay goes on with the next readable one.
	// Open succeeds, possibly with holes in the history; for salvage.
	WALRecoverySkipAnyCorrupted
)

var walRecoveryModeNames = [...]string{
	"kTolerateCorruptedTailRecords",
	"kAbsoluteConsistency",
	"kPointInTimeRecovery",
	"kSkipAnyCorruptedRecords",
}

// String returns RocksDB's name of the mode, as the OPTIONS file writes it.
func (m WALRecoveryMode) String() string {
	if m < 0 || int(m) >= len(walRecoveryModeNames) {
		return fmt.Sprintf("WALRecoveryMode(%d)", int(m))
	}
	return walRecoveryModeNames[m]
}

func (m WALRecoveryMode) valid() bool { return m >= 0 && int(m) < len(walRecoveryModeNames) }

// walHoldsRecord reports whether WAL num holds any record, damaged or not:
// false for an empty file and for one that is zero-filled to its end (space
// preallocated or a page never written back).
func (d *DB) walHoldsRecord(num uint64) (bool, error) {
	name := d.path(base.MakeFilename(base.FileKindLog, num))
	f, err := d.fs.Open(name)
	if err != nil {
		return false, errors.Wrapf(err, "strata: opening WAL %s", name)
	}
	defer f.Close()
	r := record.NewReader(f, num, name)
	_, err = r.Next()
	switch {
	case err == io.EOF:
		if _, zero := r.ZeroEnd(); zero {
			return dataAfterZeroes(r)
		}
		return false, nil
	case err == nil || errors.Is(err, record.ErrTornTail) || errors.Is(err, base.ErrCorruption):
		return true, nil
	default:
		return false, errors.Wrapf(err, "strata: reading WAL %s", name)
	}
}

// replayWALLocked applies the batches of WAL num to the memtables under
// d.opts.WALRecoveryMode. stop reports that replay must not go on to newer
// WALs (point-in-time recovery met damage). d.mu must be held.
func (d *DB) replayWALLocked(num uint64, last bool) (stop bool, err error) {
	mode := d.opts.WALRecoveryMode
	name := d.path(base.MakeFilename(base.FileKindLog, num))
	f, err := d.fs.Open(name)
	if err != nil {
		return false, errors.Wrapf(err, "strata: opening WAL %s", name)
	}
	defer f.Close()
	r := record.NewReader(f, num, name)
	var b batch.Batch
	applied, skipped := 0, 0
	defer func() {
		if err == nil {
			d.logf(slog.LevelInfo, "recovered WAL", "file", name, "batches", applied, "damaged_skipped", skipped,
				"stopped", stop, "mode", mode.String())
		}
	}()
	for {
		rec, err := r.Next()
		var damage error
		switch {
		case err == io.EOF:
			zoff, zero := r.ZeroEnd()
			if !zero || (mode == WALRecoveryTolerateCorruptedTail && last) {
				// A zero-filled end of the newest WAL is what a power
				// loss leaves of writes that were never synced: whatever
				// follows it was not synced either (a sync would have
				// made the zeroes real data), so it is the torn tail.
				return false, nil
			}
			if mode == WALRecoverySkipAnyCorrupted {
				r.Recover() // go on past the zero-filled region
				continue
			}
			more, err := dataAfterZeroes(r)
			if err != nil {
				return false, err
			}
			if !more {
				return false, nil // preallocated space: the clean end
			}
			damage = base.CorruptionErrorf("WAL %s: offset %d: zero-filled region followed by records", name, zoff)
		case errors.Is(err, record.ErrTornTail):
			if mode == WALRecoveryTolerateCorruptedTail {
				if last {
					return false, nil
				}
				return false, base.MarkCorruption(errors.Wrapf(err, "strata: WAL %s is not the last one but ends in a torn record", name))
			}
			damage = base.MarkCorruption(err)
		case errors.Is(err, base.ErrCorruption):
			damage = err
		case err != nil:
			return false, err // I/O errors are never skipped
		default:
			if err := b.SetData(rec); err != nil {
				damage = base.MarkCorruption(errors.Wrapf(err, "strata: WAL %s offset %d", name, r.Offset()))
				break
			}
			if b.Count() == 0 {
				continue
			}
			if err := d.applyRecoveredLocked(&b, name, r.Offset()); err != nil {
				return false, err
			}
			applied++
			continue
		}
		switch mode {
		case WALRecoveryPointInTime:
			d.logf(slog.LevelWarn, "WAL damaged: replay stops here; later records and WALs are not applied",
				"file", name, "err", damage)
			return true, nil
		case WALRecoverySkipAnyCorrupted:
			d.logf(slog.LevelWarn, "WAL damaged: skipping", "file", name, "err", damage)
			skipped++
			r.Recover()
		default:
			return false, errors.Wrapf(damage, "strata: WAL recovery mode %s", mode)
		}
	}
}

// dataAfterZeroes reports whether anything but zeroes and the end of the
// file follows the zero-filled header that ended r: a record, damage or a
// torn record all count.
func dataAfterZeroes(r *record.Reader) (bool, error) {
	for {
		r.Recover()
		_, err := r.Next()
		switch {
		case err == io.EOF:
			if _, zero := r.ZeroEnd(); zero {
				continue
			}
			return false, nil
		case err == nil || errors.Is(err, record.ErrTornTail) || errors.Is(err, base.ErrCorruption):
			return true, nil
		default:
			return false, err
		}
	}
}
