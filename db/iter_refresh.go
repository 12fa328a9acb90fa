package db

import (
	"github.com/cockroachdb/errors"
)

// Refresh moves the iterator to the current state of the database: writes,
// flushes and compactions since it was created (or last refreshed) become
// visible, and the files and memtables it no longer needs are released. An
// iterator made with ReadOptions.Snapshot keeps reading at that snapshot:
// its contents do not change, but it drops its hold on obsolete files. (Here
// Strata differs from RocksDB 7.8, which refuses to refresh an iterator
// with a snapshot.)
//
// A Valid iterator keeps its position: it moves to the same key in the new
// state, or, if that key is gone, to the next key in its direction (the
// next larger one after Seek/Next, the next smaller one after Prev). The
// bounds and the PrefixSameAsStart prefix of the last seek stay in force.
// An iterator that is not Valid stays unpositioned.
//
// Refresh returns ErrClosed for a closed iterator or database, an
// ErrInvalidArgument error when the iterator's column family was dropped
// since, and the error of a snapshot released since; the iterator is then
// not Valid.
func (it *Iterator) Refresh() error {
	if it.closed {
		return errors.Wrap(ErrClosed, "strata: Refresh of a closed iterator")
	}
	if it.batchIter {
		// Its state includes the batch's index as of NewIterator.
		return errors.Wrap(ErrInvalidArgument, "strata: Refresh of an indexed batch's or a transaction's iterator: make a new one")
	}
	d := it.d
	if err := it.cf.check(d); err != nil {
		// A closed database, or a family dropped since NewIterator: there
		// is no current state to move to.
		it.valid, it.err = false, err
		return err
	}
	wasValid, dir := it.valid, it.dir
	if wasValid {
		it.refreshKey = append(it.refreshKey[:0], it.Key()...)
	}
	// The iterator's own family's view, not the default one's; a dropped
	// family has none to move to.
	if err := it.cf.check(d); err != nil {
		it.valid, it.err = false, err
		return err
	}
	// The read view first, then the sequence number: see readState.
	// The iterator's own family's view: the DB's is the default family's.
	rs := it.cf.loadReadState()
	snap, err := d.readSeq(rs, &ReadOptions{Snapshot: it.snapshot})
	if err != nil {
		rs.unref()
		it.valid, it.err = false, err
		return err
	}
	it.valid = false
	old := it.st
	it.st, it.iter, it.tombs = nil, nil, nil
	if err := old.recycle(); err != nil {
		rs.unref()
		it.err = err
		it.closed = true
		return err
	}
	st, err := d.acquireIterState(rs, snap)
	if err != nil {
		it.err, it.closed = err, true
		return err
	}
	st.owner = it
	it.st, it.iter, it.tombs, it.snap = st, &st.merging, &st.tombs, snap
	it.setIterBounds()
	it.err = nil
	if it.ttl > 0 {
		it.now = d.nowUnix()
	}
	if !wasValid {
		return nil
	}
	// Reposition without touching the prefix narrowing of the last seek.
	key := it.refreshKey
	it.dir = dir
	if dir == forward {
		it.iterValid = it.iter.SeekGE(key)
		it.findNextUserEntry(false, nil)
	} else {
		it.seekLE(key)
		it.findPrevUserEntry()
	}
	return it.err
}

// SetBounds replaces the iterator's bounds, as ReadOptions.LowerBound
// (inclusive) and UpperBound (exclusive) would: nil is no bound, and an
// empty, non-nil upper bound is a bound before every key. The slices are
// copied. As in Pebble, the iterator becomes unpositioned: call a Seek
// method next. Its view and its child iterators are kept, so changing the
// bounds costs no allocation once the bound buffers are large enough.
func (it *Iterator) SetBounds(lower, upper []byte) {
	it.valid = false
	if it.closed {
		return
	}
	it.err = nil
	it.lower = nil
	if len(lower) > 0 { // an empty lower bound bounds nothing
		it.lowerBuf = append(it.lowerBuf[:0], lower...)
		it.lower = it.lowerBuf
	}
	it.upper = nil
	if upper != nil {
		it.upperBuf = append(it.upperBuf[:0], upper...)
		if it.upperBuf == nil {
			it.upperBuf = []byte{}
		}
		it.upper = it.upperBuf
	}
	if it.st != nil {
		it.setIterBounds()
	}
}
