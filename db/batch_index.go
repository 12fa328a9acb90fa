package db

import (
	"io"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/batch"
	"github.com/stratadb/strata/internal/iterator"
	"github.com/stratadb/strata/internal/memtable"
	"github.com/stratadb/strata/internal/rangedel"
)

// batchSeqBase numbers the records of an indexed batch in its index: record
// i has sequence number batchSeqBase+i. The numbers sort above every number
// a database assigns (those stay below 2^55 in any life of a store: that is
// 10^16 writes), so in an internal-key order a batch's writes are newer than
// anything of the database and newer among themselves in the order they
// were made: the read path's rules (newest version wins, a range tombstone
// covers what is older, merge operands stack newest first) then apply to the
// batch over the database unchanged, as in Pebble's indexed batch.
const batchSeqBase base.SeqNum = 1 << 55

// batchIndexArena is the first arena size of a family's index; it doubles
// when full (see batchIndex.insert).
const batchIndexArena = 4 << 10

// batchIndex is the index of an indexed batch: per family, a memtable of
// the batch's records at batchSeqBase+i. A memtable is a skiplist over an
// arena that only grows, so an iterator made over it sees its records as of
// its making by reading below the number of records then (see
// Batch.NewIteratorCF); an arena that is full, or a rollback to a
// savepoint, replaces the memtable by a new one rebuilt from the batch's
// encoding, leaving the old one, unchanged, to the iterators holding it.
type batchIndex struct {
	d    *DB
	mems map[uint32]*memtable.MemTable
	// saves are the savepoints, oldest first.
	saves []batchSavePoint
}

// batchSavePoint is the state of the batch when a savepoint was set.
type batchSavePoint struct {
	n                      int
	count                  uint32
	rangeDels, multiFamily bool
	hasMerge, usesDefault  bool
	fams                   []batchFamily
}

// NewIndexedBatch returns an empty batch that can be read: Get and
// NewIterator see its writes over the database's latest state. Indexing
// costs about what a memtable insert does per write; a batch from NewBatch
// pays nothing of it.
func (d *DB) NewIndexedBatch() *Batch {
	return &Batch{index: &batchIndex{d: d, mems: map[uint32]*memtable.MemTable{}}}
}

// indexLast adds the record just appended to the batch, of family id, to
// the index. Kept out of line: the plain batch's methods pay one nil check.
func (b *Batch) indexLast(id uint32, kind base.Kind, key, value []byte) {
	seq := batchSeqBase + base.SeqNum(b.b.Count()) - 1
	x := b.index
	m := x.mems[id]
	if m == nil {
		m = memtable.New(batchIndexArena)
		m.SetComparer(x.d.comparerOf(id))
		x.mems[id] = m
	}
	if err := insertIndexed(m, kind, key, value, seq); err != nil {
		// The arena is full: rebuild the family's index, the new record
		// included, in one twice as large as needed.
		need := 2 * (m.ApproximateMemoryUsage() + memtable.SizeFor(len(key), len(value)))
		x.rebuild(&b.b, id, need)
	}
}

func insertIndexed(m *memtable.MemTable, kind base.Kind, key, value []byte, seq base.SeqNum) error {
	if kind == base.KindRangeDelete {
		if m.Comparer().CompareUser(key, value) >= 0 {
			return nil // an empty range deletes nothing, as in applyRecord
		}
		return m.AddRangeDel(base.Tombstone{Start: key, End: value, Seq: seq})
	}
	return m.Add(base.MakeInternalKey(key, seq, kind), value)
}

// rebuild replaces the index of family id (every family when all) with one
// built from b's records, in an arena of at least size bytes.
func (x *batchIndex) rebuild(b *batch.Batch, id uint32, size int) {
	x.rebuildFams(b, func(f uint32) bool { return f == id }, size)
}

func (x *batchIndex) rebuildFams(b *batch.Batch, want func(uint32) bool, size int) {
	for {
		fresh := map[uint32]*memtable.MemTable{}
		if ok := x.fill(b, want, size, fresh); ok {
			for id := range x.mems {
				if want(id) {
					delete(x.mems, id)
				}
			}
			for id, m := range fresh {
				x.mems[id] = m
			}
			return
		}
		size *= 2
	}
}

// fill indexes b's records of the wanted families into fresh memtables of
// size bytes; false when one is too small.
func (x *batchIndex) fill(b *batch.Batch, want func(uint32) bool, size int, fresh map[uint32]*memtable.MemTable) bool {
	if b.Empty() {
		return true
	}
	r, err := batch.NewReader(b.Data())
	if err != nil {
		// The batch was built by its own methods: it always decodes.
		panic(errors.NewAssertionErrorWithWrappedErrf(err, "strata: indexed batch does not decode"))
	}
	for seq := batchSeqBase; ; seq++ {
		id, kind, key, value, err := r.NextCF()
		if err == io.EOF {
			return true
		}
		if err != nil {
			panic(errors.NewAssertionErrorWithWrappedErrf(err, "strata: indexed batch does not decode"))
		}
		if !want(id) {
			continue
		}
		m := fresh[id]
		if m == nil {
			m = memtable.New(size)
			m.SetComparer(x.d.comparerOf(id))
			fresh[id] = m
		}
		if err := insertIndexed(m, kind, key, value, seq); err != nil {
			if errors.Is(err, memtable.ErrArenaFull) {
				return false
			}
			panic(errors.NewAssertionErrorWithWrappedErrf(err, "strata: indexing a batch record"))
		}
	}
}

// setSavePoint records the batch's state.
func (b *Batch) setSavePoint() {
	b.index.saves = append(b.index.saves, batchSavePoint{
		n: b.b.Len(), count: b.b.Count(), rangeDels: b.b.HasRangeDeletion(), multiFamily: b.b.MultiFamily(),
		hasMerge: b.hasMerge, usesDefault: b.usesDefault, fams: append([]batchFamily(nil), b.fams...),
	})
}

// rollbackToSavePoint undoes the writes since the latest savepoint and
// removes it; false when there is none.
func (b *Batch) rollbackToSavePoint() bool {
	x := b.index
	if len(x.saves) == 0 {
		return false
	}
	s := x.saves[len(x.saves)-1]
	x.saves = x.saves[:len(x.saves)-1]
	if b.b.Count() == s.count {
		return true
	}
	b.b.Truncate(s.n, s.count, s.rangeDels, s.multiFamily)
	b.hasMerge, b.usesDefault, b.fams = s.hasMerge, s.usesDefault, s.fams
	b.err = nil // a refused record came after the savepoint
	size := batchIndexArena
	for _, m := range x.mems {
		if u := m.ApproximateMemoryUsage(); u > size {
			size = u
		}
	}
	x.mems = map[uint32]*memtable.MemTable{}
	x.rebuildFams(&b.b, func(uint32) bool { return true }, size)
	return true
}

// Get returns the value of key in the default family as the batch's writes
// over the database's latest state make it. A batch that is not indexed
// returns an error wrapping ErrInvalidArgument.
func (b *Batch) Get(key []byte) ([]byte, error) {
	if b.index == nil {
		return nil, errNotIndexed
	}
	return b.GetCF(b.index.d.def, key)
}

// GetCF is Get in family cf.
func (b *Batch) GetCF(cf *ColumnFamily, key []byte) ([]byte, error) {
	if b.index == nil {
		return nil, errNotIndexed
	}
	// The database's latest state is part of the answer, even for a key
	// the batch wrote: a closed database has none.
	if err := b.index.d.checkOpen(); err != nil {
		return nil, err
	}
	if cf != nil {
		if err := errTTLFamily(cf); err != nil {
			return nil, err
		}
	}
	return b.index.get(cf, key, nil, b.b.Count())
}

var errNotIndexed = errors.Wrap(ErrInvalidArgument, "strata: the batch is not indexed (use DB.NewIndexedBatch)")

// get reads key of cf through the batch's first n records over the database
// read with ro.
func (x *batchIndex) get(cf *ColumnFamily, key []byte, ro *ReadOptions, n uint32) ([]byte, error) {
	if cf == nil || cf.d != x.d {
		return nil, errors.Wrap(ErrInvalidArgument, "strata: batch read of a column family of another database (or nil)")
	}
	m := x.mems[cf.id]
	if m == nil {
		return cf.Get(key, ro)
	}
	hi := batchSeqBase + base.SeqNum(n)
	var tomb base.SeqNum
	if m.HasTombstones() {
		tomb = rangedel.MaxCoveringIn(cf.cmp, m.Tombstones(hi), key, hi)
	}
	v, kind, seq, ok := m.Get(key, hi)
	switch {
	case ok && seq > tomb && kind == base.KindSet:
		return append([]byte{}, v...), nil
	case ok && seq > tomb && (kind == base.KindDelete || kind == base.KindSingleDelete):
		return nil, ErrNotFound
	case !ok && tomb == 0:
		return cf.Get(key, ro)
	case !ok || seq < tomb:
		// A range deletion of the batch is the newest word on key.
		return nil, ErrNotFound
	}
	// Merge operands on top: resolve through an iterator, which applies
	// the read path's rules across the batch and the database.
	r := ReadOptions{LowerBound: key}
	if cf.cmp.Bytewise {
		// key+"\x00" is key's successor in bytewise order only; other
		// orders read unbounded and check the key found.
		r.UpperBound = append(append([]byte{}, key...), 0)
	}
	if ro != nil {
		r.Snapshot = ro.Snapshot
	}
	it := x.newIterator(cf, &r, n, nil)
	it.Seek(key)
	var out []byte
	if it.Valid() && (cf.cmp.Bytewise || cf.cmp.Compare(it.Key(), key) == 0) {
		out = append([]byte{}, it.Value()...)
	}
	err := it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, ErrNotFound
	}
	return out, nil
}

// NewIterator returns an iterator over the default family as the batch's
// writes over the database's latest state make it; see NewIteratorCF.
func (b *Batch) NewIterator(ro *ReadOptions) *Iterator {
	if b.index == nil {
		return &Iterator{err: errNotIndexed, closed: true}
	}
	return b.NewIteratorCF(b.index.d.def, ro)
}

// NewIteratorCF returns an iterator over family cf as the batch's writes
// over the database make it, at ro.Snapshot or now. It sees the batch as it
// was when the iterator was made: writes added to the batch later are not
// seen (Pebble's rule, not RocksDB's WriteBatchWithIndex, whose iterator
// sees later writes that land ahead of its position but not behind it, and
// whose current entry a write may invalidate). A fixed view is defined
// whatever the order of reads and writes: a loop that writes what it
// iterates does not meet its own writes. Make a new iterator to see them.
// Bounds and PrefixSameAsStart apply as to a DB iterator. Refresh of such
// an iterator returns an error wrapping ErrInvalidArgument.
func (b *Batch) NewIteratorCF(cf *ColumnFamily, ro *ReadOptions) *Iterator {
	if b.index == nil {
		return &Iterator{err: errNotIndexed, closed: true}
	}
	if err := b.index.d.checkOpen(); err != nil {
		return &Iterator{err: err, closed: true}
	}
	if cf == nil || cf.d != b.index.d {
		return &Iterator{err: errors.Wrap(ErrInvalidArgument, "strata: batch iterator of a column family of another database (or nil)"), closed: true}
	}
	if err := errTTLFamily(cf); err != nil {
		return &Iterator{err: err, closed: true}
	}
	return b.index.newIterator(cf, ro, b.b.Count(), nil)
}

// newIterator returns a DB iterator of cf read with ro, with the family's
// first n records of the batch merged in, and tracking what it reads into
// track when set.
func (x *batchIndex) newIterator(cf *ColumnFamily, ro *ReadOptions, n uint32, track *readRange) *Iterator {
	it := cf.NewIterator(ro)
	it.batchIter = true
	it.track = track
	if it.closed {
		return it
	}
	m := x.mems[cf.id]
	if m == nil {
		return it
	}
	hi := batchSeqBase + base.SeqNum(n)
	dbSnap := it.snap
	// The tombstones: the database's visible at its read sequence number
	// and the batch's first n.
	var tombs []base.Tombstone
	rs := it.st.rs
	for _, mm := range rs.mems {
		if mm.HasTombstones() {
			tombs = append(tombs, mm.Tombstones(dbSnap)...)
		}
	}
	tt, err := rs.tableTombstones()
	if err != nil {
		it.err, it.valid = err, false
		_ = it.Close()
		it.err = err
		return it
	}
	for _, t := range tt {
		if t.Seq < dbSnap {
			tombs = append(tombs, t)
		}
	}
	if m.HasTombstones() {
		tombs = append(tombs, m.Tombstones(hi)...)
	}
	set := rangedel.Build(cf.cmp, tombs, hi)
	it.tombs = &set
	var outer iterator.Merging
	outer.Init(cf.cmp, m.NewIter(), &seqFilter{in: &it.st.merging, snap: dbSnap})
	it.iter = &outer
	it.setIterBounds()
	// Entries of the database newer than its read number are dropped by
	// seqFilter; those of the batch past its first n by the iterator's own
	// visibility rule.
	it.snap = hi
	return it
}

// seqFilter hides the entries of in whose sequence number is at or above
// snap, so that a batch iterator, whose own visibility limit is the batch's,
// reads the database at its read sequence number.
type seqFilter struct {
	in   iterator.Iterator
	snap base.SeqNum
}

func (f *seqFilter) fwd(ok bool) bool {
	for ok && f.in.Key().SeqNum() >= f.snap {
		ok = f.in.Next()
	}
	return ok
}

func (f *seqFilter) back(ok bool) bool {
	for ok && f.in.Key().SeqNum() >= f.snap {
		ok = f.in.Prev()
	}
	return ok
}

func (f *seqFilter) SeekGE(key []byte) bool { return f.fwd(f.in.SeekGE(key)) }
func (f *seqFilter) SeekLT(key []byte) bool { return f.back(f.in.SeekLT(key)) }
func (f *seqFilter) First() bool            { return f.fwd(f.in.First()) }
func (f *seqFilter) Last() bool             { return f.back(f.in.Last()) }
func (f *seqFilter) Next() bool             { return f.fwd(f.in.Next()) }
func (f *seqFilter) Prev() bool             { return f.back(f.in.Prev()) }
func (f *seqFilter) Key() base.InternalKey  { return f.in.Key() }
func (f *seqFilter) Value() []byte          { return f.in.Value() }
func (f *seqFilter) Error() error           { return f.in.Error() }

// Close leaves in open: it belongs to the iterator's state, which the
// iterator's Close recycles.
func (f *seqFilter) Close() error { return nil }

// readRange is the key range a transaction's iterator passed over: the hull
// [lo, hi) of every place it was positioned at and every key it returned,
// or ran off to (its bound or the end of the key space). Serializable
// validation checks it for writes after the snapshot. A move sets the end
// it starts from and then the one it stops at, so each end is set by the
// first move that reaches it; an end no move set is taken as unbounded.
type readRange struct {
	cf           *ColumnFamily
	loSet, hiSet bool
	lo, hi       []byte // lo inclusive, hi exclusive unless hiIncl
	loInf, hiInf bool   // no lower (upper) end
	// hiIncl: hi was a key read, so the range includes it. (A key's
	// successor is not something every comparer can name.)
	hiIncl bool
}

// used reports whether the iterator was positioned.
func (r *readRange) used() bool { return r.loSet || r.hiSet }

// bounds returns the range to validate, an end that no move set unbounded.
func (r *readRange) bounds() (lo []byte, loInf bool, hi []byte, hiInf, hiIncl bool) {
	return r.lo, r.loInf || !r.loSet, r.hi, r.hiInf || !r.hiSet, r.hiIncl
}

func (r *readRange) extendLo(k []byte, inf bool) {
	switch {
	case !r.loSet:
		r.loSet = true
		r.lo, r.loInf = append(r.lo[:0], k...), inf
	case r.loInf:
	case inf:
		r.loInf = true
	case r.cf.cmp.CompareUser(k, r.lo) < 0:
		r.lo = append(r.lo[:0], k...)
	}
}

func (r *readRange) extendHi(k []byte, inf, incl bool) {
	switch {
	case !r.hiSet:
		r.hiSet = true
		r.hi, r.hiInf, r.hiIncl = append(r.hi[:0], k...), inf, incl
	case r.hiInf:
	case inf:
		r.hiInf = true
	default:
		if c := r.cf.cmp.CompareUser(k, r.hi); c > 0 || c == 0 && incl {
			r.hi, r.hiIncl = append(r.hi[:0], k...), incl
		}
	}
}

// trackStart notes where a positioning call starts: forward from key (nil:
// the lower bound or the start), or backward from before end (nil: the
// upper bound or the end).
func (it *Iterator) trackStart(forwardFrom []byte, backFrom []byte, isForward bool) {
	r := it.track
	if isForward {
		if forwardFrom == nil {
			r.extendLo(it.lower, it.lower == nil)
		} else {
			r.extendLo(forwardFrom, false)
		}
		return
	}
	if backFrom == nil {
		r.extendHi(it.upper, it.upper == nil, false)
	} else {
		r.extendHi(backFrom, false, false)
	}
}

// trackEnd notes where a move in the direction given stopped: the key
// returned, or the bound (the end) it ran off to. An error stops it
// anywhere: the range is then taken to the end.
func (it *Iterator) trackEnd(isForward bool) {
	r := it.track
	valid := it.valid && it.err == nil
	if isForward {
		if valid {
			r.extendHi(it.Key(), false, true)
		} else {
			r.extendHi(it.upper, it.upper == nil || it.err != nil, false)
		}
		return
	}
	if valid {
		r.extendLo(it.Key(), false)
	} else {
		r.extendLo(it.lower, it.lower == nil || it.err != nil)
	}
}

// trackSeekForPrev notes the start of SeekForPrev(key): every key <= key,
// within the upper bound.
func (it *Iterator) trackSeekForPrev(key []byte) {
	if it.upper != nil && it.cmp.CompareUser(key, it.upper) >= 0 {
		it.track.extendHi(it.upper, false, false)
		return
	}
	it.track.extendHi(key, false, true)
}

// nextTracked is Next for an iterator that tracks its range: the plain
// Next, with tracking off for the call (so that Next itself pays only the
// nil check), then the range extended to where it stopped.
func (it *Iterator) nextTracked() {
	wasValid, r := it.valid, it.track
	it.track = nil
	it.Next()
	it.track = r
	if wasValid {
		it.trackEnd(true)
	}
}

// prevTracked is nextTracked for Prev.
func (it *Iterator) prevTracked() {
	wasValid, r := it.valid, it.track
	it.track = nil
	it.Prev()
	it.track = r
	if wasValid {
		it.trackEnd(false)
	}
}
