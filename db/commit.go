package db

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/batch"
	"github.com/stratadb/strata/internal/record"
)

// commitPipeline orders writes in three stages, as Pebble's commit pipeline
// and RocksDB's allow_concurrent_memtable_write do:
//
//  1. Under mu, one writer at a time: make room in the memtable (rotating
//     it, stalling), take the batch's sequence numbers and append its WAL
//     record. This stage is short: with the mapped WAL the record is a copy.
//  2. Insert the batch into the memtable. A writer that is alone (no writer
//     found mu held for a while, and nobody is inserting) inserts while
//     still holding mu, through the single-writer path and its insert hint;
//     otherwise it releases mu first and inserts concurrently
//     (memtable.AddConcurrent), so that writers on different cores insert
//     at the same time. A synced write then syncs the WAL (syncWAL groups
//     the fsyncs of concurrent writers).
//  3. Publish: visibleSeq advances, in sequence order, past every write
//     whose insert is done and whose predecessors are published. Write
//     returns once its own sequence numbers are visible.
//
// Invariants:
//   - Sequence numbers are assigned, and WAL records appended, in one order:
//     the order of stage 1 under mu. lastSeq is the last number assigned.
//   - visibleSeq never passes a sequence number whose insert is not done:
//     pending holds, in sequence order, every write that took numbers and
//     is not yet published; only its head can be published.
//   - Single-writer inserts (memtable Add, AddRangeDel) run only under mu
//     with the mutable memtable's reserved at 0, and concurrent ones
//     (AddConcurrent) only while their room is counted in reserved (a
//     batch's room is never 0), which only grows under mu: the two never
//     overlap. Concurrent inserts all go into the mutable memtable, which
//     is replaced only with the pipeline drained.
//   - The mutable memtable and the WAL are replaced (rotation, Flush) and
//     ingestion takes its sequence number only under mu with the pipeline
//     drained (unpublished == 0): no write is then inserting into the old
//     memtable, syncing the old WAL, or waiting to be published, and
//     visibleSeq == lastSeq.
//
// Layout: the fields are grouped by who writes them, each group on cache
// lines of its own (pad). With many writers, every line the holder of mu
// touches comes from the previous holder's core; a line also written by
// writers waiting for mu (blocked) or by publishers (unpublished, the
// ring's head) was fetched again, mid-section, each time one of them
// wrote it.
type commitPipeline struct {
	// mu serializes stage 1, and Flush, Ingest and Close's drain.
	mu sync.Mutex
	_  pad
	// blocked is set by a writer that found mu held (see lock); the
	// holder of mu moves it into contendedSeq.
	blocked atomic.Bool
	_       pad
	// contendedSeq is lastSeq when a writer last found mu held. Writers
	// insert concurrently until aloneAfter sequence numbers pass without
	// one (see commitWrite). Under mu.
	contendedSeq base.SeqNum
	// contended is set once a writer found mu held (contendedSeq is
	// meaningful). Under mu.
	contended bool
	closed    bool        // under mu
	lastSeq   base.SeqNum // under mu
	// walBytes is a running total of the bytes appended to the WALs (it
	// grows under mu); syncWAL compares positions in it.
	walBytes atomic.Uint64
	// pending is pushed under mu and popped under pubMu, so that taking a
	// sequence number never waits for a publisher.
	pending writerRing
	_       pad
	// unpublished counts the writers in pending. It grows under mu and
	// shrinks under pubMu.
	unpublished atomic.Int32
	_           pad

	// pubMu guards the popping of pending, the writers' applied and
	// waiting flags, and drainWaiting.
	pubMu        sync.Mutex
	drainWaiting bool
	drained      sync.Cond // L = &pubMu; signalled when unpublished drops to 0

	// syncMu makes one synced writer at a time sync the WAL; synced is the
	// walBytes position every byte below which is durable. syncErr is the
	// failure of a sync of the current WAL: once one failed, no later sync
	// of that WAL may succeed (see syncLogSyncMuLocked).
	syncMu  sync.Mutex
	synced  uint64
	syncErr error
}

// writer is one write in the pipeline.
type writer struct {
	b *batch.Batch
	// cf is the family of every record of b; with fams set (a batch over
	// several families) it is nil and fams lists them.
	cf         *ColumnFamily
	fams       []*ColumnFamily
	sync       bool
	disableWAL bool
	// validate, set by a transaction's Commit, runs under mu with the
	// pipeline drained before the write takes its sequence numbers: what
	// it checks cannot change before the write lands (RocksDB's
	// WriteCallback). An error stops the write.
	validate func() error
	// last is the last sequence number of the batch; walEnd its record's
	// end as a walBytes position.
	last   base.SeqNum
	walEnd uint64

	// Under commitPipeline.pubMu (published is also read without it):
	applied   bool        // the insert is done
	published atomic.Bool // visibleSeq has passed last
	waiting   bool        // cond has (or is about to have) a waiter
	cond      sync.Cond
}

var writerPool = sync.Pool{New: func() any { return new(writer) }}

// aloneAfter is how many sequence numbers must pass without a writer
// finding mu held before writers insert one at a time again. Long enough
// that writers on several goroutines, which meet at mu every few writes,
// keep inserting concurrently; a single-threaded writer never meets one.
const aloneAfter = 1 << 12

// lock takes mu, noting when it had to wait for it. A writer that finds
// mu held yields its P and tries again, up to lockSpins times, before it
// sleeps in mu.Lock: the holder keeps mu for well under a microsecond, and
// a writer asleep in the mutex costs a wake-up (a futex call when its P
// went idle meanwhile) and leaves its core idle until then, while one that
// yields lets the P run another goroutine (a writer encoding its batch, a
// flush) and keeps it busy.
func (c *commitPipeline) lock() {
	if c.mu.TryLock() {
		return
	}
	if !c.blocked.Load() {
		c.blocked.Store(true)
	}
	for i := 0; i < lockSpins; i++ {
		runtime.Gosched()
		if c.mu.TryLock() {
			return
		}
	}
	c.mu.Lock()
}

// lockSpins bounds the yields of lock before it sleeps: long enough that a
// writer on a busy pair of cores almost never sleeps, short enough that a
// writer behind a long holder (a memtable rotation) stops polling soon. The
// sweep that chose it (0, 50, 150 yields, fillrandom with 2 and 4 threads)
// is in docs/data/lock-spins-2026-11-30.txt.
const lockSpins = 150

// concurrentLocked reports whether the writer holding mu should insert
// into mem, the mutable memtable, concurrently: other writers met at mu
// recently, or some are inserting (their room is reserved).
func (c *commitPipeline) concurrentLocked(mem *memTable) bool {
	if c.blocked.Load() {
		c.blocked.Store(false)
		c.contendedSeq = c.lastSeq
		c.contended = true
	}
	return c.lastSeq-c.contendedSeq < aloneAfter || mem.reserved.Load() > 0
}

// loneLocked reports whether the writer holding mu is the only one about:
// no write is in the pipeline, none waits for mu, and none found it held
// in the last aloneAfter sequence numbers. Such a synced writer may sync
// its record under mu, in the write itself (flushSyncLocked): with other
// writers about it would hold them off mu for the sync, and they could not
// append the records that one sync after it would cover.
func (c *commitPipeline) loneLocked() bool {
	return c.unpublished.Load() == 0 && !c.blocked.Load() &&
		(!c.contended || c.lastSeq-c.contendedSeq >= aloneAfter)
}

// flushSyncLocked flushes the WAL record a synced write just framed (n
// bytes of walBytes) and, when every byte appended before it is durable,
// makes it durable in the same call (record.Writer.FlushSync: on Linux one
// pwritev2 with RWF_DSYNC instead of a write and an fdatasync). That call
// syncs only the bytes it writes, hence the condition. synced reports
// whether the record is durable; if not, the caller syncs as usual. A
// failure is also a failure of a sync of this WAL: the record's bytes may
// be in the page cache, written in part or not made durable, so no later
// sync of the WAL may succeed (syncErr, as in syncLogSyncMuLocked). c.mu
// must be held, with no write in the pipeline (loneLocked): nothing else
// appends or syncs meanwhile.
func (c *commitPipeline) flushSyncLocked(logW *record.Writer, n uint64) (synced bool, err error) {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if c.syncErr != nil || c.synced != c.walBytes.Load() {
		return false, logW.Flush()
	}
	synced, err = logW.FlushSync()
	if err != nil {
		c.syncErr = err
		return false, err
	}
	if synced {
		c.synced = c.walBytes.Load() + n
	}
	return synced, nil
}

// waitDrainedLocked waits until every write that took sequence numbers is
// published (and so done inserting and syncing). c.mu must be held, so that
// no write can start meanwhile.
func (c *commitPipeline) waitDrainedLocked() {
	if c.unpublished.Load() == 0 {
		return
	}
	c.pubMu.Lock()
	if c.drained.L == nil {
		c.drained.L = &c.pubMu
	}
	for c.unpublished.Load() > 0 {
		c.drainWaiting = true
		c.drained.Wait()
	}
	c.pubMu.Unlock()
}

// drain refuses new writers and waits for the ones in the pipeline.
func (c *commitPipeline) drain() {
	c.lock()
	c.closed = true
	c.waitDrainedLocked()
	c.mu.Unlock()
}

// exclusive runs fn under mu with the pipeline drained: no write is in it.
// Flush and Ingest use it to rotate the memtable or take a sequence number.
func (d *DB) exclusive(fn func() error) error {
	c := &d.commit
	c.lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.Wrap(ErrClosed, "strata: database is closed")
	}
	c.waitDrainedLocked()
	err := fn()
	// Ingestion publishes its sequence number itself.
	c.lastSeq = base.SeqNum(d.visibleSeq.Load())
	return err
}

// commitWrite runs a write through the pipeline and returns when it is
// visible (or failed).
func (d *DB) commitWrite(w *writer) error {
	c := &d.commit
	c.lock()
	if c.closed {
		c.mu.Unlock()
		return errors.Wrap(ErrClosed, "strata: database is closed")
	}
	b := w.b
	rangeDels := b.HasRangeDeletion()
	multi := w.fams != nil
	if rangeDels || multi || w.validate != nil {
		// Range tombstones have no concurrent insert path, and a batch
		// over several families inserts alone. A transaction validates
		// against every write that took sequence numbers.
		c.waitDrainedLocked()
		if w.validate != nil {
			if err := w.validate(); err != nil {
				c.mu.Unlock()
				return err
			}
		}
	}

	// Stage 1. With no stall and no background error, and room in the
	// memtable, the write needs nothing guarded by d.mu: the memtables,
	// the families and the WAL are replaced only under c.mu, which this
	// writer holds.
	cf := w.cf
	var err error
	if multi {
		d.mu.Lock()
		for _, f := range w.fams {
			if err = d.makeRoomForWriteLocked(f, b); err != nil {
				break
			}
		}
		d.evStallEndLocked()
		d.mu.Unlock()
	} else if cf.dropped.Load() {
		err = errors.Wrapf(ErrInvalidArgument, "strata: column family %q (id %d) was dropped", cf.name, cf.id)
	} else if !d.roomFree.Load() || !cf.mu.mem.fits(arenaNeed(b)) {
		d.mu.Lock()
		err = d.makeRoomForWriteLocked(cf, b)
		d.evStallEndLocked()
		d.mu.Unlock()
	}
	if err != nil {
		c.mu.Unlock()
		return err
	}
	var mem *memTable
	if !multi {
		mem = cf.mu.mem
	}
	logW, logF, logNum := d.mu.log.writer, d.mu.log.file, d.mu.log.num

	seq := c.lastSeq + 1
	b.SetSeq(seq)
	// needSync: the write is synced and its record is not durable yet.
	needSync := w.sync
	if !w.disableWAL {
		_, err := logW.WriteRecord(b.Data())
		if err == nil {
			if w.sync && c.loneLocked() {
				var synced bool
				synced, err = c.flushSyncLocked(logW, uint64(b.Len()))
				if synced {
					needSync = false
					d.stats.walSyncs.Add(1)
				}
			} else {
				err = logW.Flush()
			}
		}
		if err != nil {
			// No sequence number was taken: lastSeq is unchanged.
			c.mu.Unlock()
			err = errors.Wrapf(err, "strata: writing WAL %06d.log", logNum)
			d.setBackgroundError(err)
			return err
		}
		w.walEnd = c.walBytes.Add(uint64(b.Len()))
	}
	w.last = seq + base.SeqNum(b.Count()) - 1
	c.lastSeq = w.last

	// Stage 2. Alone: insert under mu with the single-writer path.
	alone := rangeDels || multi || d.opts.DisableConcurrentMemtableWrites || !c.concurrentLocked(mem)
	if alone && c.unpublished.Load() == 0 && !needSync {
		// Nothing is before this write and nothing can start until mu is
		// released: publish directly.
		// (A failed insert is a bug: the memtable was sized for the
		// batch. Later writes fail on the background error; the numbers
		// are published all the same, as on the queued path.)
		err := w.applyAlone(mem, seq)
		d.visibleSeq.Store(uint64(w.last))
		c.mu.Unlock()
		d.countWrite(w, b)
		if err != nil {
			d.setBackgroundError(err)
		}
		return err
	}
	c.enqueue(w)
	if alone {
		err = w.applyAlone(mem, seq)
		c.mu.Unlock()
		d.countWrite(w, b)
	} else {
		// Reserve the batch's room: the arena's usage lags behind
		// concurrent inserts (fits counts reserved).
		need := int64(arenaNeed(b))
		mem.reserved.Add(need)
		c.mu.Unlock()
		d.countWrite(w, b)
		_, err = applyBatch(mem.MemTable, b, seq, true)
		mem.reserved.Add(-need)
	}
	if err != nil {
		d.setBackgroundError(err)
	} else if needSync {
		err = d.syncWAL(logF, logNum, w.walEnd)
	}
	c.publish(d, w)
	return err
}

// applyAlone inserts w's batch through the single-writer path: into mem,
// or, for a batch over several families, into each record's family's
// memtable.
func (w *writer) applyAlone(mem *memTable, seq base.SeqNum) error {
	if w.fams != nil {
		return applyBatchFamilies(w.fams, w.b, seq)
	}
	_, err := applyBatch(mem.MemTable, w.b, seq, false)
	return err
}

// countWrite adds a write that took its sequence numbers to the write
// statistics. It runs after the commit lock is released: the counters are
// shared by every writer, and each update under the lock was a cache line
// fetched from the previous writer's core while the others waited.
func (d *DB) countWrite(w *writer, b *batch.Batch) {
	if !w.disableWAL {
		d.stats.walBytes.Add(uint64(b.Len()))
	}
	d.stats.writes.Add(1)
	d.stats.keysWritten.Add(uint64(b.Count()))
	d.stats.bytesWritten.Add(uint64(b.Len()))
}

// enqueue adds w, which just took the latest sequence numbers, to pending.
// c.mu must be held.
func (c *commitPipeline) enqueue(w *writer) {
	if w.cond.L == nil {
		w.cond.L = &c.pubMu
	}
	// w is not shared yet: its flags need no lock.
	w.applied, w.waiting = false, false
	w.published.Store(false)
	c.unpublished.Add(1)
	c.pending.push(w)
}

// publish marks w's insert done, publishes every write at the head of
// pending whose insert is done, and waits until w itself is published.
func (c *commitPipeline) publish(d *DB, w *writer) {
	c.pubMu.Lock()
	w.applied = true
	for {
		h := c.pending.front()
		if h == nil || !h.applied {
			break
		}
		c.pending.pop()
		d.visibleSeq.Store(uint64(h.last))
		// Read waiting before publishing h: once published, a writer
		// polling without pubMu may return and reuse h (writerPool). A
		// waiting one cannot: it needs pubMu to leave cond.Wait.
		waiting := h.waiting
		h.published.Store(true)
		if waiting {
			h.cond.Signal()
		}
		if c.unpublished.Add(-1) == 0 && c.drainWaiting {
			c.drainWaiting = false
			c.drained.Broadcast()
		}
	}
	if w.published.Load() {
		c.pubMu.Unlock()
		return
	}
	c.pubMu.Unlock()
	// The writes before w are inserting, most likely on other cores, for
	// about as long as w took: poll for a while before sleeping, which
	// costs a wake-up on both sides.
	for i := 0; i < publishSpins; i++ {
		runtime.Gosched()
		if w.published.Load() {
			return
		}
	}
	c.pubMu.Lock()
	for !w.published.Load() {
		w.waiting = true
		w.cond.Wait()
	}
	c.pubMu.Unlock()
}

// publishSpins bounds the polls of publish before it sleeps: fewer polls
// lose throughput to wake-ups of writers whose predecessors were about to
// publish; more gain nothing (docs/benchmarks-history.md, the pipeline
// round).
const publishSpins = 150

// syncWAL makes the WAL durable up to the walBytes position end. Concurrent
// synced writers share fsyncs: the one that syncs covers every record
// appended before it started, and the others find themselves covered. The
// WAL cannot be replaced meanwhile (the caller is unpublished), so every
// position up to walBytes lies in f or in WALs synced when they were
// replaced.
func (d *DB) syncWAL(f interface{ Sync() error }, logNum uint64, end uint64) error {
	c := &d.commit
	c.syncMu.Lock()
	if c.synced >= end {
		c.syncMu.Unlock()
		return nil
	}
	err := c.syncLogSyncMuLocked(f)
	c.syncMu.Unlock()
	if err != nil {
		err = errors.Wrapf(err, "strata: syncing WAL %06d.log", logNum)
		d.setBackgroundError(err)
	} else {
		d.stats.walSyncs.Add(1)
	}
	return err
}

// syncLogSyncMuLocked syncs f, the current WAL, and moves synced up to the
// walBytes position it covers. Once a sync of the WAL failed, it fails
// again without syncing: after a failed fsync Linux may have dropped the
// dirty pages it could not write (and marked them clean), so a later fsync
// that succeeds proves nothing about the records appended before the
// failure. Rotation and Close sync the WAL through it too, so that neither
// retires a WAL whose sync failed as if it were durable. The WAL is
// replaced only after a sync that succeeded, so syncErr belongs to the
// current WAL. c.syncMu must be held.
func (c *commitPipeline) syncLogSyncMuLocked(f interface{ Sync() error }) error {
	if c.syncErr != nil {
		return errors.Wrap(c.syncErr, "an earlier sync of this WAL failed")
	}
	target := c.walBytes.Load()
	if err := f.Sync(); err != nil {
		c.syncErr = err
		return err
	}
	c.synced = target
	return nil
}

// syncLogLocked syncs the current WAL (syncLogSyncMuLocked) for rotation and
// Close. d.mu must be held, with the commit pipeline drained.
func (d *DB) syncLogLocked() error {
	c := &d.commit
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	return c.syncLogSyncMuLocked(d.mu.log.file)
}

// syncLogToEndLocked makes every WAL record appended so far durable. An
// operation that makes a sequence number durable other than through the
// WAL (an ingestion's MANIFEST edit) calls it first: otherwise a power loss
// could keep that later sequence number and lose an earlier acknowledged
// Sync=false write, which is no prefix of the acknowledged writes. It
// syncs nothing when every appended byte is already durable, and fails
// when an earlier sync of the WAL did (syncLogSyncMuLocked). d.mu must be
// held, with the commit pipeline drained (so nothing is appended meanwhile).
func (d *DB) syncLogToEndLocked() error {
	if d.mu.log.file == nil {
		return nil
	}
	if err := d.mu.log.writer.Flush(); err != nil {
		return errors.Wrapf(err, "strata: writing WAL %06d.log", d.mu.log.num)
	}
	c := &d.commit
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if c.syncErr == nil && c.synced >= c.walBytes.Load() {
		return nil
	}
	if err := c.syncLogSyncMuLocked(d.mu.log.file); err != nil {
		return errors.Wrapf(err, "strata: syncing WAL %06d.log", d.mu.log.num)
	}
	d.stats.walSyncs.Add(1)
	return nil
}

// writerRing is a FIFO of writers with one pusher at a time (under
// commitPipeline.mu) and one popper at a time (under pubMu), which do not
// lock each other out: a push publishes its slot before the tail, and a
// pop reads the tail before the slot. It holds ringSize writers; a push to a
// full ring waits for a pop (the writers in flight would have to outnumber
// ringSize, one per goroutine).
type writerRing struct {
	tail  atomic.Uint64 // pushed under commitPipeline.mu
	_     pad
	slots [ringSize]atomic.Pointer[writer]
	_     pad
	head  atomic.Uint64 // popped under commitPipeline.pubMu
}

// pad keeps the fields before and after it on different cache lines (two
// lines: CPUs fetch adjacent lines in pairs).
type pad [128]byte

const ringSize = 1 << 10

// front returns the oldest writer, or nil when the ring is empty.
func (r *writerRing) front() *writer {
	h := r.head.Load()
	if h == r.tail.Load() {
		return nil
	}
	return r.slots[h%ringSize].Load()
}

func (r *writerRing) push(w *writer) {
	t := r.tail.Load()
	for t-r.head.Load() == ringSize {
		runtime.Gosched()
	}
	r.slots[t%ringSize].Store(w)
	r.tail.Store(t + 1)
}

func (r *writerRing) pop() {
	h := r.head.Load()
	r.slots[h%ringSize].Store(nil)
	r.head.Store(h + 1)
}
