package db

import (
	"sync"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/iterator"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/table"
)

// newLevelIter returns a lazily opening iterator over sorted, non-overlapping
// files. Before a file's iterator is built, its prefix filter is checked
// against the iterator's seek prefix: a file that cannot hold the prefix
// costs one filter probe and nothing else. bounds, if not nil, is memory
// for the files' bounds (len(files) entries).
func (d *DB) newLevelIter(st *iterState, files []*version.FileMetadata, bounds []iterator.FileBounds) *iterator.Level {
	if bounds == nil {
		bounds = make([]iterator.FileBounds, len(files))
	}
	for i, f := range files {
		bounds[i] = iterator.FileBounds{Smallest: f.Smallest, Largest: f.Largest}
	}
	return iterator.NewLevel(st.rs.cf.cmp, bounds, func(i int) (iterator.Iterator, error) {
		e, err := d.tables.acquire(files[i])
		if err != nil {
			return nil, err
		}
		it := st.owner
		if p := it.filterPrefix; p != nil && e.reader.HasFilter() {
			d.stats.filterChecks.Add(1)
			if d.prefixFilterUsable(e, it.h) {
				may, err := e.reader.PrefixMayMatchHashErr(p, it.filterHash)
				if err != nil {
					d.tables.release(e)
					return nil, err
				}
				if !may {
					d.stats.filterUseful.Add(1)
					d.tables.release(e)
					return iterator.Empty(), nil
				}
			}
		}
		t := tableIters.Get().(*tableIter)
		e.reader.InitIter(&t.Iter)
		t.e, t.tc, t.pooled = e, d.tables, true
		return t, nil
	})
}

// tableIter is a table iterator that holds its table's cache reference
// until closed.
//
// The read path's are recycled (pooled): a seek opens one per table that
// its filter does not rule out, and closes it when the level moves on or
// the seek ends, so each would otherwise be an allocation of the iterator
// and of its key buffers' growth. Recycling is safe because a level
// iterator drops every reference to a child it closes, and nothing keeps a
// child's key past the positioning that replaced it (a key may alias the
// block, which the close releases to the cache, so the same rule already
// held); invariants builds poison a recycled iterator's buffers.
type tableIter struct {
	table.Iter
	e      *tableEntry
	tc     *tableCache
	pooled bool // from tableIters: Close puts it back
}

var tableIters = sync.Pool{New: func() any { return new(tableIter) }}

func (t *tableIter) Close() error {
	if t.e == nil {
		return nil // closed before
	}
	err := t.Iter.Close()
	t.tc.release(t.e)
	t.e, t.tc = nil, nil
	if t.pooled {
		tableIters.Put(t)
	}
	return err
}

// tableTombstones returns the range tombstones of the view's tables, read
// once per view.
//
// Only tables that may hold tombstones are opened: each file's metadata
// carries its range-deletion count (recorded at flush or compaction and kept
// in the MANIFEST), so a table known to have none is skipped, and a read
// view over a database without range deletions opens no table here. A file
// whose count is unknown (listed by a MANIFEST that RocksDB wrote) is opened
// once, and what it holds is remembered in d.rangeDelCounts for later views:
// the cost is bounded by the number of such files, and it disappears as
// compactions rewrite them.
//
// This is the smaller of two designs. The scalable one, as in RocksDB and
// Pebble, lets each level iterator hand the merging iterator the tombstones
// of the file it is positioned in (truncated to the file's bounds), so that
// even tables with tombstones are opened only when the scan reaches them; it
// needs the level iterator to stop at a file's bounds rather than skip a
// file whose remaining tombstones still cover keys of lower levels. With
// the count in the metadata, a scan opens the tables it reads plus every
// table that has range deletions.
func (rs *readState) tableTombstones() ([]base.Tombstone, error) {
	rs.tombOnce.Do(func() {
		d := rs.db
		for _, files := range rs.version.Levels {
			for _, f := range files {
				if !f.MayHaveRangeDeletions() {
					continue
				}
				if !f.RangeDelsKnown && d.rangeDelCounts.knownEmpty(f.FileNum) {
					continue
				}
				e, err := d.tables.acquire(f)
				if err != nil {
					rs.tombErr = err
					return
				}
				tt := e.reader.Tombstones()
				if !f.RangeDelsKnown {
					d.rangeDelCounts.learn(f.FileNum, len(tt))
				}
				rs.tombs = append(rs.tombs, tt...)
				d.tables.release(e)
			}
		}
	})
	return rs.tombs, rs.tombErr
}

// rangeDelCounts remembers which tables of unknown range-deletion count
// (see tableTombstones) turned out to have none. Entries are never removed:
// only files listed by a foreign MANIFEST are ever added, and file numbers
// are not reused. The zero value is ready to use.
type rangeDelCounts struct {
	mu    sync.Mutex
	empty map[uint64]struct{}
}

// knownEmpty reports whether fileNum was found to hold no range deletions.
func (c *rangeDelCounts) knownEmpty(fileNum uint64) bool {
	c.mu.Lock()
	_, ok := c.empty[fileNum]
	c.mu.Unlock()
	return ok
}

// learn records the number of range deletions found in fileNum.
func (c *rangeDelCounts) learn(fileNum uint64, n int) {
	if n > 0 {
		return
	}
	c.mu.Lock()
	if c.empty == nil {
		c.empty = make(map[uint64]struct{})
	}
	c.empty[fileNum] = struct{}{}
	c.mu.Unlock()
}
