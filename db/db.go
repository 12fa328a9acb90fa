// Package db is Strata's public API: an embedded, durable, ordered key-value
// store built as a log-structured merge tree whose files (WAL, MANIFEST,
// OPTIONS and tables) follow RocksDB 7.8's on-disk formats, so RocksDB's
// tools read what it writes and it opens what RocksDB wrote.
//
// Open a database with [Open], write with [DB.Put], [DB.Delete],
// [DB.DeleteRange], [DB.Merge] or a [Batch] through [DB.Write], read with
// [DB.Get], [DB.MultiGet] and [DB.NewIterator], and read a fixed point in
// time through [DB.NewSnapshot]. Errors are classified by the sentinels
// ([ErrNotFound], [ErrCorruption], [ErrClosed], ...): test them with
// errors.Is. A DB is safe for concurrent use by many goroutines.
//
// The design (write path, read path, recovery) is described in
// https://github.com/stratadb/strata/blob/main/docs/architecture.md, and
// the getting-started guide in
// https://github.com/stratadb/strata/blob/main/docs/getting-started.md.
package db

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stratadb/strata/internal/invariants"
	"github.com/stratadb/strata/internal/memtable"
	"github.com/stratadb/strata/internal/optionsfile"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
)

// DB is an open database, returned by [Open]. All its methods may be called
// from many goroutines at once. Close it when done: [DB.Close] flushes the
// memtables, waits for background work and releases the directory; every
// call after it returns an error wrapping [ErrClosed].
//
//	d, err := db.Open(dir, &db.Options{CreateIfMissing: true})
//	if err != nil {
//		return err
//	}
//	defer d.Close()
//	if err := d.Put([]byte("k"), []byte("v"), nil); err != nil {
//		return err
//	}
//	v, err := d.Get([]byte("k"), nil) // errors.Is(err, db.ErrNotFound) when absent
type DB struct {
	// Locking: the fields under mu are guarded by mu; methods named
	// ...Locked require it. The commit pipeline (commit, commit.go) orders
	// writers: one at a time appends to the WAL, and they insert into the
	// mutable memtable either one at a time or concurrently. Readers take
	// no lock on the data path: they load the current readState (memtables
	// and version), which is replaced, never mutated.

	dirname string
	opts    Options // immutable after Open, but for the mutable options below
	// cmps maps each family id (uint32) to its *base.Comparer and
	// cmpNames each comparer Name to it, for the paths that know only an
	// id (indexed batches) or a table's recorded name (the table cache).
	// Entries are added as families open or are created, never removed.
	cmps, cmpNames sync.Map
	fs             vfs.FS
	lock           io.Closer
	cache          *cache.Cache
	tables         *tableCache
	blobs          *blobFiles
	// def is the default column family, the one the DB's own methods act
	// on; it is never dropped.
	def *ColumnFamily
	// rangeDelCounts: what reads learned of tables with no recorded
	// range-deletion count (level_iter.go).
	rangeDelCounts rangeDelCounts

	// closed is set first thing by Close. Every positioning call of an
	// iterator and its Valid read it, so it has cache lines of its own:
	// visibleSeq and roomFree below change with every write.
	closed atomic.Bool
	_      pad
	// openIters counts the iterators NewIterator returned that are not
	// closed; Close logs the ones still open (a leak).
	openIters atomic.Int64
	_         pad

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

	// maxBackgroundJobs is the mutable max_background_jobs (SetOptions);
	// 0 means as in opts.
	maxBackgroundJobs atomic.Int64
	// maxSubcompactions is the mutable max_subcompactions (SetOptions);
	// 0 means as in opts.
	maxSubcompactions atomic.Int64
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

	stats dbStats

	// identity is the IDENTITY file's database id.
	identity string
	// optionsFile is the newest OPTIONS file found at Open, nil if none;
	// only Open reads it.
	optionsFile *optionsfile.File
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
	// testing holds the other hooks tests set (through export_test.go or
	// directly, before the DB is used concurrently); all nil in production,
	// so each costs its call site one nil check. On the DB rather than in
	// package globals so that tests setting them share no process-wide
	// state.
	testing testingHooks
	// testingCompactionFault, when not faultNone (set by tests only,
	// through SetCompactionFault), plants a known bug in every compaction
	// that starts afterwards, so that a test can show the stress harness
	// catches it (see compactionFault). Atomic: a test may set it while a
	// compaction begins.
	testingCompactionFault atomic.Uint32
	// clock is the clock TTL reads: Options.Clock from Open, nil for
	// time.Now; tests replace it on an open DB (SetClockForTesting).
	clock atomic.Pointer[func() time.Time]
	// testingSubcompactionHook, when set (by tests only), runs as each
	// key range of a compaction opens its inputs, with the range's lower
	// bound; an error it returns fails that range.
	testingSubcompactionHook atomic.Pointer[func(lower []byte) error]
	// compactAbort is set with mu.closing, for compaction merges to read
	// at each user key without the lock: Close aborts them there instead
	// of waiting for their current output file.
	compactAbort atomic.Bool

	mu struct {
		sync.Mutex
		// cond is broadcast when a flush or compaction finishes, when a
		// background error is set and when the DB closes.
		cond     sync.Cond
		versions *version.VersionSet
		// snapshotHold counts flushes and compactions whose filter changed
		// entries seen by no snapshot, from the check that no snapshot was
		// taken since they were planned until their outputs are installed:
		// NewSnapshot waits for it to be 0, so that no snapshot sees the
		// entries before the install and the filtered ones after.
		snapshotHold int
		// fams are the live column families, by id (the default first).
		// It changes with d.commit.mu held too (families are created and
		// dropped with the pipeline drained).
		fams []*ColumnFamily
		// log is the current WAL. It is replaced with commit.mu held too,
		// so its holder may read it without mu.
		log struct {
			num    uint64
			file   vfs.File
			writer *record.Writer
		}
		snapshots snapshotList
		// bgErr, once set, stops all writes: the DB is read-only until
		// reopened. It is set only through setBgErrLocked.
		bgErr error
		// compactNext is the family the compaction scheduler looks at
		// first, in turn.
		compactNext int
		// flushing: a flush is running (one at a time, for every family).
		// The compaction state guarded by mu is in each family's comp.
		flushing bool
		// stalled: a WriteStallBegin event awaits its end.
		stalled bool
		closing bool
		bgWG    sync.WaitGroup
		// pendingOutputs are file numbers being written; the obsolete-file
		// sweep never deletes them.
		pendingOutputs map[uint64]struct{}
		// obsoleteTables are tables dropped from the current version, to be
		// deleted once no version references them. A table whose removal
		// failed stays here and is tried again at the next sweep (on
		// Windows a file still open cannot be removed).
		obsoleteTables []uint64
		// obsoleteWALs are WALs no memtable needs whose removal failed:
		// each sweep tries them again.
		obsoleteWALs []uint64
		// wals are the WAL numbers on disk, ascending, and walStarts the
		// commit.walBytes position at which each began (for
		// max_total_wal_size; 0 for those found at Open).
		wals      []uint64
		walStarts []uint64
		// optionsFiles are the OPTIONS file numbers in the directory, so
		// that a rewrite (SetOptions, a family created or dropped) deletes
		// all but the newest keptOptionsFiles without listing it.
		optionsFiles []uint64
		// recycleWALs are obsolete WALs kept for the next rotations to
		// overwrite (Options.RecycleLogFileNum), oldest first.
		recycleWALs []uint64
		// walNext is the WAL being created ahead of the next rotation,
		// and walClosing the retired WALs whose background close is not
		// done, each with a channel closed when it is (wal_rotate.go).
		walNext    *preparedWAL
		walClosing map[uint64]chan struct{}
	}

	// txnLocks are the pessimistic transactions' key locks, made on first
	// use (see DB.lockManager).
	txnLocksOnce sync.Once
	txnLocks     *lockManager
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
// Ingest and Checkpoint calls running on other goroutines, either finish
// before Close returns or return ErrClosed without writing; writes in
// progress finish first. Iterators and snapshots still open stop working
// (ErrClosed) and are reported in the LOG.
func (d *DB) Close() error {
	// Manual operations register with beginOp, so the wait for d.mu.bgWG
	// below covers them.
	if !d.closed.CompareAndSwap(false, true) {
		return errors.Wrap(ErrClosed, "strata: database already closed")
	}
	var err error
	if !d.opts.ReadOnly {
		// A writer stalled in makeRoomForWriteLocked holds the commit lock
		// that drain needs: wake it, and it returns ErrClosed now that
		// closed is set.
		d.mu.Lock()
		d.mu.cond.Broadcast()
		d.mu.Unlock()
		// Flush under the closed flag: new writes are refused, writers in
		// the pipeline finish first.
		d.commit.drain()
		d.mu.Lock()
		if d.mu.bgErr == nil {
			err = d.flushAllLocked()
		} else if d.unflushedLocked() {
			// No flush runs after a background error, so this Close is not
			// clean: writes made with DisableWAL that only the memtables
			// hold are lost (the others are in the WAL and come back at the
			// next Open). Say so rather than return nil.
			err = errors.Wrap(d.mu.bgErr, "strata: Close: the memtables could not be flushed after a background error; writes made with DisableWAL since the last flush are lost")
		}
		d.mu.Unlock()
	}
	d.mu.Lock()
	d.mu.closing = true
	d.compactAbort.Store(true)
	d.mu.cond.Broadcast()
	leakedSnaps := d.mu.snapshots.count
	d.mu.Unlock()
	d.mu.bgWG.Wait()
	// An iterator or snapshot left open is the caller's leak, not a failure
	// of Close: the database closed cleanly and nothing was lost, so Close
	// does not fail on it (a deferred Close would turn a clean shutdown
	// into an error). It goes to the LOG, and the leaked objects turn
	// unusable: an iterator is no longer Valid and its Err wraps ErrClosed,
	// reads at a snapshot return ErrClosed. What they still reference (the
	// memtables and tables of their view) stays allocated until they are
	// closed or collected, so nothing reads freed memory.
	if n := d.openIters.Load(); n > 0 || leakedSnaps > 0 {
		d.logf(slog.LevelWarn, "Close: leaked iterators and snapshots, still open at Close", "iterators", n, "snapshots", leakedSnaps)
	}

	d.mu.Lock()
	for _, cf := range d.mu.fams {
		if st := cf.iterCache.Swap(nil); st != nil {
			st.release()
		}
	}
	d.deleteObsoleteFilesLocked()
	err = errors.CombineErrors(err, d.dropNextWALLocked())
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
	for _, cf := range d.mu.fams {
		d.releaseMemtablesLocked(cf)
	}
	d.mu.Unlock()
	d.tables.close()
	d.blobs.close()
	// The block cache's memory goes back now rather than when the DB is
	// collected; a block an iterator left open still holds is freed at
	// its release.
	if invariants.Enabled && d.openIters.Load() == 0 {
		d.checkBlocksReleased()
	}
	d.cache.EvictAll()
	d.memPool.Close()
	if d.lock != nil {
		err = errors.CombineErrors(err, d.lock.Close())
	}
	d.stopEvents()
	err = errors.CombineErrors(err, d.closeInfoLog())
	return err
}

// testingHooks are the test hooks of a DB (see DB.testing).
type testingHooks struct {
	// checkpointFlushed runs after Checkpoint's flush and before it pins
	// the version.
	checkpointFlushed func()
	// checkpointPinned runs after Checkpoint has pinned the version it
	// copies and before it links the first table.
	checkpointPinned func()
	// ingestAfterLink runs after each file Ingest links into the database
	// directory (crash tests).
	ingestAfterLink func(fileNum uint64)
	// ingestBeforeManifest runs just before the ingestion's MANIFEST edit.
	ingestBeforeManifest func()
}

// checkBlocksReleased panics (invariants builds) when a block-cache handle
// is still held after Close finished every background job and no iterator
// is open: a reader that forgot a Release. A read racing Close may still
// hold one briefly, so it waits a little first.
func (d *DB) checkBlocksReleased() {
	for i := 0; d.cache.Outstanding() != 0; i++ {
		if i == 1000 {
			panic(fmt.Sprintf("strata: Close: %d block-cache handles not released", d.cache.Outstanding()))
		}
		time.Sleep(time.Millisecond)
	}
}
