package db

import (
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/iterator"
	"github.com/stratadb/strata/internal/killpoint"
	"github.com/stratadb/strata/internal/memtable"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
)

// initialMemTableSize is the arena size of the first memtable the write
// path makes after Open. Each later one is twice the previous, up to the
// write buffer size, as in Pebble: a database that is opened and only read
// never allocates a full write buffer, and one that takes a few writes
// holds a small arena. The cost is a few small L0 tables at the start of a
// bulk load.
const initialMemTableSize = 256 << 10

// nextMemTableSizeLocked returns the arena size for cf's next memtable of
// the write path and doubles the one after it, up to the write buffer size.
// d.mu must be held.
func (cf *ColumnFamily) nextMemTableSizeLocked() int {
	wbs := int(cf.writeBufferSize.Load())
	size := min(wbs, max(cf.mu.memNextSize, initialMemTableSize))
	cf.mu.memNextSize = min(wbs, 2*size)
	return size
}

// prepareNextMemTableLocked readies, on a goroutine of its own, the arena
// of cf's next memtable (memtable.ArenaPool.Prepare): the rotation that
// makes it, under the commit lock, then does not take the faults of its
// first pages. d.mu must be held.
func (d *DB) prepareNextMemTableLocked(cf *ColumnFamily) {
	if d.closed.Load() || d.mu.closing || d.opts.ReadOnly {
		return
	}
	size := min(int(cf.writeBufferSize.Load()), max(cf.mu.memNextSize, initialMemTableSize))
	d.mu.bgWG.Add(1)
	go func() {
		defer d.mu.bgWG.Done()
		d.memPool.Prepare(size)
	}()
}

// noteSummaryPrefixLocked takes the summary prefix for cf's memtables to
// come from m, which is being replaced: the keys written next most likely
// share what m's keys shared. d.mu must be held.
func (cf *ColumnFamily) noteSummaryPrefixLocked(m *memTable) {
	if p := m.CommonPrefix(); p != nil {
		cf.mu.summaryPrefix = p
	}
}

// newMemTable makes a memtable of cf whose arena has size bytes, or more
// when it must hold need bytes. d.mu must be held. Open, SetOptions and the
// write path keep the size within memtable.MaxArenaSize; a size beyond it is
// an ErrInvalidArgument error, never a panic.
func (d *DB) newMemTable(cf *ColumnFamily, logNum uint64, need, size int) (*memTable, error) {
	// The empty memtable's sentinels use arena bytes too: without room for
	// need after them, fits(need) would never hold and the writer would
	// rotate empty memtables forever.
	size = max(size, need+memtable.EmptySize)
	m, reused, err := d.memPool.Make(size)
	if err != nil {
		return nil, errors.Wrapf(err, "strata: memtable for a write of %d bytes", need)
	}
	if reused {
		d.arenaReuses.Add(1)
	}
	m.SetSummaryPrefix(cf.mu.summaryPrefix)
	m.SetComparer(cf.cmp)
	mt := &memTable{MemTable: m, logNum: logNum, size: size}
	mt.refs.Store(1) // the DB's, dropped when it is retired after its flush
	return mt, nil
}

// rotateMemtableLocked makes cf's mutable memtable immutable, starts a new
// WAL for its successor (unless the current one is still empty) and
// schedules a flush. An empty memtable too small
// for need is just replaced. The commit pipeline must be drained and d.mu
// held.
func (d *DB) rotateMemtableLocked(cf *ColumnFamily, need int) error {
	size := cf.nextMemTableSizeLocked()
	if d.closed.Load() {
		// The final flush of Close: nothing is written after it, so the
		// successor needs no room (a stray write would replace it, as an
		// empty memtable too small for its need).
		size = 0
	}
	if cf.mu.mem.Empty() {
		m, err := d.newMemTable(cf, cf.mu.mem.logNum, need, size)
		if err != nil {
			return err
		}
		old := cf.mu.mem
		cf.mu.mem = m
		d.updateReadStateLocked(cf)
		// The replaced memtable is in no current structure: its arena
		// goes once the readers of older views are done with it.
		old.unref(d)
		return nil
	}
	// Make the successor first: a failure leaves everything as it was.
	cf.noteSummaryPrefixLocked(cf.mu.mem)
	next, err := d.newMemTable(cf, 0, need, size)
	if err != nil {
		return err
	}
	logNum := d.mu.log.num
	if d.currentWALWrittenLocked() {
		var f vfs.File
		if logNum, f = d.takeNextWALLocked(); logNum == 0 {
			logNum = d.mu.versions.NextFileNum()
		}
		if err := d.openWALLocked(logNum, f); err != nil {
			next.unref(d) // never shared
			return err
		}
	}
	cf.mu.imm = append(cf.mu.imm, cf.mu.mem)
	next.logNum = logNum
	cf.mu.mem = next
	d.advanceEmptyFamiliesLocked(logNum)
	d.updateReadStateLocked(cf)
	d.maybeScheduleFlushLocked()
	d.startNextWALLocked()
	d.prepareNextMemTableLocked(cf)
	return nil
}

// currentWALWrittenLocked reports whether the current WAL holds a record.
// One that holds none also serves the successor of a memtable being
// rotated, as RocksDB's SwitchMemtable reuses an empty log: everything the
// rotated memtable holds is in older WALs (or in none, written with
// DisableWAL). Without this, a flush of several families at once (Close,
// a checkpoint, max_total_wal_size) would start one WAL per family and
// leave all but the last behind empty, each keeping the families that
// moved onto it from letting older WALs go. d.mu must be held, with the
// commit pipeline drained.
func (d *DB) currentWALWrittenLocked() bool {
	n := len(d.mu.walStarts)
	return d.mu.log.file == nil || n == 0 || d.commit.walBytes.Load() != d.mu.walStarts[n-1]
}

// advanceEmptyFamiliesLocked moves the families that hold no unflushed
// write onto WAL logNum, which just became the current one: the older WALs
// hold nothing of theirs, so they must not keep those WALs alive (RocksDB
// does the same in SwitchMemtable). Only memory changes: at Open the
// records of an older WAL for such a family are found flushed already, or
// absent. d.mu must be held, with the commit pipeline drained.
func (d *DB) advanceEmptyFamiliesLocked(logNum uint64) {
	for _, cf := range d.mu.fams {
		if len(cf.mu.imm) == 0 && cf.mu.mem.Empty() && cf.mu.mem.logNum < logNum {
			cf.mu.mem.logNum = logNum
		}
	}
}

// openWALLocked makes WAL logNum the current one: f when it was created
// ahead (startNextWALLocked), otherwise one created now. The previous WAL is
// synced here and closed in the background (its contents are already
// flushed to the OS). d.mu must be held.
func (d *DB) openWALLocked(logNum uint64, f vfs.File) error {
	name := d.path(base.MakeFilename(base.FileKindLog, logNum))
	// A rotation that cannot make its new WAL fails the write that needed
	// it, and every later one: the failure is the background error (as
	// RocksDB's SwitchMemtable makes it), so that writes fail with it and
	// strata.background-error and the BackgroundError event report it,
	// instead of each write retrying and failing on its own with nothing
	// reported. At Open there is no old WAL: the error fails the Open.
	rotating := d.mu.log.file != nil
	fail := func(err error) error {
		if rotating {
			d.setBgErrLocked(err)
			d.mu.cond.Broadcast()
		}
		return err
	}
	if f == nil {
		var err error
		if f, err = d.createWALFile(logNum, d.takeRecycleWALLocked()); err != nil {
			return fail(err)
		}
	}
	killpoint.Maybe("wal.rotate")
	if old := d.mu.log.file; old != nil {
		// Syncing the old log keeps the durability promise of writes that
		// were not synced but whose successors in a new log may be. When
		// it fails (now or in an earlier sync: syncLogLocked keeps the
		// failure) those writes may be lost, so no write may follow them
		// in a new log: the failure is the background error, the old log
		// stays the current one, open, and the new one, never written,
		// goes.
		err := d.mu.log.writer.Flush()
		if err == nil {
			err = d.syncLogLocked()
		}
		if err != nil {
			f.Close()
			_ = d.fs.Remove(name)
			return fail(errors.Wrapf(err, "strata: syncing WAL %06d.log before replacing it", d.mu.log.num))
		}
		d.closeWALInBackground(d.mu.log.num, old)
	}
	d.mu.log.num = logNum
	d.mu.wals = append(d.mu.wals, logNum)
	d.mu.walStarts = append(d.mu.walStarts, d.commit.walBytes.Load())
	d.mu.log.file = f
	d.mu.log.writer = d.newWALWriter(f, logNum)
	d.evWALCreated(logNum, name)
	return nil
}

// maybeScheduleFlushLocked starts a flush when one is due and none runs.
// One flush runs at a time for all families, oldest memtable first. d.mu
// must be held.
func (d *DB) maybeScheduleFlushLocked() {
	if d.mu.flushing || d.mu.closing || d.mu.bgErr != nil || d.opts.ReadOnly || d.oldestImmLocked() == nil {
		return
	}
	d.mu.flushing = true
	d.mu.bgWG.Add(1)
	go func() {
		defer d.mu.bgWG.Done()
		d.mu.Lock()
		defer d.mu.Unlock()
		for d.mu.bgErr == nil {
			cf := d.oldestImmLocked()
			if cf == nil {
				break
			}
			if err := d.flushOldestLocked(cf); err != nil {
				if !cf.mu.vf.Dropped() {
					d.setBgErrLocked(err)
					continue
				}
				// A family dropped during its flush: what failed
				// belongs to nothing.
				cf.mu.imm = nil
			}
		}
		d.mu.flushing = false
		d.mu.cond.Broadcast()
		d.maybeScheduleCompactionLocked()
	}()
}

// oldestImmLocked returns the family whose oldest immutable memtable has
// the oldest WAL, or nil when no family has one: flushing it first frees
// WALs soonest. d.mu must be held.
func (d *DB) oldestImmLocked() *ColumnFamily {
	var best *ColumnFamily
	for _, cf := range d.mu.fams {
		if len(cf.mu.imm) > 0 && (best == nil || cf.mu.imm[0].logNum < best.mu.imm[0].logNum) {
			best = cf
		}
	}
	return best
}

// flushOldestLocked writes cf's oldest immutable memtable to an L0 table
// and records it in the MANIFEST. d.mu must be held; it is released while
// the table is written.
func (d *DB) flushOldestLocked(cf *ColumnFamily) error {
	m := cf.mu.imm[0]
	// The flush reads m without d.mu: a drop of the family meanwhile
	// drops the family's reference, not this one.
	m.refs.Add(1)
	defer m.unref(d)
	var meta *version.FileMetadata
	var blobs []version.BlobFileAddition
	var err error
	start := time.Now()
	ev := FlushInfo{JobID: d.newJobID(), ColumnFamilyName: cf.name, InputBytes: uint64(m.ApproximateMemoryUsage())}
	d.evFlushBegin(ev)
	defer func() { d.evFlushEnd(ev, meta, start, err) }()
	if !m.Empty() {
		var held bool
		meta, blobs, held, err = d.writeLevel0TableLocked(cf, m.MemTable)
		if held {
			defer d.releaseSnapshotHoldLocked()
		}
		if err != nil {
			return err
		}
	}
	vs := d.mu.versions
	// No edit may slip in between the check of the drop and this edit
	// (see version.VersionSet.WaitForWriter).
	vs.WaitForWriter()
	if cf.mu.vf.Dropped() {
		// The family was dropped while its table was written: the table
		// belongs to nothing.
		if meta != nil {
			delete(d.mu.pendingOutputs, meta.FileNum)
			if d.removeFile(base.FileKindTable, meta.FileNum) != nil {
				// No version has it: the next sweep retries.
				d.mu.obsoleteTables = append(d.mu.obsoleteTables, meta.FileNum)
			}
			meta = nil
		}
		for _, b := range blobs {
			delete(d.mu.pendingOutputs, b.FileNum)
			d.removeFile(base.FileKindBlob, b.FileNum)
		}
		return nil
	}
	// The WAL to keep after this flush: the next memtable's.
	nextLog := cf.mu.mem.logNum
	if len(cf.mu.imm) > 1 {
		nextLog = cf.mu.imm[1].logNum
	}
	ve := &version.Edit{
		ColumnFamily: cf.id,
		LogNumber:    nextLog, HasLogNumber: true,
		PrevLogNumber: 0, HasPrevLogNumber: true,
		LastSequence: base.SeqNum(d.visibleSeq.Load()), HasLastSequence: true,
	}
	if meta != nil {
		ve.NewFiles = append(ve.NewFiles, version.NewFileEntry{Level: 0, Meta: meta})
	}
	ve.BlobFiles = blobs
	if len(d.mu.fams) > 1 {
		// With several families the WALs to keep are not those of one
		// family's log number: record the oldest any family needs, as
		// RocksDB does, so that its tools see the same.
		ve.MinLogNumberToKeep, ve.HasMinLogNumberToKeep = d.minLogToKeepAfterLocked(cf, nextLog), true
	}
	killpoint.Maybe("flush.before_manifest")
	if err = vs.LogAndApply(ve); err != nil {
		err = errors.Wrap(err, "strata: recording flush in MANIFEST")
		return err
	}
	d.noteBlobFilesLocked(blobs)
	if meta != nil {
		// Blob files count as bytes the flush wrote (RocksDB's
		// write amplification counts them too).
		n := meta.Size + blobFileBytes(blobs)
		delete(d.mu.pendingOutputs, meta.FileNum)
		d.stats.flushes.Add(1)
		d.stats.flushBytes.Add(n)
		d.stats.level[0].bytesWritten.Add(n)
		cf.stats.flushes.Add(1)
		cf.stats.flushBytes.Add(n)
	}
	cf.mu.imm = cf.mu.imm[1:]
	d.updateReadStateLocked(cf)
	// m is in no current structure now: once the readStates that list it
	// are released (at once, unless a reader holds one), its arena is
	// reused.
	m.unref(d)
	d.deleteObsoleteFilesLocked()
	d.mu.cond.Broadcast()
	return nil
}

// minLogToKeepAfterLocked is the oldest WAL any family needs once cf's
// oldest memtable is flushed and cf's log number is nextLog. d.mu must be
// held.
func (d *DB) minLogToKeepAfterLocked(cf *ColumnFamily, nextLog uint64) uint64 {
	min := nextLog
	for _, x := range d.mu.fams {
		if x == cf {
			continue
		}
		if n := x.minUnflushedLogLocked(); n < min {
			min = n
		}
	}
	return min
}

// writeLevel0TableLocked writes the contents of m, a memtable of cf, into a
// new table file. d.mu must be held; it is released during the write.
// held reports that the filter changed entries and d.mu.snapshotHold was
// taken: the caller releases it once the table is installed (or not).
// The blob files it wrote (blob_files on) are returned for the flush's
// MANIFEST edit; they stay pending outputs until noteBlobFilesLocked.
func (d *DB) writeLevel0TableLocked(cf *ColumnFamily, m *memtable.MemTable) (meta *version.FileMetadata, blobs []version.BlobFileAddition, held bool, err error) {
	fileNum := d.mu.versions.NextFileNum()
	d.mu.pendingOutputs[fileNum] = struct{}{}
	snaps := d.mu.snapshots.seqs()
	it := cf.flushIter(m, snaps, true)
	d.mu.Unlock()
	start := time.Now()
	meta, blobs, err = d.writeFlushTable(cf, fileNum, it, m)
	d.stats.flushMicros.Add(uint64(time.Since(start).Microseconds()))
	d.mu.Lock()
	if err != nil {
		delete(d.mu.pendingOutputs, fileNum)
		return nil, nil, false, err
	}
	if ff, ok := it.(*flushFilterIter); ok && ff.altered && !d.mu.snapshots.newerThan(snaps) {
		d.mu.snapshotHold++
		return meta, blobs, true, nil
	} else if ok && ff.altered {
		// A snapshot taken during the flush reads the memtable's entries
		// the filter took for seen by no snapshot (see compactLocked):
		// write the memtable again, unfiltered (the filter runs in later
		// compactions).
		d.discardOutputsLocked([]*version.FileMetadata{meta})
		for _, b := range blobs {
			delete(d.mu.pendingOutputs, b.FileNum)
			d.removeFile(base.FileKindBlob, b.FileNum)
		}
		fileNum = d.mu.versions.NextFileNum()
		d.mu.pendingOutputs[fileNum] = struct{}{}
		snaps = d.mu.snapshots.seqs()
		it = cf.flushIter(m, snaps, false)
		d.mu.Unlock()
		meta, blobs, err = d.writeFlushTable(cf, fileNum, it, m)
		d.mu.Lock()
		if err != nil {
			delete(d.mu.pendingOutputs, fileNum)
			return nil, nil, false, err
		}
	}
	return meta, blobs, false, nil
}

// writeFlushTable writes table fileNum of a flush from it, with the
// family's blob files when they are on; on failure nothing it wrote stays.
// d.mu must not be held.
func (d *DB) writeFlushTable(cf *ColumnFamily, fileNum uint64, it iterator.Iterator, m *memtable.MemTable) (*version.FileMetadata, []version.BlobFileAddition, error) {
	bw := cf.newBlobWriter()
	meta, err := cf.writeTable(fileNum, it, m.Tombstones(base.MaxSeqNum), 0, bw)
	var blobs []version.BlobFileAddition
	if err == nil {
		blobs, err = bw.finish()
		if err != nil {
			d.fs.Remove(d.path(base.MakeFilename(base.FileKindTable, fileNum)))
		}
	}
	if err != nil {
		bw.abandon()
		return nil, nil, err
	}
	return meta, blobs, nil
}

// unflushedLocked reports whether any family holds writes only in its
// memtables. d.mu must be held.
func (d *DB) unflushedLocked() bool {
	for _, cf := range d.mu.fams {
		if !cf.mu.mem.Empty() || len(cf.mu.imm) > 0 {
			return true
		}
	}
	return false
}

// flushAllLocked rotates every non-empty memtable and waits until every
// memtable up to them is flushed. The commit pipeline must be drained (or
// closed) and d.mu held.
func (d *DB) flushAllLocked() error {
	for _, cf := range d.mu.fams {
		if !cf.mu.mem.Empty() {
			if err := d.rotateMemtableLocked(cf, 0); err != nil {
				return err
			}
		}
	}
	for d.oldestImmLocked() != nil {
		if d.mu.bgErr != nil {
			return d.mu.bgErr
		}
		d.maybeScheduleFlushLocked()
		d.mu.cond.Wait()
	}
	return d.mu.bgErr
}

// flushFamilyLocked rotates cf's memtable when it holds writes and waits
// until every memtable of cf is flushed. The commit pipeline must be
// drained and d.mu held.
func (d *DB) flushFamilyLocked(cf *ColumnFamily) error {
	if !cf.mu.mem.Empty() {
		if err := d.rotateMemtableLocked(cf, 0); err != nil {
			return err
		}
	}
	for len(cf.mu.imm) > 0 {
		if d.mu.bgErr != nil {
			return d.mu.bgErr
		}
		if d.mu.closing {
			return errors.Wrap(ErrClosed, "strata: database closed during a flush")
		}
		d.maybeScheduleFlushLocked()
		d.mu.cond.Wait()
	}
	return d.mu.bgErr
}

// Flush writes the default family's memtable to a table file; the data is
// durable on return.
func (d *DB) Flush() error { return d.def.Flush() }

// Flush writes the family's memtable to a table file; the data is durable
// on return.
func (cf *ColumnFamily) Flush() error {
	d := cf.d
	if err := cf.check(d); err != nil {
		return err
	}
	if d.opts.ReadOnly {
		return errors.Wrap(ErrReadOnly, "strata: Flush on a read-only database")
	}
	if err := d.beginOp("Flush"); err != nil {
		return err
	}
	defer d.endOp()
	// Rotate with the commit pipeline drained, so that no write is
	// inserting into the memtable being rotated, and so that the flush
	// covers every write acknowledged before Flush was called.
	var flushed *memTable
	if err := d.exclusive(func() (err error) {
		flushed, err = d.rotateForFlush(cf)
		return err
	}); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for flushed != nil && cf.isImmutableLocked(flushed) {
		if d.mu.bgErr != nil {
			return d.mu.bgErr
		}
		if d.mu.closing {
			return errors.Wrap(ErrClosed, "strata: database closed during Flush")
		}
		d.maybeScheduleFlushLocked()
		d.mu.cond.Wait()
	}
	return d.mu.bgErr
}

// rotateForFlush rotates cf for a Flush call, with the commit pipeline
// drained. It returns the memtable the flush must wait for, if any.
func (d *DB) rotateForFlush(cf *ColumnFamily) (*memTable, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.bgErr != nil {
		return nil, d.mu.bgErr
	}
	if cf.mu.vf.Dropped() {
		return nil, errors.Wrapf(ErrInvalidArgument, "strata: column family %q was dropped", cf.name)
	}
	if cf.mu.mem.Empty() {
		if n := len(cf.mu.imm); n > 0 {
			return cf.mu.imm[n-1], nil
		}
		return nil, nil
	}
	flushed := cf.mu.mem
	return flushed, d.rotateMemtableLocked(cf, 0)
}

func (cf *ColumnFamily) isImmutableLocked(m *memTable) bool {
	for _, x := range cf.mu.imm {
		if x == m {
			return true
		}
	}
	return false
}
