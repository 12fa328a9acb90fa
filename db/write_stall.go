package db

import (
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/batch"
)

// writeStall is what the write path must do about compaction debt.
type writeStall int

const (
	stallNone     writeStall = iota
	stallSlowdown            // delay each write a little
	stallStop                // wait for compaction before rotating the memtable
)

// writeStallLocked applies RocksDB's stall rules for leveled compaction:
// L0 file count against the slowdown and stop triggers, and the estimated
// pending compaction bytes against the soft and hard limits. FIFO never
// stalls on them, and neither does a DB whose automatic compactions are
// disabled (nothing would end the stall). Each family stalls on its own
// debt. d.mu must be held.
func (cf *ColumnFamily) writeStallLocked() writeStall {
	if cf.opts.CompactionStyle != LevelCompaction || cf.comp.disableAuto.Load() {
		return stallNone
	}
	l0 := cf.l0CountLocked()
	if l0 >= cf.l0Stop() {
		return stallStop
	}
	pending := cf.pendingCompactionBytesLocked()
	if pending >= uint64(cf.opts.HardPendingCompactionBytesLimit) {
		return stallStop
	}
	if l0 >= cf.l0Slowdown() || pending >= uint64(cf.opts.SoftPendingCompactionBytesLimit) {
		return stallSlowdown
	}
	return stallNone
}

// stallReasonLocked names the cause of a stallStop. d.mu must be held.
func (cf *ColumnFamily) stallReasonLocked() string {
	if cf.l0CountLocked() >= cf.l0Stop() {
		return "too many L0 files"
	}
	return "pending compaction bytes"
}

// refreshRoomFreeLocked recomputes roomFree. d.mu must be held.
func (d *DB) refreshRoomFreeLocked() {
	free := d.mu.bgErr == nil && !d.walsOverLimitLocked()
	for _, cf := range d.mu.fams {
		if !free {
			break
		}
		free = cf.writeStallLocked() != stallSlowdown
	}
	d.roomFree.Store(free)
}

// maxTotalWALSize is the size past which the live WALs make the families
// holding the oldest one flush (RocksDB's max_total_wal_size): a family
// that receives few writes must not keep every WAL since its last flush.
// As RocksDB's default: four times the write buffers of all families.
func (d *DB) maxTotalWALSizeLocked() uint64 {
	if d.opts.MaxTotalWALSize > 0 {
		return uint64(d.opts.MaxTotalWALSize)
	}
	var sum uint64
	for _, cf := range d.mu.fams {
		sum += uint64(cf.writeBufferSize.Load()) * uint64(cf.opts.MaxWriteBufferNumber)
	}
	return 4 * sum
}

// walsOverLimitLocked reports whether the live WALs hold more than
// max_total_wal_size bytes while a family keeps the oldest one alive and
// another family exists (one family's WALs go with its flushes). d.mu must
// be held.
func (d *DB) walsOverLimitLocked() bool {
	if len(d.mu.fams) < 2 || len(d.mu.walStarts) < 2 {
		return false
	}
	return d.commit.walBytes.Load()-d.mu.walStarts[0] > d.maxTotalWALSizeLocked()
}

// flushOldestWALLocked rotates the memtables of every family with writes
// in the oldest live WAL, so that their flushes free it. The commit pipeline
// must be drained and d.mu held.
func (d *DB) flushOldestWALLocked() error {
	oldest := d.mu.wals[0]
	for _, cf := range d.mu.fams {
		if len(cf.mu.imm) == 0 && !cf.mu.mem.Empty() && cf.mu.mem.logNum <= oldest {
			if err := d.rotateMemtableLocked(cf, 0); err != nil {
				return err
			}
		}
	}
	d.refreshRoomFreeLocked()
	return nil
}

// makeRoomForWriteLocked makes sure cf's mutable memtable can take b,
// rotating it and stalling as needed. d.mu must be held; it is released
// while waiting.
func (d *DB) makeRoomForWriteLocked(cf *ColumnFamily, b *batch.Batch) error {
	need := arenaNeed(b)
	slowed := false
	for {
		if d.mu.bgErr != nil {
			return d.mu.bgErr
		}
		if d.mu.closing || d.closed.Load() {
			// Close has begun: it wakes stalled writers (they hold the
			// commit lock, which Close needs to drain the pipeline) and
			// they give up here.
			return errors.Wrap(ErrClosed, "strata: database is closed")
		}
		if cf.mu.vf.Dropped() {
			return errors.Wrapf(ErrInvalidArgument, "strata: column family %q (id %d) was dropped", cf.name, cf.id)
		}
		if d.walsOverLimitLocked() && d.commit.unpublished.Load() == 0 {
			if err := d.flushOldestWALLocked(); err != nil {
				return err
			}
		}
		stall := cf.writeStallLocked()
		switch {
		case !slowed && stall == stallSlowdown:
			// Delay this write by a millisecond, once, to let compaction
			// catch up without stopping writes.
			slowed = true
			d.mu.Unlock()
			time.Sleep(time.Millisecond)
			d.stats.stallMicros.Add(1000)
			d.mu.Lock()
			continue
		case cf.mu.mem.fits(need):
			return nil
		case d.commit.unpublished.Load() > 0:
			// The memtable is replaced only with no write inserting into
			// it or waiting to be published (see commitPipeline).
			d.mu.Unlock()
			d.commit.waitDrainedLocked()
			d.mu.Lock()
			continue
		case len(cf.mu.imm) >= cf.opts.MaxWriteBufferNumber-1:
			// Every memtable is full: wait for a flush.
			d.evStallBeginLocked(cf.name, "memtables full")
			d.stallLocked()
			continue
		case stall == stallStop:
			d.evStallBeginLocked(cf.name, cf.stallReasonLocked())
			d.stallLocked()
			continue
		}
		if err := d.rotateMemtableLocked(cf, need); err != nil {
			return err
		}
	}
}

// stallLocked waits for background work to change the picture. d.mu must be
// held.
func (d *DB) stallLocked() {
	start := time.Now()
	d.maybeScheduleFlushLocked()
	d.maybeScheduleCompactionLocked()
	d.mu.cond.Wait()
	d.stats.stallMicros.Add(uint64(time.Since(start).Microseconds()))
	d.stats.stalls.Add(1)
}
