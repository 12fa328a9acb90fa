package db

import (
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/killpoint"
	"github.com/stratadb/strata/internal/memtable"
	"github.com/stratadb/strata/internal/record"
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

// nextMemTableSizeLocked returns the arena size for the next memtable of the
// write path and doubles the one after it, up to the write buffer size.
// d.mu must be held.
func (d *DB) nextMemTableSizeLocked() int {
	wbs := int(d.writeBufferSize.Load())
	size := min(wbs, max(d.mu.memNextSize, initialMemTableSize))
	d.mu.memNextSize = min(wbs, 2*size)
	return size
}

// noteSummaryPrefixLocked takes the summary prefix for the memtables to
// come from m, which is being replaced: the keys written next most likely
// share what m's keys shared. d.mu must be held.
func (d *DB) noteSummaryPrefixLocked(m *memTable) {
	if p := m.CommonPrefix(); p != nil {
		d.mu.summaryPrefix = p
	}
}

// newMemTable makes a memtable whose arena has size bytes, or more when it
// must hold need bytes. d.mu must be held. Open, SetOptions and the write path keep the size
// within memtable.MaxArenaSize; a size beyond it is an ErrInvalidArgument
// error, never a panic.
func (d *DB) newMemTable(logNum uint64, need, size int) (*memTable, error) {
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
	m.SetSummaryPrefix(d.mu.summaryPrefix)
	mt := &memTable{MemTable: m, logNum: logNum, size: size}
	mt.refs.Store(1) // the DB's, dropped when it is retired after its flush
	return mt, nil
}

// rotateMemtableLocked makes the mutable memtable immutable, starts a new WAL
// for its successor and schedules a flush. An empty memtable too small for
// need is just replaced. d.mu must be held.
func (d *DB) rotateMemtableLocked(need int) error {
	size := d.nextMemTableSizeLocked()
	if d.closed.Load() {
		// The final flush of Close: nothing is written after it, so the
		// successor needs no room (a stray write would replace it, as an
		// empty memtable too small for its need).
		size = 0
	}
	if d.mu.mem.Empty() {
		m, err := d.newMemTable(d.mu.mem.logNum, need, size)
		if err != nil {
			return err
		}
		old := d.mu.mem
		d.mu.mem = m
		d.updateReadStateLocked()
		// The replaced memtable is in no current structure: its arena
		// goes once the readers of older views are done with it.
		old.unref(d)
		return nil
	}
	// Make the successor first: a failure leaves everything as it was.
	d.noteSummaryPrefixLocked(d.mu.mem)
	next, err := d.newMemTable(0, need, size)
	if err != nil {
		return err
	}
	logNum := d.mu.versions.NextFileNum()
	if err := d.openWALLocked(logNum); err != nil {
		next.unref(d) // never shared
		return err
	}
	d.mu.imm = append(d.mu.imm, d.mu.mem)
	next.logNum = logNum
	d.mu.mem = next
	d.updateReadStateLocked()
	d.maybeScheduleFlushLocked()
	return nil
}

// openWALLocked creates WAL logNum and makes it the current one, closing the
// previous WAL (its contents are already flushed to the OS). d.mu must be
// held.
func (d *DB) openWALLocked(logNum uint64) error {
	name := d.path(base.MakeFilename(base.FileKindLog, logNum))
	create := vfs.CreateMapped
	if d.opts.WALWriteSyscalls {
		create = vfs.FS.Create
	}
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
	f, err := create(d.fs, name)
	if err != nil {
		return fail(errors.Wrapf(err, "strata: creating WAL %s", name))
	}
	if err := d.syncDir(); err != nil {
		f.Close()
		_ = d.fs.Remove(name)
		return fail(err)
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
		if err := old.Close(); err != nil {
			f.Close()
			_ = d.fs.Remove(name)
			return fail(errors.Wrapf(err, "strata: closing WAL %06d.log", d.mu.log.num))
		}
	}
	d.mu.log.num = logNum
	d.mu.wals = append(d.mu.wals, logNum)
	d.mu.log.file = f
	d.mu.log.writer = record.NewWriter(f, logNum)
	d.evWALCreated(logNum, name)
	return nil
}

// maybeScheduleFlushLocked starts a flush when one is due and none runs.
// d.mu must be held.
func (d *DB) maybeScheduleFlushLocked() {
	if d.mu.flushing || len(d.mu.imm) == 0 || d.mu.closing || d.mu.bgErr != nil || d.opts.ReadOnly {
		return
	}
	d.mu.flushing = true
	d.mu.bgWG.Add(1)
	go func() {
		defer d.mu.bgWG.Done()
		d.mu.Lock()
		defer d.mu.Unlock()
		for len(d.mu.imm) > 0 && d.mu.bgErr == nil {
			if err := d.flushOldestLocked(); err != nil {
				d.setBgErrLocked(err)
			}
		}
		d.mu.flushing = false
		d.mu.cond.Broadcast()
		d.maybeScheduleCompactionLocked()
	}()
}

// flushOldestLocked writes the oldest immutable memtable to an L0 table and
// records it in the MANIFEST. d.mu must be held; it is released while the
// table is written.
func (d *DB) flushOldestLocked() error {
	m := d.mu.imm[0]
	// The WAL to keep after this flush: the next memtable's.
	nextLog := d.mu.mem.logNum
	if len(d.mu.imm) > 1 {
		nextLog = d.mu.imm[1].logNum
	}
	var meta *version.FileMetadata
	var err error
	start := time.Now()
	ev := FlushInfo{JobID: d.newJobID(), InputBytes: uint64(m.ApproximateMemoryUsage())}
	d.evFlushBegin(ev)
	defer func() { d.evFlushEnd(ev, meta, start, err) }()
	if !m.Empty() {
		meta, err = d.writeLevel0TableLocked(m.MemTable)
		if err != nil {
			return err
		}
	}
	ve := &version.Edit{
		LogNumber: nextLog, HasLogNumber: true,
		PrevLogNumber: 0, HasPrevLogNumber: true,
		LastSequence: base.SeqNum(d.visibleSeq.Load()), HasLastSequence: true,
	}
	if meta != nil {
		ve.NewFiles = append(ve.NewFiles, version.NewFileEntry{Level: 0, Meta: meta})
	}
	killpoint.Maybe("flush.before_manifest")
	if err = d.mu.versions.LogAndApply(ve); err != nil {
		err = errors.Wrap(err, "strata: recording flush in MANIFEST")
		return err
	}
	if meta != nil {
		delete(d.mu.pendingOutputs, meta.FileNum)
		d.stats.flushes.Add(1)
		d.stats.flushBytes.Add(meta.Size)
		d.stats.level[0].bytesWritten.Add(meta.Size)
	}
	d.mu.imm = d.mu.imm[1:]
	d.updateReadStateLocked()
	// m is in no current structure now: once the readStates that list it
	// are released (at once, unless a reader holds one), its arena is
	// reused.
	m.unref(d)
	d.deleteObsoleteFilesLocked()
	d.mu.cond.Broadcast()
	return nil
}

// writeLevel0TableLocked writes the contents of m into a new table file.
// d.mu must be held; it is released during the write.
func (d *DB) writeLevel0TableLocked(m *memtable.MemTable) (*version.FileMetadata, error) {
	fileNum := d.mu.versions.NextFileNum()
	d.mu.pendingOutputs[fileNum] = struct{}{}
	it := d.flushIter(m)
	d.mu.Unlock()
	start := time.Now()
	meta, err := d.writeTable(fileNum, it, m.Tombstones(base.MaxSeqNum), 0)
	d.stats.flushMicros.Add(uint64(time.Since(start).Microseconds()))
	d.mu.Lock()
	if err != nil {
		delete(d.mu.pendingOutputs, fileNum)
		return nil, err
	}
	return meta, nil
}

// flushAllLocked rotates a non-empty memtable and waits until every
// memtable up to it is flushed. d.mu must be held.
func (d *DB) flushAllLocked() error {
	if !d.mu.mem.Empty() {
		if err := d.rotateMemtableLocked(0); err != nil {
			return err
		}
	}
	for len(d.mu.imm) > 0 {
		if d.mu.bgErr != nil {
			return d.mu.bgErr
		}
		d.maybeScheduleFlushLocked()
		d.mu.cond.Wait()
	}
	return d.mu.bgErr
}

// Flush writes the memtable to a table file; the data is durable on return.
func (d *DB) Flush() error {
	if err := d.checkOpen(); err != nil {
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
		flushed, err = d.rotateForFlush()
		return err
	}); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for flushed != nil && d.isImmutableLocked(flushed) {
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

// rotateForFlush rotates for a Flush call, with the commit pipeline drained.
// It returns the memtable the flush must wait for, if any.
func (d *DB) rotateForFlush() (*memTable, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.bgErr != nil {
		return nil, d.mu.bgErr
	}
	if d.mu.mem.Empty() {
		if n := len(d.mu.imm); n > 0 {
			return d.mu.imm[n-1], nil
		}
		return nil, nil
	}
	flushed := d.mu.mem
	return flushed, d.rotateMemtableLocked(0)
}

func (d *DB) isImmutableLocked(m *memTable) bool {
	for _, x := range d.mu.imm {
		if x == m {
			return true
		}
	}
	return false
}
