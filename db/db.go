// Package db is Strata's public API: an embedded, durable, ordered key-value
// store built as a log-structured merge tree whose files follow RocksDB's
// on-disk formats.
//
// A DB is safe for concurrent use by many goroutines. See ../docs/architecture.md
// for the write path, the read path and recovery.
package db

import (
	"io"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stratadb/strata/internal/memtable"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
)

// DB is an open database.
//
// Locking: the fields under mu are guarded by mu; methods named …Locked
// require it. The commit pipeline (commit, commit.go) orders writers: one at
// a time appends to the WAL, and they insert into the mutable memtable
// either one at a time or concurrently. Readers take no lock on the data path: they load the
// current readState (memtables + version), which is replaced, never mutated.
type DB struct {
	dirname string
	opts    Options // immutable after Open, but for the mutable options below
	fs      vfs.FS
	lock    io.Closer
	cache   *cache.Cache
	tables  *tableCache
	// seekCompactions: Gets charge wasted seeks to tables for
	// read-triggered compactions (leveled, writable, not disabled).
	seekCompactions bool
	// rangeDelCounts: what reads learned of tables with no recorded
	// range-deletion count (leveliter.go).
	rangeDelCounts rangeDelCounts

	closed atomic.Bool

	// roomFree says that a write whose batch fits in the memtable needs no
	// look at the stall conditions and the background error: there is no
	// background error and writes are not being slowed down (a stop only
	// holds writes that need a new memtable, see makeRoomForWriteLocked).
	// It is recomputed under mu whenever one of them may change
	// (refreshRoomFreeLocked); a write that finds it set and its batch
	// fitting skips mu (see commitWrite).
	roomFree atomic.Bool

	// visibleSeq is the last sequence number whose write is visible to
	// readers: every write with a smaller or equal sequence number has been
	// applied to the memtable. Readers read at visibleSeq+1.
	visibleSeq atomic.Uint64

	// Mutable options (SetOptions), read without locks.
	// (The compaction options are in comp.)
	writeBufferSize atomic.Int64
	extractor       atomic.Pointer[extractorHandle]
	// iterCache holds the state of the last closed iterator, for reuse by
	// the next NewIterator over the same read view (see iterState).
	iterCache atomic.Pointer[iterState]
	// setOptionsMu makes concurrent SetOptions calls apply one at a time.
	setOptionsMu sync.Mutex

	// memPool keeps the arena of the last memtable retired after its flush
	// (see memTable.refs), for the next memtable of the same size.
	memPool memtable.ArenaPool
	// arenaReuses counts memtables made over a pooled arena (tests read
	// it; it is bumped once per memtable, off the data path).
	arenaReuses atomic.Uint64

	commit commitPipeline

	// events delivers EventListener events; nil without a listener.
	events *eventQueue
	lis    *EventListener
	// logger receives the info log (logger.go); nil for none.
	logger   Logger
	infoLogW *infoLogWriter

	// readState is the current read view; see readState.
	rsMu      sync.RWMutex
	readState *readState

	stats dbStats

	// comp is the compaction scheduling state (compaction.go); part of it
	// is guarded by mu, as its comments say.
	comp compactionState

	// identity is the IDENTITY file's database id.
	identity string
	// optionsReport lists the settings of the OPTIONS file found at Open
	// that did not map onto ours; written once during Open.
	optionsReport []string
	// fileMergeOperator is the merge operator named by the OPTIONS file
	// found at Open ("" for none), for the error of reading operands
	// without one.
	fileMergeOperator string
	// testingBetweenViewAndSeq, when set (by tests only, before the DB is
	// used concurrently), runs in every read between loading the read view
	// and loading the sequence number (see readState).
	testingBetweenViewAndSeq func()
	// testingCompactionFault, when not faultNone (set by tests only,
	// through SetCompactionFault), plants a known bug in every compaction
	// that starts afterwards, so that a test can show the stress harness
	// catches it (see compactionFault). Atomic: a test may set it while a
	// compaction begins.
	testingCompactionFault atomic.Uint32

	mu struct {
		sync.Mutex
		// cond is broadcast when a flush or compaction finishes, when a
		// background error is set and when the DB closes.
		cond     sync.Cond
		versions *version.VersionSet
		// mem is the mutable memtable; imm are the immutable ones waiting
		// for flush, oldest first. mem and log are replaced with
		// commit.mu held too, so its holder may read them without mu.
		mem *memTable
		imm []*memTable
		// memNextSize is the arena size of the next memtable the write path
		// makes (see nextMemTableSizeLocked); 0 before the first.
		memNextSize int
		// summaryPrefix is what the next memtable's skiplists strip before
		// summarizing keys (memtable.SetSummaryPrefix): the common prefix
		// of the last memtable of two keys or more that was replaced, or at
		// Open of the tables' key range.
		summaryPrefix []byte

		log struct {
			num    uint64
			file   vfs.File
			writer *record.Writer
		}
		snapshots snapshotList
		// bgErr, once set, stops all writes: the DB is read-only until
		// reopened. It is set only through setBgErrLocked.
		bgErr error
		// flushing: a flush is running (one at a time). The compaction
		// state guarded by mu is in DB.comp.
		flushing bool
		// stalled: a WriteStallBegin event awaits its end.
		stalled bool
		closing bool
		bgWG    sync.WaitGroup
		// pendingOutputs are file numbers being written; the obsolete-file
		// sweep never deletes them.
		pendingOutputs map[uint64]struct{}
		// obsoleteTables are tables dropped from the current version, to be
		// deleted once no version references them.
		obsoleteTables []uint64
		// wals are the WAL numbers on disk, ascending.
		wals []uint64
	}
}

// memTable is a memtable with the WAL that holds its writes.
//
// Lifetime: refs counts who may still read the memtable's arena. The DB
// holds one reference from the moment the memtable is made until it leaves
// d.mu.imm after its flush (flushOldestLocked); every readState that lists
// it holds one more until that readState's own count drops to zero (and a
// readState is held by every Get, MultiGet, iterator and property read that
// uses it). When the count reaches zero the arena goes to d.memPool for
// reuse. The count cannot rise again after that: readStates are built under
// d.mu from d.mu.mem and d.mu.imm only, which hold the DB's reference.
// Memtables the DB never retires (those of WAL replay, an empty one
// replaced, the last one at Close) keep their reference and are left to
// the garbage collector.
type memTable struct {
	*memtable.MemTable
	logNum uint64 // the WAL that holds this memtable's writes
	// size is the arena budget the memtable rotates at.
	size int
	refs atomic.Int32
	_    pad
	// reserved is the arena room (arenaNeed) of the concurrent inserts in
	// progress, which the arena's usage does not show yet; it is non-zero
	// exactly while one is in progress (see commitPipeline). Every
	// concurrent inserter writes it: it has cache lines of its own.
	reserved atomic.Int64
	_        pad
}

// unref drops a reference to m and retires its arena after the last one.
func (m *memTable) unref(d *DB) {
	switch n := m.refs.Add(-1); {
	case n == 0:
		d.memPool.Put(m.MemTable)
	case n < 0:
		panic(errors.AssertionFailedf("strata: memtable (WAL %06d) unreferenced too often", m.logNum))
	}
}

// readState is an immutable view of the read path: the memtables and the
// version at one moment. The version is referenced while the readState is
// current or held by a reader.
//
// Invariant: a read (Get, MultiGet, NewIterator) loads its readState
// first and its sequence number (visibleSeq+1, or its snapshot's) second.
// The pair is then consistent without a lock, as in Pebble:
//
//   - The view is pinned: while referenced, its memtables stay readable
//     and its version's files stay on disk (deleteObsoleteFilesLocked keeps
//     every file of a referenced version), so no flush or compaction that
//     runs after the load can remove a version of a key from what the
//     reader searches. Compaction only rewrites files into newer versions.
//   - Every write published before the view was loaded is in it: in one of
//     its memtables, or in a table of its version once flushed (a memtable
//     leaves the view only when the version holding its table replaces it).
//   - A write published between the two loads, with a sequence number at or
//     below the reader's, is either in the view's mutable memtable (and
//     seen) or in a memtable made after the view was loaded. Memtables are
//     filled in sequence order by one leader at a time, so such a write is
//     newer than everything the view holds: the reader sees every write up
//     to some sequence number, a consistent prefix that includes every write
//     acknowledged before the read began.
//
// The opposite order is wrong: a reader that loads the sequence number S
// first and the view second can meet a view in which a compaction (which
// knew of no snapshot at S, since plain reads register none) already merged
// away the version visible at S under a newer overwrite, and miss a key that
// existed throughout. Snapshots need no such order: NewSnapshot takes its
// sequence number and joins the list under d.mu, and compactions read the
// list under d.mu, so every compaction either sees the snapshot or merges
// only entries older than its sequence number (see compactLocked).
type readState struct {
	refs atomic.Int32
	mems []*memTable // the mutable memtable, then the immutable ones newest first
	// closed marks the view Close installs: its memtable is empty and
	// reads through it return ErrClosed.
	closed  bool
	version *version.Version
	db      *DB

	tombOnce sync.Once
	tombs    []base.Tombstone // every table tombstone of version, lazily
	tombErr  error
}

func (rs *readState) unref() {
	if rs.refs.Add(-1) == 0 {
		rs.db.unrefVersion(rs.version)
		for _, m := range rs.mems {
			m.unref(rs.db)
		}
	}
}

// loadReadState returns the current read view, referenced; the caller unrefs.
func (d *DB) loadReadState() *readState {
	d.rsMu.RLock()
	rs := d.readState
	rs.refs.Add(1)
	d.rsMu.RUnlock()
	return rs
}

// updateReadStateLocked installs a new read view from the current memtables
// and version. d.mu must be held.
func (d *DB) updateReadStateLocked() {
	rs := &readState{db: d, version: d.mu.versions.Current()}
	rs.refs.Store(1)
	rs.version.Ref()
	rs.mems = make([]*memTable, 0, 1+len(d.mu.imm))
	rs.mems = append(rs.mems, d.mu.mem)
	for i := len(d.mu.imm) - 1; i >= 0; i-- {
		rs.mems = append(rs.mems, d.mu.imm[i])
	}
	for _, m := range rs.mems {
		m.refs.Add(1)
	}
	d.publishReadState(rs)
	// A new version may change the stall conditions.
	d.refreshRoomFreeLocked()
	// A cached iterator state of the old view would pin its memtables and
	// files until the next NewIterator.
	if st := d.iterCache.Swap(nil); st != nil {
		st.release()
	}
}

// publishReadState makes rs the read view and drops the DB's reference on
// the one it replaces.
func (d *DB) publishReadState(rs *readState) {
	d.rsMu.Lock()
	old := d.readState
	d.readState = rs
	d.rsMu.Unlock()
	if old != nil {
		old.unref()
	}
}

// releaseMemtablesLocked, at Close, drops the DB's references on its
// memtables and replaces the read view with one whose only memtable is an
// empty one on the Go heap, so that their arenas are freed as soon as the
// readers still holding older views (a racing Get, an iterator left open)
// are done. A read that passed its closed check before Close and loads the
// closed view finds it marked and returns ErrClosed. d.mu must be held.
func (d *DB) releaseMemtablesLocked() {
	rs := &readState{db: d, version: d.mu.versions.Current(), closed: true}
	rs.refs.Store(1)
	rs.version.Ref()
	empty := &memTable{MemTable: memtable.New(0), logNum: d.mu.mem.logNum}
	empty.refs.Store(1) // rs's; the DB keeps none
	rs.mems = []*memTable{empty}
	d.publishReadState(rs)
	for _, m := range d.mu.imm {
		m.unref(d)
	}
	d.mu.mem.unref(d)
	d.mu.imm = nil
	d.mu.mem = empty
}

// isCurrentView reports whether rs is the current read view.
func (d *DB) isCurrentView(rs *readState) bool {
	d.rsMu.RLock()
	cur := d.readState == rs
	d.rsMu.RUnlock()
	return cur
}

// testingHookBetweenViewAndSeq runs the test hook, if any: one nil check on
// the read path.
func (d *DB) testingHookBetweenViewAndSeq() {
	if f := d.testingBetweenViewAndSeq; f != nil {
		f()
	}
}

// unrefVersion drops a reference to v. Files only v referenced become
// obsolete; they are deleted at the end of the next flush or compaction, or
// at Close. Deleting here would need d.mu, which the caller may hold (a
// readState is replaced under d.mu).
func (d *DB) unrefVersion(v *version.Version) {
	v.Unref()
}

// checkOpen returns ErrClosed after Close.
func (d *DB) checkOpen() error {
	if d.closed.Load() {
		return errors.Wrap(ErrClosed, "strata: database is closed")
	}
	return nil
}

// beginOp registers a manual operation (Flush, CompactRange, SetOptions,
// Ingest, Checkpoint) that may write to the directory; Close waits for
// every registered one before it releases the directory. Once Close has
// set closing, it refuses with ErrClosed. Callers call endOp when done.
//
// Registration joins d.mu.bgWG under d.mu, as background flushes and
// compactions do, and Close sets closing under d.mu before it waits: every
// Add happens before the Wait, and none comes after it.
func (d *DB) beginOp(what string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.closing {
		return errors.Wrapf(ErrClosed, "strata: %s: database is closed", what)
	}
	d.mu.bgWG.Add(1)
	return nil
}

// endOp ends an operation registered by beginOp.
func (d *DB) endOp() { d.mu.bgWG.Done() }

// Close flushes every write that is only in memtables (so DisableWAL writes
// persist), waits for background work and releases the directory. A second
// Close returns ErrClosed.
//
// Guarantee: once Close returns, nothing of this DB touches the directory.
// Background flushes and compactions, and Flush, CompactRange, SetOptions,
// Ingest and Checkpoint calls running on other goroutines, either finish before Close returns or
// return ErrClosed without writing (see beginOp); writes in the commit
// pipeline are drained first.
func (d *DB) Close() error {
	if !d.closed.CompareAndSwap(false, true) {
		return errors.Wrap(ErrClosed, "strata: database already closed")
	}
	var err error
	if !d.opts.ReadOnly {
		// Flush under the closed flag: new writes are refused, writers in
		// the pipeline finish first.
		d.commit.drain()
		d.mu.Lock()
		if d.mu.bgErr == nil {
			err = d.flushAllLocked()
		}
		d.mu.Unlock()
	}
	d.mu.Lock()
	d.mu.closing = true
	d.mu.cond.Broadcast()
	d.mu.Unlock()
	d.mu.bgWG.Wait()

	if st := d.iterCache.Swap(nil); st != nil {
		st.release()
	}
	d.mu.Lock()
	d.deleteObsoleteFilesLocked()
	if d.mu.log.file != nil {
		err = errors.CombineErrors(err, d.mu.log.writer.Flush())
		if serr := d.syncLogLocked(); serr != nil {
			err = errors.CombineErrors(err, errors.Wrapf(serr, "strata: syncing WAL %06d.log", d.mu.log.num))
		}
		err = errors.CombineErrors(err, d.mu.log.file.Close())
		d.mu.log.file = nil
	}
	if d.mu.versions != nil {
		err = errors.CombineErrors(err, d.mu.versions.Close())
	}
	d.releaseMemtablesLocked()
	d.mu.Unlock()
	d.tables.close()
	d.memPool.Close()
	if d.lock != nil {
		err = errors.CombineErrors(err, d.lock.Close())
	}
	d.stopEvents()
	err = errors.CombineErrors(err, d.closeInfoLog())
	return err
}
