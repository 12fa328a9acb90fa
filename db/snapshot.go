package db

import (
	"sync/atomic"

	"github.com/stratadb/strata/internal/base"
)

// Snapshot is a consistent view of the database at the moment NewSnapshot
// returned: reads at it see exactly the writes acknowledged before that.
// Release it when done; it keeps compactions from dropping the versions it
// sees.
type Snapshot struct {
	db *DB
	// seq is the exclusive read sequence number, set before the snapshot
	// is published and immutable after: reads use it without a lock.
	seq      base.SeqNum
	released atomic.Bool
	// prev and next link DB.mu.snapshots; guarded by DB.mu.
	prev *Snapshot
	next *Snapshot
}

// snapshotList is a doubly linked list of live snapshots, oldest first.
// The DB's list is DB.mu.snapshots, so DB.mu guards it: NewSnapshot and
// Release change it, and compactions and the num-snapshots property read
// it, all under DB.mu. The zero value is an empty list.
type snapshotList struct {
	head, tail *Snapshot
	count      int
}

func (l *snapshotList) push(s *Snapshot) {
	s.prev = l.tail
	if l.tail != nil {
		l.tail.next = s
	} else {
		l.head = s
	}
	l.tail = s
	l.count++
}

func (l *snapshotList) remove(s *Snapshot) {
	if s.prev != nil {
		s.prev.next = s.next
	} else {
		l.head = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	} else {
		l.tail = s.prev
	}
	s.prev, s.next = nil, nil
	l.count--
}

// newerThan reports whether a live snapshot reads at a sequence number
// above every one of snaps (a list seqs returned earlier): one taken
// since, which sees entries a job planned with snaps took for newer than
// every snapshot.
func (l *snapshotList) newerThan(snaps []base.SeqNum) bool {
	if l.tail == nil {
		return false
	}
	return len(snaps) == 0 || l.tail.seq > snaps[len(snaps)-1]
}

// releaseSnapshotHoldLocked ends one hold of d.mu.snapshotHold. d.mu must
// be held.
func (d *DB) releaseSnapshotHoldLocked() {
	d.mu.snapshotHold--
	d.mu.cond.Broadcast()
}

// seqs returns the read sequence numbers of the live snapshots, ascending.
func (l *snapshotList) seqs() []base.SeqNum {
	out := make([]base.SeqNum, 0, l.count)
	for s := l.head; s != nil; s = s.next {
		out = append(out, s.seq)
	}
	return out
}

// NewSnapshot returns a snapshot of the current state. On a closed DB it
// returns a snapshot that reads fail on with ErrClosed.
func (d *DB) NewSnapshot() *Snapshot {
	s := &Snapshot{db: d}
	if d.checkOpen() != nil {
		s.released.Store(true)
		return s
	}
	d.mu.Lock()
	for d.mu.snapshotHold > 0 && !d.mu.closing {
		d.mu.cond.Wait()
	}
	// Sequence numbers only grow, so appending keeps the list sorted.
	s.seq = base.SeqNum(d.visibleSeq.Load()) + 1
	d.mu.snapshots.push(s)
	d.mu.Unlock()
	return s
}

// Release frees the snapshot. A second Release is harmless.
func (s *Snapshot) Release() {
	if s == nil || !s.released.CompareAndSwap(false, true) {
		return
	}
	d := s.db
	d.mu.Lock()
	d.mu.snapshots.remove(s)
	d.mu.Unlock()
}
