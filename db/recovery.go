// Recovery at Open: the paranoid checks of the recovered MANIFEST against
// the directory, the replay of the WALs into memtables under
// Options.WALRecoveryMode, and the recovery flush that moves what was
// replayed to L0 and starts the new WAL. The WALRecoveryMode type itself is
// an option and lives in options.go with the other option enums.

package db

import (
	"bytes"
	"io"
	"log/slog"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/batch"
	"github.com/stratadb/strata/internal/killpoint"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/internal/version"
)

// recoverWALsLocked replays the WALs that may hold unflushed writes of any
// family, in order, each record into its family unless the family's tables
// already hold it. A writable DB flushes what it recovered to L0 and starts
// a new WAL; a read-only one keeps it in memtables. d.mu must be held.
func (d *DB) recoverWALsLocked(logs []uint64) error {
	vs := d.mu.versions
	minLog := vs.MinLogNumber()
	var toReplay []uint64
	for _, n := range logs {
		if n >= minLog || (n != 0 && n == vs.PrevLogNumber()) {
			toReplay = append(toReplay, n)
		}
	}
	for _, cf := range d.mu.fams {
		cf.mu.summaryPrefix = keyRangePrefix(cf.mu.vf.Current())
		// An empty arena: the first recovered batch replaces it with a
		// full write buffer, and a family without WAL records allocates
		// none.
		mem, err := d.newMemTable(cf, 0, 0, 0)
		if err != nil {
			return err
		}
		cf.mu.mem = mem
	}
	killpoint.Maybe("open.before_wal_replay")
	// The last WAL, whose torn tail is what a crash leaves, is the newest
	// one that holds a record: newer ones that hold none (created, or
	// preallocated, before a crash or a failed Open wrote to them) say
	// nothing about whether the older one's tail was synced.
	lastIdx := len(toReplay) - 1
	for lastIdx > 0 {
		held, err := d.walHoldsRecord(toReplay[lastIdx])
		if err != nil {
			return err
		}
		if held {
			break
		}
		lastIdx--
	}
	for i, n := range toReplay {
		stop, err := d.replayWALLocked(n, i >= lastIdx)
		if err != nil {
			return err
		}
		if stop {
			// Point-in-time recovery met damage: newer WALs are not
			// applied. A family whose tables already hold writes of a
			// newer WAL is then ahead of the recovered point, which no
			// prefix of the history explains.
			for _, cf := range d.mu.fams {
				if cf.mu.vf.LogNumber() > n {
					return base.CorruptionErrorf("WAL %s is damaged, but column family %q holds writes of a later WAL (its log number is %d): the database cannot be recovered to one point in time",
						base.MakeFilename(base.FileKindLog, n), cf.name, cf.mu.vf.LogNumber())
				}
			}
			break
		}
	}
	if d.opts.ReadOnly {
		return nil
	}
	// Move every recovered memtable to L0, and start the new WAL in the
	// same MANIFEST write.
	newLog := vs.NextFileNum()
	var edits []*version.Edit
	for _, cf := range d.mu.fams {
		if !cf.mu.mem.Empty() {
			cf.mu.imm = append(cf.mu.imm, cf.mu.mem)
		}
		ve := &version.Edit{ColumnFamily: cf.id, LogNumber: newLog, HasLogNumber: true, HasPrevLogNumber: true,
			LastSequence: base.SeqNum(d.visibleSeq.Load()), HasLastSequence: true}
		for _, m := range cf.mu.imm {
			meta, blobs, held, err := d.writeLevel0TableLocked(cf, m.MemTable)
			if held {
				// Open: no snapshot exists yet.
				d.releaseSnapshotHoldLocked()
			}
			if err != nil {
				return err
			}
			ve.NewFiles = append(ve.NewFiles, version.NewFileEntry{Level: 0, Meta: meta})
			ve.BlobFiles = append(ve.BlobFiles, blobs...)
		}
		// No read view lists the recovered memtables yet (Open installs
		// the first after recovery): the DB's reference is the only one.
		for _, m := range cf.mu.imm {
			cf.noteSummaryPrefixLocked(m) // ends with the newest of two keys or more
			m.unref(d)
		}
		if cf.mu.mem.Empty() {
			cf.mu.mem.unref(d)
		}
		cf.mu.imm = nil
		cf.mu.mem = nil
		edits = append(edits, ve)
	}
	// The edit is durable before the new WAL exists, as in RocksDB (which
	// records the recovered WALs as flushed before DB::Open creates the
	// next one). An Open that fails later, creating the WAL or writing its
	// first bytes on a full disk, then leaves a directory whose MANIFEST
	// no longer names the replayed WALs: a retry neither replays them
	// again nor reads a torn tail of theirs as the tail of an older WAL
	// followed by the new one. With several families the edits are one
	// atomic group, so that they move to the new WAL together.
	killpoint.Maybe("open.before_recovery_manifest")
	var err error
	if len(edits) == 1 {
		err = vs.LogAndApply(edits[0])
	} else {
		err = vs.LogAndApplyGroup(edits)
	}
	if err != nil {
		return errors.Wrap(err, "strata: recording recovery in MANIFEST")
	}
	for _, ve := range edits {
		for _, nf := range ve.NewFiles {
			delete(d.mu.pendingOutputs, nf.Meta.FileNum)
		}
		d.noteBlobFilesLocked(ve.BlobFiles)
	}
	if err := d.openWALLocked(newLog, nil); err != nil {
		return err
	}
	for _, cf := range d.mu.fams {
		if cf.mu.mem, err = d.newMemTable(cf, newLog, 0, cf.nextMemTableSizeLocked()); err != nil {
			return err
		}
	}
	return nil
}

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
			if err := d.applyRecoveredLocked(&b, name, r.Offset(), num); err != nil {
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

// applyRecoveredLocked applies one recovered batch of WAL walNum, each
// record to its family unless the family is gone (dropped) or its tables
// already hold the WAL (walNum below its log number), moving full
// memtables aside (to be flushed by the caller, or kept when read-only).
// Skipped records still consume their sequence numbers.
func (d *DB) applyRecoveredLocked(b *batch.Batch, name string, offset int64, walNum uint64) error {
	need := arenaNeed(b)
	if int64(need) > maxBatchArena {
		// RocksDB's memtables grow; ours are one arena of at most
		// memtable.MaxArenaSize bytes, which the batch cannot fit in.
		return errors.Wrapf(ErrInvalidArgument, "strata: WAL %s offset %d: a batch of %d bytes and %d records needs %d memtable bytes, above the limit of %d",
			name, offset, b.Len(), b.Count(), need, maxBatchArena)
	}
	last := b.Seq() + base.SeqNum(b.Count()) - 1
	if !b.MultiFamily() {
		if cf := d.def; walNum >= cf.mu.vf.LogNumber() {
			if err := d.recoveryRoomLocked(cf, need, name, offset); err != nil {
				return err
			}
			if _, err := applyBatch(cf.mu.mem.MemTable, b, b.Seq(), false); err != nil {
				return base.MarkCorruption(errors.Wrapf(err, "strata: replaying WAL %s", name))
			}
		}
	} else {
		r, err := batch.NewReader(b.Data())
		if err != nil {
			return base.MarkCorruption(errors.Wrapf(err, "strata: replaying WAL %s", name))
		}
		for seq := b.Seq(); ; seq++ {
			id, kind, key, value, err := r.NextCF()
			if err == io.EOF {
				break
			}
			if err != nil {
				return base.MarkCorruption(errors.Wrapf(err, "strata: replaying WAL %s offset %d", name, offset))
			}
			cf := d.familyLocked(id)
			if cf == nil {
				if id > d.mu.versions.MaxColumnFamily() {
					return base.CorruptionErrorf("WAL %s offset %d: record for column family %d, which the MANIFEST never created", name, offset, id)
				}
				continue // a dropped family
			}
			if walNum < cf.mu.vf.LogNumber() {
				continue
			}
			if err := d.recoveryRoomLocked(cf, need, name, offset); err != nil {
				return err
			}
			if err := applyRecord(cf.mu.mem.MemTable, kind, key, value, seq, false); err != nil {
				return base.MarkCorruption(errors.Wrapf(err, "strata: replaying WAL %s", name))
			}
		}
	}
	if uint64(last) > d.visibleSeq.Load() {
		d.visibleSeq.Store(uint64(last))
	}
	return nil
}

// recoveryRoomLocked makes room for need bytes in cf's recovery memtable.
func (d *DB) recoveryRoomLocked(cf *ColumnFamily, need int, name string, offset int64) error {
	if cf.mu.mem.fits(need) {
		return nil
	}
	// Replay fills whole write buffers: small ones would only make small
	// L0 tables.
	cf.noteSummaryPrefixLocked(cf.mu.mem)
	m, err := d.newMemTable(cf, 0, need, int(cf.writeBufferSize.Load()))
	if err != nil {
		return errors.Wrapf(err, "strata: replaying WAL %s offset %d", name, offset)
	}
	if !cf.mu.mem.Empty() {
		cf.mu.imm = append(cf.mu.imm, cf.mu.mem)
	} else {
		cf.mu.mem.unref(d) // in no read view yet
	}
	cf.mu.mem = m
	return nil
}

// keyRangePrefix returns the common prefix of the smallest and the largest
// user key of v's tables, or nil when it has none: the first memtable's
// summary prefix (see memtable.SetSummaryPrefix).
func keyRangePrefix(v *version.Version) []byte {
	var lo, hi []byte
	found := false
	for _, files := range v.Levels {
		for _, f := range files {
			if !found || v.Comparer().CompareUser(f.Smallest.UserKey, lo) < 0 {
				lo = f.Smallest.UserKey
			}
			if !found || v.Comparer().CompareUser(f.Largest.UserKey, hi) > 0 {
				hi = f.Largest.UserKey
			}
			found = true
		}
	}
	if !found {
		return nil
	}
	return bytes.Clone(lo[:base.SharedPrefixLen(lo, hi)])
}

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
//
// With several families an empty family's log number moves on in memory
// only (advanceEmptyFamiliesLocked), and WALs are deleted past it: the
// number that is durable before a WAL goes is then MinLogNumberToKeep,
// recorded by every flush and drop that may delete WALs. The larger of it
// and the smallest recorded log number is the WAL that must be there.
func (d *DB) checkLogNumber(vs *version.VersionSet, logs, tables []uint64, manifest string) error {
	// The newest log number any family recorded: a family that had no
	// writes keeps an older one whose WAL may rightly be gone (its log
	// number moves on only in memory, see advanceEmptyFamiliesLocked).
	var logNum uint64
	for _, f := range vs.Families() {
		logNum = max(logNum, f.LogNumber())
	}
	// Flush edits with several families also record the oldest WAL any
	// family needs (MinLogNumberToKeep).
	if m := vs.MinLogNumberToKeep(); m > logNum {
		logNum = m
	}
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
