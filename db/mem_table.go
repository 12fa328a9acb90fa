package db

import (
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/memtable"
)

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

// fits reports whether need more arena bytes fit in the memtable's arena,
// beside the room reserved by concurrent inserts in progress.
func (m *memTable) fits(need int) bool {
	return m.ApproximateMemoryUsage()+int(m.reserved.Load())+need <= m.size
}
