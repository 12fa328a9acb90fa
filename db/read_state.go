package db

import (
	"sync"
	"sync/atomic"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/memtable"
	"github.com/stratadb/strata/internal/version"
)

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
	cf      *ColumnFamily

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

// loadReadState returns the family's current read view, referenced; the
// caller unrefs.
func (cf *ColumnFamily) loadReadState() *readState {
	cf.rsMu.RLock()
	rs := cf.readState
	rs.refs.Add(1)
	cf.rsMu.RUnlock()
	return rs
}

// loadReadState returns the default family's read view.
func (d *DB) loadReadState() *readState { return d.def.loadReadState() }

// updateReadStateLocked installs a new read view of cf from its current
// memtables and version. d.mu must be held.
func (d *DB) updateReadStateLocked(cf *ColumnFamily) {
	rs := &readState{db: d, cf: cf, version: cf.mu.vf.Current()}
	rs.refs.Store(1)
	rs.version.Ref()
	rs.mems = make([]*memTable, 0, 1+len(cf.mu.imm))
	rs.mems = append(rs.mems, cf.mu.mem)
	for i := len(cf.mu.imm) - 1; i >= 0; i-- {
		rs.mems = append(rs.mems, cf.mu.imm[i])
	}
	for _, m := range rs.mems {
		m.refs.Add(1)
	}
	cf.publishReadState(rs)
	// A new version may change the stall conditions.
	d.refreshRoomFreeLocked()
	// A cached iterator state of the old view would pin its memtables and
	// files until the next NewIterator.
	if st := cf.iterCache.Swap(nil); st != nil {
		st.release()
	}
}

// publishReadState makes rs the family's read view and drops the family's
// reference on the one it replaces.
func (cf *ColumnFamily) publishReadState(rs *readState) {
	cf.rsMu.Lock()
	old := cf.readState
	cf.readState = rs
	cf.rsMu.Unlock()
	if old != nil {
		old.unref()
	}
}

// releaseMemtablesLocked, at Close or when cf is dropped, drops the
// family's references on its memtables and replaces its read view with one
// whose only memtable is an empty one on the Go heap, so that their arenas
// are freed as soon as the readers still holding older views (a racing
// Get, an iterator left open) are done. A read that passed its closed check
// before and loads the closed view finds it marked and returns ErrClosed.
// d.mu must be held.
func (d *DB) releaseMemtablesLocked(cf *ColumnFamily) {
	// The version of the view it replaces: a dropped family's Version
	// is no longer its VersionSet's to give.
	v := cf.readState.version
	if cf.dropped.Load() {
		// A dropped family's view stays installed while the DB lives: with
		// its last Version it would keep the family's tables live (never
		// deleted, and left in no version for the next Open). An empty,
		// free-standing Version keeps the view usable and pins nothing.
		v = &version.Version{}
	}
	rs := &readState{db: d, cf: cf, version: v, closed: true}
	rs.refs.Store(1)
	rs.version.Ref()
	empty := &memTable{MemTable: memtable.New(0), logNum: cf.mu.mem.logNum}
	empty.SetComparer(cf.cmp)
	empty.refs.Store(1) // rs's; the DB keeps none
	rs.mems = []*memTable{empty}
	cf.publishReadState(rs)
	for _, m := range cf.mu.imm {
		m.unref(d)
	}
	cf.mu.mem.unref(d)
	cf.mu.imm = nil
	cf.mu.mem = empty
}

// isCurrentView reports whether rs is its family's current read view.
func (d *DB) isCurrentView(rs *readState) bool {
	cf := rs.cf
	cf.rsMu.RLock()
	cur := cf.readState == rs
	cf.rsMu.RUnlock()
	return cur
}
