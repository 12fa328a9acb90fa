package db

import (
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/iterator"
	"github.com/stratadb/strata/table"
	"github.com/stratadb/strata/version"
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
	return iterator.NewLevel(bounds, func(i int) (iterator.Iterator, error) {
		e, err := d.tables.acquire(files[i].FileNum)
		if err != nil {
			return nil, err
		}
		it := st.owner
		if p := it.filterPrefix; p != nil && e.reader.HasFilter() {
			d.stats.filterChecks.Add(1)
			if d.prefixFilterUsable(e, it.h) && !e.reader.PrefixMayMatchHash(p, it.filterHash) {
				d.stats.filterUseful.Add(1)
				d.tables.release(e)
				return iterator.Empty(), nil
			}
		}
		return &tableIter{Iter: e.reader.NewIter(), e: e, tc: d.tables}, nil
	})
}

// tableIter is a table iterator that holds its table's cache reference
// until closed.
type tableIter struct {
	*table.Iter
	e  *tableEntry
	tc *tableCache
}

func (t *tableIter) Close() error {
	err := t.Iter.Close()
	t.tc.release(t.e)
	return err
}

// tableTombstones returns the range tombstones of every table of the view,
// read once per view.
func (rs *readState) tableTombstones() ([]base.Tombstone, error) {
	rs.tombOnce.Do(func() {
		for _, files := range rs.version.Levels {
			for _, f := range files {
				e, err := rs.db.tables.acquire(f.FileNum)
				if err != nil {
					rs.tombErr = err
					return
				}
				rs.tombs = append(rs.tombs, e.reader.Tombstones()...)
				rs.db.tables.release(e)
			}
		}
	})
	return rs.tombs, rs.tombErr
}
