package db

import (
	"encoding/binary"
	"io"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/batch"
	"github.com/stratadb/strata/internal/memtable"
)

// The commit pipeline: LevelDB-style group commit. Writers queue up; the
// writer at the head of the queue becomes the leader, takes the batches of
// the writers behind it (same DisableWAL setting, up to maxGroupBytes),
// writes them to the WAL as one record with at most one fsync, applies them
// to the memtable and publishes their sequence numbers, then wakes the
// group. Only the leader touches the WAL writer and the mutable memtable, so
// both see a single writer.
type commitPipeline struct {
	mu     sync.Mutex
	queue  []*writer
	closed bool
	// idle is signalled when the queue empties (for Close).
	idle sync.Cond
	// scratch is the leader's buffer for a merged group batch.
	scratch batch.Batch
}

// writer is one Write call waiting in the pipeline.
type writer struct {
	b          *batch.Batch
	sync       bool
	disableWAL bool
	// flush marks a Flush call: it leads a group of its own and rotates
	// the memtable, so no leader is applying to the memtable it rotates.
	flush bool
	// flushed is the memtable the flush rotated out, if any.
	flushed *memTable
	done    bool
	err     error
	cond    sync.Cond

	// ingest, when set, marks a DB.Ingest call: it leads a group of its
	// own and runs ingest, so that no write commits while the ingestion
	// takes its sequence number (ingest.go).
	ingest func() error
}

const maxGroupBytes = 1 << 20

var writerPool = sync.Pool{New: func() any { return new(writer) }}

// drain refuses new writers and waits for the queued ones to finish.
func (c *commitPipeline) drain() {
	c.mu.Lock()
	c.closed = true
	if c.idle.L == nil {
		c.idle.L = &c.mu
	}
	for len(c.queue) > 0 {
		c.idle.Wait()
	}
	c.mu.Unlock()
}

// Write applies the batch atomically. The batch's slices must stay untouched
// until Write returns.
func (d *DB) Write(b *Batch, wo *WriteOptions) error {
	if b == nil {
		return errors.Wrap(ErrInvalidArgument, "strata: nil batch")
	}
	if b.err != nil {
		return b.err
	}
	if b.hasMerge && d.opts.MergeOperator == nil {
		return errMergeWithoutOperator
	}
	return d.write(&b.b, wo)
}

// Put sets key to value.
func (d *DB) Put(key, value []byte, wo *WriteOptions) error {
	if err := checkBatchGrowth(0, 0, len(key), len(value), true); err != nil {
		return err
	}
	b := batchPool.Get().(*batch.Batch)
	b.Reset()
	b.Put(key, value)
	err := d.write(b, wo)
	batchPool.Put(b)
	return err
}

// Delete removes key.
func (d *DB) Delete(key []byte, wo *WriteOptions) error {
	if err := checkBatchGrowth(0, 0, len(key), 0, false); err != nil {
		return err
	}
	b := batchPool.Get().(*batch.Batch)
	b.Reset()
	b.Delete(key)
	err := d.write(b, wo)
	batchPool.Put(b)
	return err
}

// DeleteRange removes every key in [start, end). start > end is
// ErrInvalidArgument; start == end is a no-op.
func (d *DB) DeleteRange(start, end []byte, wo *WriteOptions) error {
	if base.CompareUser(start, end) > 0 {
		return errors.Wrapf(ErrInvalidArgument, "strata: DeleteRange start %q > end %q", start, end)
	}
	if err := checkBatchGrowth(0, 0, len(start), len(end), true); err != nil {
		return err
	}
	b := batchPool.Get().(*batch.Batch)
	b.Reset()
	b.DeleteRange(start, end)
	err := d.write(b, wo)
	batchPool.Put(b)
	return err
}

var batchPool = sync.Pool{New: func() any { return new(batch.Batch) }}

// maxBatchArena is the largest arenaNeed a batch may have: a batch is
// applied to one memtable whole, and a memtable's arena has at most
// memtable.MaxArenaSize bytes. The bound also keeps every length a batch
// encodes (varint32 in RocksDB's layout) and its record count (a uint32)
// in range. Only tests change it (to reach it cheaply).
var maxBatchArena int64 = memtable.MaxArenaSize - memtable.EmptySize

// perRecordArena is the arena space a record takes beyond its key and value
// bytes: a node with the tallest tower and a trailer.
var perRecordArena = int64(memtable.SizeFor(base.TrailerLen, 0) - memtable.EmptySize)

// batchSlack bounds a record's encoding beyond its key and value bytes (a
// tag and two varints) plus the batch header.
const batchSlack = batch.HeaderLen + 1 + 2*binary.MaxVarintLen64

// checkBatchGrowth returns an ErrInvalidArgument error naming the sizes when
// a batch of curLen encoded bytes and count records would pass maxBatchArena
// with one more record of keyLen and valueLen bytes (hasValue: the record
// encodes a second string, a value or a range end). The fast path bounds the
// record's encoding from above; batchGrowthError decides exactly.
func checkBatchGrowth(curLen int, count uint32, keyLen, valueLen int, hasValue bool) error {
	if batchFits(curLen, count, keyLen+valueLen) {
		return nil
	}
	return batchGrowthError(curLen, count, keyLen, valueLen, hasValue)
}

// batchFits is the inlinable fast path of checkBatchGrowth.
func batchFits(curLen int, count uint32, kvLen int) bool {
	return int64(curLen+kvLen)+int64(count+1)*perRecordArena+batchSlack <= maxBatchArena
}

//go:noinline
func batchGrowthError(curLen int, count uint32, keyLen, valueLen int, hasValue bool) error {
	n := int64(curLen)
	if n == 0 {
		n = batch.HeaderLen
	}
	n += 1 + int64(uvarintLen(keyLen)) + int64(keyLen)
	if hasValue {
		n += int64(uvarintLen(valueLen)) + int64(valueLen)
	}
	need := n + (int64(count)+1)*perRecordArena
	if need <= maxBatchArena && keyLen >= 0 && valueLen >= 0 {
		return nil
	}
	return errors.Wrapf(ErrInvalidArgument,
		"strata: batch too large: adding a record of a %d-byte key and a %d-byte value to %d records (%d bytes) needs %d memtable bytes, above the limit of %d",
		keyLen, valueLen, count, curLen, need, maxBatchArena)
}

func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

func (d *DB) write(b *batch.Batch, wo *WriteOptions) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if d.opts.ReadOnly {
		return errors.Wrap(ErrReadOnly, "strata: write to a read-only database")
	}
	if wo != nil && wo.Sync && wo.DisableWAL {
		// As RocksDB: there is no log to sync.
		return errors.Wrap(ErrInvalidArgument, "strata: WriteOptions Sync and DisableWAL together: a synced write needs the WAL")
	}
	if b.Count() == 0 {
		return nil
	}
	if need := arenaNeed(b); int64(need) > maxBatchArena {
		// The public entry points refuse such batches before building
		// them; this keeps the memtable limit an error whatever the path.
		return errors.Wrapf(ErrInvalidArgument, "strata: batch of %d bytes and %d records needs %d memtable bytes, above the limit of %d",
			b.Len(), b.Count(), need, maxBatchArena)
	}
	w := writerPool.Get().(*writer)
	*w = writer{b: b}
	if wo != nil {
		w.sync, w.disableWAL = wo.Sync, wo.DisableWAL
	}
	err := d.runInPipeline(w)
	writerPool.Put(w)
	return err
}

// runInPipeline queues w and returns when its group has committed.
func (d *DB) runInPipeline(w *writer) error {
	c := &d.commit
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errors.Wrap(ErrClosed, "strata: database is closed")
	}
	w.cond.L = &c.mu
	c.queue = append(c.queue, w)
	for !w.done && c.queue[0] != w {
		w.cond.Wait()
	}
	if w.done {
		err := w.err
		c.mu.Unlock()
		return err
	}
	// w leads a group.
	group, groupBatch := c.formGroupLocked()
	c.mu.Unlock()

	var err error
	if w.flush {
		err = d.rotateForFlush(w)
	} else if w.ingest != nil {
		err = w.ingest()
	} else {
		err = d.commitGroup(group, groupBatch)
	}

	c.mu.Lock()
	for _, g := range group {
		g.err = err
		g.done = true
		if g != w {
			g.cond.Signal()
		}
	}
	// Move the waiting writers to the front rather than reslicing past the
	// group: the backing array is then reused for good instead of being
	// outgrown (and reallocated) every few groups.
	n := copy(c.queue, c.queue[len(group):])
	clear(c.queue[n:])
	c.queue = c.queue[:n]
	if len(c.queue) > 0 {
		c.queue[0].cond.Signal()
	} else if c.idle.L != nil {
		c.idle.Broadcast()
	}
	c.mu.Unlock()
	return err
}

// formGroupLocked takes the leader and the writers behind it that can share
// its WAL record. It returns the group and the batch holding all of it.
// c.mu must be held.
func (c *commitPipeline) formGroupLocked() ([]*writer, *batch.Batch) {
	lead := c.queue[0]
	if lead.flush || lead.ingest != nil {
		return c.queue[:1:1], nil
	}
	n := 1
	size := lead.b.Len()
	for n < len(c.queue) {
		w := c.queue[n]
		if w.flush || w.ingest != nil || w.disableWAL != lead.disableWAL || size+w.b.Len() > maxGroupBytes {
			break
		}
		size += w.b.Len()
		n++
	}
	group := c.queue[:n:n]
	if n == 1 {
		return group, lead.b
	}
	c.scratch.Reset()
	for _, w := range group {
		// Counts stay far below 2^32 within maxGroupBytes.
		_ = batch.Append(&c.scratch, w.b)
	}
	return group, &c.scratch
}

// commitGroup writes one group: WAL, memtable, publish. Only the leader runs
// it, so at most one runs at a time.
func (d *DB) commitGroup(group []*writer, b *batch.Batch) error {
	syncWAL := false
	for _, w := range group {
		syncWAL = syncWAL || w.sync
	}
	d.mu.Lock()
	err := d.makeRoomForWriteLocked(b)
	d.evStallEndLocked()
	if err != nil {
		d.mu.Unlock()
		return err
	}
	seq := base.SeqNum(d.visibleSeq.Load()) + 1
	b.SetSeq(seq)
	mem := d.mu.mem
	logW, logF, logNum := d.mu.log.writer, d.mu.log.file, d.mu.log.num
	d.mu.Unlock()

	if !group[0].disableWAL {
		_, err := logW.WriteRecord(b.Data())
		if err == nil {
			err = logW.Flush()
		}
		if err == nil && syncWAL {
			err = logF.Sync()
			d.stats.walSyncs.Add(1)
		}
		d.stats.walBytes.Add(uint64(b.Len()))
		if err != nil {
			err = errors.Wrapf(err, "strata: writing WAL %06d.log", logNum)
			d.setBackgroundError(err)
			return err
		}
	}
	last, err := applyBatch(mem.MemTable, b, seq)
	if err != nil {
		// The memtable was sized for the batch: a failure here is a bug.
		d.setBackgroundError(err)
		return err
	}
	d.visibleSeq.Store(uint64(last))
	d.stats.writes.Add(uint64(len(group)))
	d.stats.keysWritten.Add(uint64(b.Count()))
	d.stats.bytesWritten.Add(uint64(b.Len()))
	return nil
}

// applyBatch inserts the records of b, numbered from seq, into mem and
// returns the last sequence number used.
func applyBatch(mem *memtable.MemTable, b *batch.Batch, seq base.SeqNum) (base.SeqNum, error) {
	r, err := batch.NewReader(b.Data())
	if err != nil {
		return 0, err
	}
	for {
		kind, key, value, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		switch kind {
		case base.KindRangeDelete:
			if base.CompareUser(key, value) < 0 {
				if err := mem.AddRangeDel(base.Tombstone{Start: key, End: value, Seq: seq}); err != nil {
					return 0, errors.Wrapf(err, "strata: memtable insert of range deletion [%q, %q)", key, value)
				}
			}
		default:
			if err := mem.Add(base.MakeInternalKey(key, seq, kind), value); err != nil {
				return 0, errors.Wrapf(err, "strata: memtable insert of %q", key)
			}
		}
		seq++
	}
	return seq - 1, nil
}

// setBackgroundError records the first error that makes further writes
// unsafe. Reads keep working.
func (d *DB) setBackgroundError(err error) {
	d.mu.Lock()
	if d.mu.bgErr == nil {
		d.mu.bgErr = err
		d.evBackgroundError(err)
	}
	d.mu.cond.Broadcast()
	d.mu.Unlock()
}

// arenaNeed estimates the arena bytes a batch takes in a memtable.
func arenaNeed(b *batch.Batch) int {
	// Per record: a node with the tallest tower and a trailer; the key and
	// value bytes are within b.Len().
	return b.Len() + int(b.Count())*int(perRecordArena)
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
		if d.mu.closing {
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

// fits reports whether need more arena bytes fit in the memtable's arena.
func (m *memTable) fits(need int) bool {
	return m.ApproximateMemoryUsage()+need <= m.size
}
