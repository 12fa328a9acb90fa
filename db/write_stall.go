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
// disabled (nothing would end the stall). d.mu must be held.
func (d *DB) writeStallLocked() writeStall {
	if d.opts.CompactionStyle != LevelCompaction || d.comp.disableAuto.Load() {
		return stallNone
	}
	l0 := d.l0CountLocked()
	if l0 >= d.l0Stop() {
		return stallStop
	}
	pending := d.pendingCompactionBytesLocked()
	if pending >= uint64(d.opts.HardPendingCompactionBytesLimit) {
		return stallStop
	}
	if l0 >= d.l0Slowdown() || pending >= uint64(d.opts.SoftPendingCompactionBytesLimit) {
		return stallSlowdown
	}
	return stallNone
}

// stallReasonLocked names the cause of a stallStop. d.mu must be held.
func (d *DB) stallReasonLocked() string {
	if d.l0CountLocked() >= d.l0Stop() {
		return "too many L0 files"
	}
	return "pending compaction bytes"
}

// refreshRoomFreeLocked recomputes roomFree. d.mu must be held.
func (d *DB) refreshRoomFreeLocked() {
	d.roomFree.Store(d.mu.bgErr == nil && d.writeStallLocked() != stallSlowdown)
}

// makeRoomForWriteLocked makes sure the mutable memtable can take b,
// rotating it and stalling as needed. d.mu must be held; it is released
// while waiting.
func (d *DB) makeRoomForWriteLocked(b *batch.Batch) error {
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
		stall := d.writeStallLocked()
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
		case d.mu.mem.fits(need):
			return nil
		case d.commit.unpublished.Load() > 0:
			// The memtable is replaced only with no write inserting into
			// it or waiting to be published (see commitPipeline).
			d.mu.Unlock()
			d.commit.waitDrainedLocked()
			d.mu.Lock()
			continue
		case len(d.mu.imm) >= d.opts.MaxWriteBufferNumber-1:
			// Every memtable is full: wait for a flush.
			d.evStallBeginLocked("memtables full")
			d.stallLocked()
			continue
		case stall == stallStop:
			d.evStallBeginLocked(d.stallReasonLocked())
			d.stallLocked()
			continue
		}
		if err := d.rotateMemtableLocked(need); err != nil {
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
