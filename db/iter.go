package db

import (
	"bytes"
	"slices"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/bloom"
	"github.com/stratadb/strata/internal/iterator"
	"github.com/stratadb/strata/internal/rangedel"
	"github.com/stratadb/strata/internal/version"
)

type direction int8

const (
	forward direction = iota
	reverse
)

// Iterator walks the live keys of a consistent view of the database in key
// order, in both directions.
//
// State: in the forward direction the internal iterator rests on the entry
// that supplies Key and Value. In the reverse direction it rests just before
// every entry of the current key, whose key and value are copied into
// savedKey and savedValue (as in LevelDB's DBIter).
//
// Valid, Key, Value and Next allocate nothing; the upper-bound check is one
// comparison against the bound given in ReadOptions.
type Iterator struct {
	d     *DB
	cf    *ColumnFamily
	cmp   *base.Comparer // cf's order
	st    *iterState     // nil once closed
	iter  *iterator.Merging
	snap  base.SeqNum
	tombs *rangedel.Set

	lower, upper []byte
	h            *extractorHandle
	prefixSame   bool
	totalOrder   bool
	// prefix is the Seek key's prefix under PrefixSameAsStart (nil: no
	// narrowing). prefixContiguous is true when the extractor's prefixes are
	// byte prefixes of their keys, so that iteration can stop at the first
	// key past them.
	prefix           []byte
	prefixBuf        []byte
	hasPrefix        bool
	prefixContiguous bool
	// filterPrefix is the prefix the table filters are probed with during a
	// seek (nil: no filtering).
	filterPrefix []byte
	filterHash   uint64 // bloom.HashKey(filterPrefix)

	dir        direction
	valid      bool
	iterValid  bool // the internal iterator's last positioning result
	savedKey   []byte
	savedValue []byte
	// blobVal is the current value when the forward position's entry is a
	// blob index (blobbed): read from its blob file when the iterator
	// lands on it, as RocksDB's DBIter does, so that a blob that cannot
	// be read stops the iterator with the error. It may alias the block
	// cache and is never modified.
	blobVal []byte
	blobbed bool
	seekBuf []byte
	err     error
	closed  bool
	// counted: this iterator is in DB.openIters (NewIterator's, until Close).
	counted bool

	// merged is set in the forward direction when the current value was
	// combined from merge operands: the key and value are then in savedKey
	// and savedValue, and the internal iterator rests past the entries
	// read (see merge.go).
	merged bool
	mbuf   mergeBuf
	// snapshot is ReadOptions.Snapshot, which Refresh keeps reading at;
	// refreshKey holds the key Refresh repositions at.
	snapshot   *Snapshot
	refreshKey []byte
	// lowerBuf and upperBuf keep SetBounds' copies' memory across calls.
	lowerBuf, upperBuf []byte
	// batchIter: the iterator reads an indexed batch or a transaction over
	// the database (see batchIndex.newIterator); Refresh refuses it.
	batchIter bool
	// track, set on a Serializable transaction's iterator, collects the
	// key range it passes over (see readRange); nil otherwise, and the
	// positioning methods then pay one nil check.
	track    *readRange
	trackBuf []byte

	// ttl is the family's TTL in seconds (0: none): values carry a write
	// time suffix, which Value strips, and those expired at now (the
	// clock when NewIterator or Refresh ran: one instant for the whole
	// view) are stepped over unless includeExpired.
	ttl            int64
	now            int64
	includeExpired bool
	// ttlValue is the current value as stored, kept by the positioning's
	// expiry check (reading it again costs as much as the check).
	ttlValue []byte
}

// errIterClosed is the error of a closed iterator, made once: a stack
// trace per Close costs 5% of a short seek.
var errIterClosed = errors.Wrap(ErrClosed, "strata: iterator closed")

// NewIterator returns an iterator over the state at ro.Snapshot (or now).
// It is positioned nowhere: call a Seek method first. Close it when done.
func (d *DB) NewIterator(ro *ReadOptions) *Iterator { return d.def.NewIterator(ro) }

// NewIterator returns an iterator over the family (see DB.NewIterator).
// For a dropped family it returns an iterator that is not Valid and whose
// Err wraps ErrInvalidArgument.
func (cf *ColumnFamily) NewIterator(ro *ReadOptions) *Iterator {
	d := cf.d
	it := &Iterator{d: d, cf: cf, cmp: cf.cmp}
	if err := cf.check(d); err != nil {
		it.err, it.closed = err, true
		return it
	}
	if ro == nil {
		ro = &ReadOptions{}
	}
	// The read view first, then the sequence number: see readState.
	rs := cf.loadReadState()
	d.testingHookBetweenViewAndSeq()
	snap, err := d.readSeq(rs, ro)
	if err != nil {
		rs.unref()
		it.err, it.closed = err, true
		return it
	}
	it.snap, it.snapshot = snap, ro.Snapshot
	it.lower = append([]byte(nil), ro.LowerBound...)
	if ro.LowerBound == nil {
		it.lower = nil
	}
	if ro.UpperBound != nil {
		// Non-nil even when empty: an empty UpperBound is a bound before every key.
		it.upper = append([]byte{}, ro.UpperBound...)
	}
	it.prefixSame, it.totalOrder = ro.PrefixSameAsStart, ro.TotalOrderSeek
	if it.ttl = cf.ttlSeconds(); it.ttl > 0 {
		it.now, it.includeExpired = d.nowUnix(), ro.IncludeExpired
	}
	it.h = cf.extractor.Load()
	st, err := d.acquireIterState(rs, snap)
	if err != nil {
		it.err, it.closed = err, true
		return it
	}
	st.owner = it
	it.st, it.iter, it.tombs = st, &st.merging, &st.tombs
	it.prefixBuf, st.prefixBuf = st.prefixBuf[:0], nil
	it.setIterBounds()
	it.counted = true
	d.openIters.Add(1)
	return it
}

// setIterBounds hands the bounds to the internal iterators, which then
// yield only keys inside them (see iterator.Merging.SetBounds): the
// upper-bound check of a forward step is theirs. For a batch's iterator
// both the outer merge (the batch and the database) and the database's
// own get them. The internal iterators are unpositioned afterwards.
func (it *Iterator) setIterBounds() {
	it.st.merging.SetBounds(it.lower, it.upper)
	if it.iter != &it.st.merging {
		it.iter.SetBounds(it.lower, it.upper)
	}
	it.iterValid = false
}

// iterState is the part of an Iterator that depends only on the read view:
// the child iterators over its memtables and files, the merging iterator
// and the range tombstones. Building it costs an allocation per file, so a
// closed iterator's state is kept (one per DB) and reused by the next
// NewIterator over the same read view — db_bench's seekrandom makes an
// iterator per seek. The user-visible Iterator is never reused: a closed
// one stays closed.
//
// Invariants: st holds a reference on rs; while cached, no child holds an
// open table (every level was Reset).
type iterState struct {
	d        *DB
	rs       *readState
	owner    *Iterator // the Iterator using the state, read by level callbacks
	levels   []*iterator.Level
	merging  iterator.Merging
	children []iterator.Iterator
	// spans are the children's user-key spans (see iterator.Span): the
	// immutable memtables', each level's; the mutable memtable has none.
	spans []iterator.Span
	// tombs are the view's range tombstones visible at tombsSnap.
	tombs     rangedel.Set
	tombsSnap base.SeqNum
	hasTombs  bool // some source had tombstones when the state was built
	// prefixBuf is memory for Iterator.prefixBuf kept between the
	// iterators that reuse the state: the iterator takes it (the state
	// then holds nil, so nothing else shares it) and gives it back at
	// Close, and a Seek under PrefixSameAsStart copies its prefix without
	// an allocation.
	prefixBuf []byte
}

// acquireIterState returns the iterator state of the read view rs, reusing
// the cached one when it belongs to the same view. It takes over the
// caller's reference on rs.
func (d *DB) acquireIterState(rs *readState, snap base.SeqNum) (*iterState, error) {
	if st := rs.cf.iterCache.Swap(nil); st != nil {
		if st.rs == rs {
			rs.unref() // st holds its own reference
			if err := st.refreshTombstones(snap); err != nil {
				st.release()
				return nil, err
			}
			st.initMerging()
			return st, nil
		}
		st.release()
	}
	st := &iterState{d: d, rs: rs}
	if err := st.build(snap); err != nil {
		rs.unref()
		return nil, err
	}
	return st, nil
}

// refreshTombstones rebuilds the fragments for snap when some source may
// hold tombstones (the mutable memtable may have gained some).
func (st *iterState) refreshTombstones(snap base.SeqNum) error {
	any := st.hasTombs
	for _, m := range st.rs.mems {
		any = any || m.HasTombstones()
	}
	if !any {
		return nil
	}
	if !st.hasTombs || snap != st.tombsSnap || st.rs.mems[0].HasTombstones() {
		return st.buildTombstones(snap)
	}
	return nil
}

// buildTombstones fragments the view's range tombstones visible at snap.
func (st *iterState) buildTombstones(snap base.SeqNum) error {
	var tombs []base.Tombstone
	for _, m := range st.rs.mems {
		if m.HasTombstones() {
			tombs = append(tombs, m.Tombstones(snap)...)
		}
	}
	tt, err := st.rs.tableTombstones()
	if err != nil {
		return err
	}
	tombs = append(tombs, tt...)
	st.tombs = rangedel.Build(st.rs.cf.cmp, tombs, snap)
	st.tombsSnap, st.hasTombs = snap, len(tombs) > 0
	return nil
}

// release closes the children and drops the view.
func (st *iterState) release() {
	st.merging.Close()
	st.rs.unref()
}

// recycle offers the state of a closed iterator to the cache. It reports
// the first error the children had collected; a state with errors is
// released instead.
func (st *iterState) recycle() error {
	var err error
	for _, l := range st.levels {
		if lerr := l.Reset(); err == nil {
			err = lerr
		}
	}
	st.owner = nil
	if err != nil || st.d.closed.Load() {
		st.release()
		return err
	}
	d := st.d
	if !d.isCurrentView(st.rs) {
		st.release() // a state of an old view would pin its memtables and files
		return nil
	}
	cf := st.rs.cf
	if old := cf.iterCache.Swap(st); old != nil {
		old.release()
	}
	// The view may have changed since the check; updateReadStateLocked
	// installs the new view before emptying the cache, so this second look
	// sees it and takes back a state it may have missed.
	if !d.isCurrentView(st.rs) {
		if stale := cf.iterCache.Swap(nil); stale != nil {
			stale.release()
		}
	}
	return nil
}

// initMerging (re)starts the merging iterator over the children, with
// their spans and no bounds (the Iterator sets its own: setIterBounds).
func (st *iterState) initMerging() {
	st.merging.Init(st.rs.cf.cmp, st.children...)
	st.merging.SetSpans(st.spans)
}

// build assembles the children, the merging iterator and the tombstone
// fragments.
//
// Each child comes with the span of user keys it holds, so that a bounded
// iterator positions only the children that can hold keys in its range
// (see iterator.Merging): the immutable memtables' spans are read once
// here (their contents no longer change), the files' come from their
// metadata (which may be wider than the point keys, for a range deletion
// reaching past them: still a superset). The mutable memtable has none.
//
// L0 files that do not overlap one another, as an append-only workload's
// flushes (a log's consecutive indexes), are walked as one concatenation,
// like a sorted level, rather than one merge child each: see l0Runs.
func (st *iterState) build(snap base.SeqNum) error {
	rs := st.rs
	v := rs.version
	runs := l0Runs(st.rs.cf.cmp, v.Levels[0])
	// Sized once: a seek with many L0 files must not pay for growing these.
	n := len(rs.mems) + len(runs) + len(v.Levels)
	st.children = make([]iterator.Iterator, 0, n)
	st.spans = make([]iterator.Span, 0, n)
	st.levels = make([]*iterator.Level, 0, n)
	for i, m := range rs.mems {
		it := m.NewIter()
		st.children = append(st.children, it)
		var sp iterator.Span
		if i > 0 {
			sp = memtableSpan(it)
		}
		st.spans = append(st.spans, sp)
	}
	if err := st.buildTombstones(snap); err != nil {
		return err
	}
	l0Bounds := make([]iterator.FileBounds, len(v.Levels[0]))
	for _, run := range runs {
		st.addLevel(run, l0Bounds[:len(run):len(run)])
		l0Bounds = l0Bounds[len(run):]
	}
	for level := 1; level < len(v.Levels); level++ {
		if len(v.Levels[level]) == 0 {
			continue
		}
		st.addLevel(v.Levels[level], nil)
	}
	st.initMerging()
	return nil
}

// addLevel adds a level child over files (sorted, not overlapping).
func (st *iterState) addLevel(files []*version.FileMetadata, bounds []iterator.FileBounds) {
	l := st.d.newLevelIter(st, files, bounds)
	st.levels = append(st.levels, l)
	st.children = append(st.children, l)
	st.spans = append(st.spans, iterator.Span{Smallest: files[0].Smallest.UserKey, Largest: files[len(files)-1].Largest.UserKey})
}

// memtableSpan returns the user keys of a frozen memtable's first and last
// entries (a zero Span, none known, for an empty one: an empty memtable
// positions at no cost).
func memtableSpan(it iterator.Iterator) iterator.Span {
	var sp iterator.Span
	if !it.First() {
		return sp
	}
	sp.Smallest = it.Key().UserKey
	if it.Last() {
		sp.Largest = it.Key().UserKey
	}
	return sp
}

// l0Runs partitions the L0 files into runs whose files' user-key ranges
// are disjoint, each run sorted by key: a run can be read as a level (one
// merge child, a binary search to the file a seek needs). Files are taken
// by smallest key, each into the first run whose last file ends strictly
// before it starts (so adjacent files never share a user key, whose
// versions a concatenation would order by file and not by sequence
// number); that makes as many runs as the deepest overlap, one for an
// append-only workload however many files it flushed. Files that overlap
// keep apart as before: a run of one each.
func l0Runs(cmp *base.Comparer, l0 []*version.FileMetadata) [][]*version.FileMetadata {
	if len(l0) == 0 {
		return nil
	}
	sorted := slices.Clone(l0)
	slices.SortStableFunc(sorted, func(a, b *version.FileMetadata) int {
		return cmp.CompareUser(a.Smallest.UserKey, b.Smallest.UserKey)
	})
	var runs [][]*version.FileMetadata
	for _, f := range sorted {
		placed := false
		for i, r := range runs {
			if cmp.CompareUser(r[len(r)-1].Largest.UserKey, f.Smallest.UserKey) < 0 {
				runs[i] = append(r, f)
				placed = true
				break
			}
		}
		if !placed {
			runs = append(runs, []*version.FileMetadata{f})
		}
	}
	return runs
}

// Valid reports whether the iterator rests on a key. After the DB's Close
// it is false.
func (it *Iterator) Valid() bool { return it.valid && !it.d.closed.Load() }

// Key returns the current key, valid until the iterator moves; nil when the
// iterator is not Valid (unpositioned, exhausted or closed).
func (it *Iterator) Key() []byte {
	if !it.Valid() {
		return nil
	}
	if it.dir == forward && !it.merged {
		return it.iter.Key().UserKey
	}
	return it.savedKey
}

// Value returns the current value, valid until the iterator moves; nil when
// the iterator is not Valid.
func (it *Iterator) Value() []byte {
	if !it.Valid() {
		return nil
	}
	if it.ttl > 0 {
		// Positioning checked the suffix is there and kept the value.
		return it.ttlValue[:len(it.ttlValue)-ttlSuffixLen]
	}
	return it.rawValue()
}

// rawValue is the current value as stored (with a TTL suffix).
func (it *Iterator) rawValue() []byte {
	if it.dir == forward && !it.merged {
		if it.blobbed {
			return it.blobVal
		}
		return it.iter.Value()
	}
	return it.savedValue
}

// ttlSkip reports whether the current value of a TTL family is to be
// stepped over (expired); a value without room for the suffix stops the
// iterator with ErrCorruption.
func (it *Iterator) ttlSkip() bool {
	v := it.rawValue()
	it.ttlValue = v
	if len(v) < ttlSuffixLen {
		it.err = base.CorruptionErrorf("strata: column family %q: value of key %q has %d bytes, too short for its TTL timestamp", it.cf.name, it.Key(), len(v))
		it.valid = false
		return false
	}
	return !it.includeExpired && ttlExpired(v, it.ttl, it.now)
}

// Err returns the error that stopped the iterator, if any; after the DB's
// Close, an error wrapping ErrClosed.
func (it *Iterator) Err() error {
	if it.err == nil && it.d.closed.Load() {
		return errDBClosedIter
	}
	return it.err
}

// errDBClosedIter is the error of an iterator whose DB was closed.
var errDBClosedIter = errors.Wrap(ErrClosed, "strata: iterator used after its database was closed")

// Close releases the iterator's view of the database. A second Close
// returns ErrClosed.
func (it *Iterator) Close() error {
	if it.closed {
		if it.err != nil && errors.Is(it.err, ErrClosed) {
			return it.err
		}
		return errors.Wrap(ErrClosed, "strata: iterator already closed")
	}
	it.closed, it.valid = true, false
	if it.counted {
		it.counted = false
		it.d.openIters.Add(-1)
	}
	var err error
	if it.st != nil {
		it.st.prefixBuf, it.prefixBuf, it.prefix, it.filterPrefix = it.prefixBuf[:0], nil, nil, nil
		err = it.st.recycle()
		it.st, it.iter = nil, nil
	}
	if it.err == nil {
		it.err = errIterClosed
	}
	return err
}

// usable reports whether a positioning call may run.
func (it *Iterator) usable() bool {
	if it.closed {
		it.valid = false
		return false
	}
	if it.d.closed.Load() {
		it.valid, it.err = false, errDBClosedIter
		return false
	}
	if it.err != nil {
		// Written only when set: a pointer write, even of nil, pays the
		// collector's write barrier while it marks, once per step.
		it.err = nil
	}
	return true
}

// setPrefix records the narrowing prefix for a Seek to key.
func (it *Iterator) setPrefix(key []byte) {
	it.hasPrefix, it.filterPrefix = false, nil
	if it.h == nil {
		return
	}
	ext := it.h.ext
	if !ext.InDomain(key) {
		return
	}
	if it.prefixSame {
		p := ext.Transform(key)
		it.prefixBuf = append(it.prefixBuf[:0], p...)
		it.prefix = it.prefixBuf
		it.hasPrefix = true
		// The keys with a byte prefix are one run in bytewise order and
		// in its reverse; other orders need not keep them together.
		it.prefixContiguous = bytes.HasPrefix(key, p) && (it.cmp.Bytewise || it.cmp == base.ReverseComparer)
		if !it.totalOrder {
			it.setFilterPrefix(it.prefix)
		}
		return
	}
	// RocksDB's auto prefix mode: an upper bound inside the seek key's
	// prefix means every key read has that prefix, so filters apply.
	if !it.totalOrder && it.upper != nil && builtinExtractor(it.h.name) && ext.InDomain(it.upper) &&
		bytes.HasPrefix(key, ext.Transform(key)) {
		p := ext.Transform(key)
		if bytes.Equal(p, ext.Transform(it.upper)) {
			it.prefixBuf = append(it.prefixBuf[:0], p...)
			it.setFilterPrefix(it.prefixBuf)
		}
	}
}

// setFilterPrefix makes p the prefix the table filters are probed with,
// hashed once here rather than once per table.
func (it *Iterator) setFilterPrefix(p []byte) {
	it.filterPrefix = p
	it.filterHash = bloom.HashKey(p)
}

// resetFilteredChildren drops level children opened for an earlier seek's
// filter decision, so the next seek decides afresh.
func (it *Iterator) resetFilteredChildren() {
	for _, l := range it.st.levels {
		l.ResetChild()
	}
}

// inPrefix reports whether key passes the PrefixSameAsStart narrowing, and
// whether iteration in the current direction can stop (past the prefix).
func (it *Iterator) inPrefix(key []byte) (ok, stop bool) {
	if !it.hasPrefix {
		return true, false
	}
	ext := it.h.ext
	if ext.InDomain(key) && bytes.Equal(ext.Transform(key), it.prefix) {
		return true, false
	}
	if !it.prefixContiguous {
		return false, false
	}
	if bytes.HasPrefix(key, it.prefix) {
		return false, false
	}
	return false, true
}

// SeekToFirst moves to the first key (at or after LowerBound).
func (it *Iterator) SeekToFirst() {
	if !it.usable() {
		return
	}
	if it.track != nil {
		it.trackStart(nil, nil, true)
	}
	it.hasPrefix, it.filterPrefix = false, nil
	it.resetFilteredChildren()
	it.dir = forward
	if it.lower != nil {
		it.iterValid = it.iter.SeekGE(it.lower)
	} else {
		it.iterValid = it.iter.First()
	}
	it.findNextUserEntry(false, nil)
	if it.track != nil {
		it.trackEnd(true)
	}
}

// Seek moves to the first key >= key.
func (it *Iterator) Seek(key []byte) {
	if !it.usable() {
		return
	}
	it.setPrefix(key)
	it.resetFilteredChildren()
	it.dir = forward
	target := key
	if it.lower != nil && it.cmp.CompareUser(target, it.lower) < 0 {
		target = it.lower
	}
	if it.track != nil {
		it.trackStart(target, nil, true)
	}
	it.iterValid = it.iter.SeekGE(target)
	it.findNextUserEntry(false, nil)
	if it.track != nil {
		it.trackEnd(true)
	}
}

// SeekToLast moves to the last key (before UpperBound).
func (it *Iterator) SeekToLast() {
	if !it.usable() {
		return
	}
	if it.track != nil {
		it.trackStart(nil, nil, false)
	}
	it.hasPrefix, it.filterPrefix = false, nil
	it.resetFilteredChildren()
	it.dir = reverse
	if it.upper != nil {
		it.iterValid = it.iter.SeekLT(it.upper)
	} else {
		it.iterValid = it.iter.Last()
	}
	it.findPrevUserEntry()
	if it.track != nil {
		it.trackEnd(false)
	}
}

// SeekForPrev moves to the last key <= key.
func (it *Iterator) SeekForPrev(key []byte) {
	if !it.usable() {
		return
	}
	it.setPrefix(key)
	if !it.hasPrefix {
		// The auto prefix mode holds only forward from a Seek: backward,
		// keys of other prefixes are read too.
		it.filterPrefix = nil
	}
	it.resetFilteredChildren()
	it.dir = reverse
	if it.upper != nil && it.cmp.CompareUser(key, it.upper) >= 0 {
		it.iterValid = it.iter.SeekLT(it.upper)
	} else {
		it.seekLE(key)
	}
	if it.track != nil {
		it.trackSeekForPrev(key)
	}
	it.findPrevUserEntry()
	if it.track != nil {
		it.trackEnd(false)
	}
}

// seekLE positions the internal iterator at the last entry whose user key
// is <= key.
func (it *Iterator) seekLE(key []byte) {
	if it.cmp.Bytewise {
		// The last entry <= key is the last one < key+"\x00".
		it.seekBuf = append(append(it.seekBuf[:0], key...), 0)
		it.iterValid = it.iter.SeekLT(it.seekBuf)
		return
	}
	// Other orders have no successor key to name: step past key's
	// entries and back one.
	it.seekBuf = append(it.seekBuf[:0], key...)
	ok := it.iter.SeekGE(it.seekBuf)
	for ok && it.cmp.Compare(it.iter.Key().UserKey, it.seekBuf) == 0 {
		ok = it.iter.Next()
	}
	if ok {
		it.iterValid = it.iter.Prev()
	} else if it.iter.Error() != nil {
		it.iterValid = false
	} else {
		it.iterValid = it.iter.Last()
	}
}

// Next moves to the next key.
func (it *Iterator) Next() {
	if it.track != nil {
		it.nextTracked()
		return
	}
	if !it.usable() || !it.valid {
		it.valid = false
		return
	}
	if it.dir == reverse {
		// The internal iterator rests before the current key's entries.
		it.dir = forward
		if it.iterValid {
			it.iterValid = it.iter.Next()
		} else {
			it.iterValid = it.iter.First()
		}
		// savedKey holds the current key: skip its entries.
		it.findNextUserEntry(true, it.savedKey)
		return
	}
	if it.merged {
		// savedKey holds the current key and the internal iterator rests
		// past the operands read.
		it.findNextUserEntry(true, it.savedKey)
		return
	}
	it.saveKey(it.iter.Key().UserKey)
	it.iterValid = it.iter.Next()
	it.findNextUserEntry(true, it.savedKey)
}

// saveKey copies k into savedKey. Within savedKey's capacity it reslices
// in place, writing no pointer (no write barrier while the collector
// marks): Next saves every key it steps from.
func (it *Iterator) saveKey(k []byte) {
	if len(k) <= cap(it.savedKey) {
		it.savedKey = it.savedKey[:len(k)]
		copy(it.savedKey, k)
		return
	}
	it.savedKey = append(it.savedKey[:0], k...)
}

// Prev moves to the previous key.
func (it *Iterator) Prev() {
	if it.track != nil {
		it.prevTracked()
		return
	}
	if !it.usable() || !it.valid {
		it.valid = false
		return
	}
	if it.dir == forward && it.merged {
		// savedKey holds the current key; the internal iterator rests
		// somewhere past its entries: seek back before them.
		if it.filterPrefix != nil && !it.hasPrefix {
			it.filterPrefix = nil
			it.resetFilteredChildren()
		}
		it.iterValid = it.iter.SeekLT(it.savedKey)
		it.dir = reverse
	}
	if it.dir == forward {
		// Step back to the last entry before the current key.
		it.savedKey = append(it.savedKey[:0], it.iter.Key().UserKey...)
		if it.filterPrefix != nil && !it.hasPrefix {
			// Files skipped by the auto prefix mode's filter may hold
			// keys before the Seek key: reposition without the filter.
			it.filterPrefix = nil
			it.resetFilteredChildren()
			if !it.iter.SeekGE(it.savedKey) {
				// An error (the current key is there): stepping back
				// from an exhausted iterator is not allowed.
				it.iterValid = false
				it.dir = reverse
				it.findPrevUserEntry()
				return
			}
		}
		for {
			it.iterValid = it.iter.Prev()
			if !it.iterValid || it.cmp.CompareUser(it.iter.Key().UserKey, it.savedKey) < 0 {
				break
			}
		}
		it.dir = reverse
	}
	it.findPrevUserEntry()
}

// findNextUserEntry moves forward from the internal iterator's position to
// the first visible, live key; with skipping set it first passes every
// entry of skip.
func (it *Iterator) findNextUserEntry(skipping bool, skip []byte) {
	it.findNextEntry(skipping, skip)
	for it.ttl > 0 && it.valid && it.ttlSkip() {
		// An expired value: the key reads as absent (as Next would step).
		if !it.merged {
			it.savedKey = append(it.savedKey[:0], it.iter.Key().UserKey...)
			it.iterValid = it.iter.Next()
		}
		it.findNextEntry(true, it.savedKey)
	}
}

// findNextEntry is findNextUserEntry before TTL expiry.
func (it *Iterator) findNextEntry(skipping bool, skip []byte) {
	it.merged, it.blobbed = false, false
	for ; it.iterValid; it.iterValid = it.iter.Next() {
		k := it.iter.Key()
		seq := k.SeqNum()
		if seq >= it.snap {
			continue
		}
		if skipping && bytes.Equal(k.UserKey, skip) {
			continue
		}
		switch kind := k.Kind(); kind {
		case base.KindSet, base.KindMerge, base.KindBlobIndex:
			if !it.tombs.Empty() && it.tombs.Deleted(k.UserKey, seq) {
				skip = it.saveSkip(k.UserKey)
				skipping = true
				continue
			}
			if ok, stop := it.inPrefix(k.UserKey); !ok {
				if stop {
					it.valid = false
					return
				}
				skip = it.saveSkip(k.UserKey)
				skipping = true
				continue
			}
			if kind == base.KindMerge {
				it.mergeForward()
				return
			}
			if kind == base.KindBlobIndex {
				v, err := it.d.blobs.get(k.UserKey, it.iter.Value())
				if err != nil {
					it.err, it.valid = err, false
					return
				}
				it.blobVal, it.blobbed = v, true
			}
			it.valid = true
			return
		case base.KindDelete, base.KindSingleDelete:
			skip = it.saveSkip(k.UserKey)
			skipping = true
		default:
			it.err = errors.Newf("strata: key %q has a %s entry, which Strata cannot read", k.UserKey, kind)
			it.valid = false
			return
		}
	}
	it.valid = false
	if err := it.iter.Error(); err != nil {
		it.err = err
	}
}

// saveSkip copies key into the skip buffer. The buffer must not be
// savedKey, which Next passes in as the key to skip; both reuse memory.
func (it *Iterator) saveSkip(key []byte) []byte {
	it.seekBuf = append(it.seekBuf[:0], key...)
	return it.seekBuf
}

// findPrevUserEntry moves backward from the internal iterator's position to
// the previous visible, live key, leaving the internal iterator just before
// that key's entries.
func (it *Iterator) findPrevUserEntry() {
	it.findPrevEntry()
	for it.ttl > 0 && it.valid && it.ttlSkip() {
		// An expired value: the key reads as absent. The internal
		// iterator rests before its entries.
		it.findPrevEntry()
	}
}

// findPrevEntry is findPrevUserEntry before TTL expiry.
func (it *Iterator) findPrevEntry() {
	it.merged, it.blobbed = false, false
	haveValue := false
	// savedBlob: savedValue holds a blob index, read once the walk ends.
	savedBlob := false
	// hasBase: savedValue holds the value under the operands in it.mbuf
	// (the key's newest operands read so far, oldest first).
	hasBase := false
	it.mbuf.reset()
	for it.iterValid {
		k := it.iter.Key()
		seq := k.SeqNum()
		if seq < it.snap {
			if haveValue && it.cmp.CompareUser(k.UserKey, it.savedKey) < 0 {
				break
			}
			if !haveValue && it.lower != nil && it.cmp.CompareUser(k.UserKey, it.lower) < 0 {
				break
			}
			switch kind := k.Kind(); kind {
			case base.KindSet, base.KindMerge, base.KindBlobIndex:
				if it.tombs.Deleted(k.UserKey, seq) {
					haveValue = false
					break
				}
				if ok, stop := it.inPrefix(k.UserKey); !ok {
					haveValue = false
					if stop && it.cmp.CompareUser(k.UserKey, it.prefix) < 0 {
						it.valid = false
						it.checkErr()
						return
					}
					break
				}
				if kind == base.KindSet || kind == base.KindBlobIndex {
					it.savedKey = append(it.savedKey[:0], k.UserKey...)
					it.savedValue = append(it.savedValue[:0], it.iter.Value()...)
					haveValue, hasBase = true, true
					savedBlob = kind == base.KindBlobIndex
					it.mbuf.reset()
					break
				}
				if !haveValue {
					// The first live entry of this key: nothing below.
					it.savedKey = append(it.savedKey[:0], k.UserKey...)
					hasBase = false
					it.mbuf.reset()
				}
				it.mbuf.add(it.iter.Value())
				haveValue = true
			case base.KindDelete, base.KindSingleDelete:
				haveValue = false
			default:
				it.err = errors.Newf("strata: key %q has a %s entry, which Strata cannot read", k.UserKey, k.Kind())
				it.valid = false
				return
			}
		}
		it.iterValid = it.iter.Prev()
	}
	if !it.iterValid {
		// The walk ran off the start or met an error. An error may hide
		// newer entries of savedKey (or a tombstone over it) and leaves
		// nothing to resume from: the key gathered so far is not returned.
		if err := it.iter.Error(); err != nil {
			it.err = err
			it.valid = false
			return
		}
	}
	if haveValue && hasBase && savedBlob {
		v, err := it.d.blobs.get(it.savedKey, it.savedValue)
		if err != nil {
			it.err, it.valid = err, false
			return
		}
		it.savedValue = append(it.savedValue[:0], v...)
	}
	if haveValue && it.mbuf.len() > 0 {
		var existing []byte
		if hasBase {
			existing = nonNil(it.savedValue)
		}
		v, err := it.cf.fullMerge(it.savedKey, existing, it.mbuf.operands(false))
		if err != nil {
			it.err, it.valid = err, false
			return
		}
		it.savedValue = append(it.savedValue[:0], v...)
	}
	it.valid = haveValue
}

func (it *Iterator) checkErr() {
	if err := it.iter.Error(); err != nil {
		it.err = err
	}
}

// builtinExtractor reports whether name is one of RocksDB's extractors,
// whose prefixes are byte prefixes shared by every key that starts with
// them: the condition for RocksDB's auto prefix mode.
func builtinExtractor(name string) bool {
	return len(name) > 8 && name[:8] == "rocksdb."
}
