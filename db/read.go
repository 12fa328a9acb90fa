package db

import (
	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/bloom"
	"github.com/stratadb/strata/internal/rangedel"
	"github.com/stratadb/strata/internal/version"
)

// readSeq returns the exclusive read sequence number for ro.
func (d *DB) readSeq(rs *readState, ro *ReadOptions) (base.SeqNum, error) {
	if rs.closed {
		// The read raced with Close: the memtables of the view it would
		// have read are gone.
		return 0, errors.Wrap(ErrClosed, "strata: database is closed")
	}
	if ro != nil && ro.Snapshot != nil {
		s := ro.Snapshot
		if s.released.Load() || s.db != d {
			return 0, errors.Wrap(ErrClosed, "strata: read at a released snapshot")
		}
		return s.seq, nil
	}
	return base.SeqNum(d.visibleSeq.Load()) + 1, nil
}

// Get returns the value of key. The caller owns the returned slice. A key
// with no live value gives ErrNotFound itself, unwrapped: a miss is an
// answer, not a failure, and building a wrapped error with a stack trace
// costs more than the lookup.
func (d *DB) Get(key []byte, ro *ReadOptions) ([]byte, error) { return d.def.Get(key, ro) }

// Get returns the value of key in the family (see DB.Get).
func (cf *ColumnFamily) Get(key []byte, ro *ReadOptions) ([]byte, error) {
	d := cf.d
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	if cf.dropped.Load() {
		return nil, cf.check(d)
	}
	// The read view first, then the sequence number: see readState.
	rs := cf.loadReadState()
	d.testingHookBetweenViewAndSeq()
	snap, err := d.readSeq(rs, ro)
	if err != nil {
		rs.unref()
		return nil, err
	}
	v, err := d.get(rs, key, snap, cf.extractor.Load())
	rs.unref()
	if err == nil && cf.opts.TTL > 0 {
		v, err = cf.stripTTL(key, v, ro != nil && ro.IncludeExpired)
	}
	return v, err
}

// MultiGet returns the value or error for each key, all read at one
// sequence number.
func (d *DB) MultiGet(keys [][]byte, ro *ReadOptions) ([][]byte, []error) {
	return d.def.MultiGet(keys, ro)
}

// MultiGet returns the value or error for each key of the family, all read
// at one sequence number.
func (cf *ColumnFamily) MultiGet(keys [][]byte, ro *ReadOptions) ([][]byte, []error) {
	d := cf.d
	vals := make([][]byte, len(keys))
	errs := make([]error, len(keys))
	fail := func(err error) ([][]byte, []error) {
		for i := range errs {
			errs[i] = err
		}
		return vals, errs
	}
	if err := cf.check(d); err != nil {
		return fail(err)
	}
	// The read view first, then the sequence number: see readState.
	rs := cf.loadReadState()
	d.testingHookBetweenViewAndSeq()
	snap, err := d.readSeq(rs, ro)
	if err != nil {
		rs.unref()
		return fail(err)
	}
	h := cf.extractor.Load()
	ttl := cf.opts.TTL > 0
	for i, k := range keys {
		vals[i], errs[i] = d.get(rs, k, snap, h)
		if ttl && errs[i] == nil {
			vals[i], errs[i] = cf.stripTTL(k, vals[i], ro != nil && ro.IncludeExpired)
		}
	}
	rs.unref()
	return vals, errs
}

// getResult is the newest version of a key found so far, and the largest
// covering tombstone sequence number seen in the sources searched.
type getResult struct {
	cf      *ColumnFamily
	value   []byte
	kind    base.Kind
	seq     base.SeqNum
	found   bool
	owned   bool // value is a private copy
	hashed  bool // keyHash is bloom.HashKey(key)
	keyHash uint64
	maxTomb base.SeqNum
	// tablesRead counts the tables whose data blocks were searched (a
	// table its filter excluded is not counted); firstRead, of level
	// firstLevel, is the first of them: the table a read-triggered
	// compaction charges when more than one was read.
	tablesRead int
	firstRead  *version.FileMetadata
	firstLevel int
}

// get searches the sources newest to oldest: memtables, L0 newest first,
// then one file per level. The first source holding a visible version of
// key decides, unless a range tombstone seen so far is newer than it.
func (d *DB) get(rs *readState, key []byte, snap base.SeqNum, h *extractorHandle) ([]byte, error) {
	r := getResult{cf: rs.cf}
	cmp := rs.cf.cmp
	for _, m := range rs.mems {
		if m.HasTombstones() {
			if t := rangedel.MaxCoveringIn(cmp, m.Tombstones(snap), key, snap); t > r.maxTomb {
				r.maxTomb = t
			}
		}
		if v, kind, seq, ok := m.Get(key, snap); ok {
			r.value, r.kind, r.seq, r.found = v, kind, seq, true
			return d.resolveGet(rs, key, snap, &r)
		}
	}
	v := rs.version
	for _, f := range v.Levels[0] {
		if !containsUserKey(cmp, f, key) {
			continue
		}
		if err := d.getFromTable(f, 0, key, snap, h, &r); err != nil {
			return nil, err
		}
		if r.found {
			d.chargeSeek(&r)
			return d.resolveGet(rs, key, snap, &r)
		}
	}
	for level := 1; level < version.NumLevels; level++ {
		files := v.Levels[level]
		i := v.FindFile(level, key)
		if i < len(files) && version.IsSentinel(files[i].Largest) &&
			cmp.CompareUser(files[i].Largest.UserKey, key) == 0 {
			// An exclusive bound (a clipped range tombstone): key, if
			// anywhere in the level, is in the next file.
			i++
		}
		// Adjacent files may share a boundary user key (RocksDB writes such
		// levels): the first holds its newer versions, the next ones the
		// older, so a read at an older snapshot may find nothing visible
		// in the first and must go on.
		for ; i < len(files) && containsUserKey(cmp, files[i], key); i++ {
			if err := d.getFromTable(files[i], level, key, snap, h, &r); err != nil {
				return nil, err
			}
			if r.found {
				d.chargeSeek(&r)
				return d.resolveGet(rs, key, snap, &r)
			}
			if cmp.CompareUser(files[i].Largest.UserKey, key) != 0 {
				break
			}
		}
	}
	d.chargeSeek(&r)
	return nil, ErrNotFound
}

// chargeSeek applies the read-triggered compaction rule to a finished
// lookup: when it searched the data of more than one table, the first of
// them, which did not hold the key, is charged a wasted seek. A table whose
// budget runs out becomes the seek-compaction candidate.
func (d *DB) chargeSeek(r *getResult) {
	if r.tablesRead < 2 || !r.cf.seekCompactions {
		return
	}
	if r.firstRead.ChargeSeek() {
		r.cf.noteSeekCandidate(r.firstRead, r.firstLevel)
	}
}

// resolve turns the version found into Get's answer; the value is copied
// out of engine memory.
func (r *getResult) resolve(key []byte) ([]byte, error) {
	if r.seq < r.maxTomb {
		return nil, ErrNotFound
	}
	switch r.kind {
	case base.KindSet:
		if r.owned {
			return r.value, nil
		}
		return cloneValue(r.value), nil
	case base.KindDelete, base.KindSingleDelete:
		return nil, ErrNotFound
	}
	return nil, errors.Newf("strata: key %q has a %s entry, which Strata cannot read", key, r.kind)
}

// resolveGet turns the version found into Get's answer, resolving merge
// operands through an iterator.
func (d *DB) resolveGet(rs *readState, key []byte, snap base.SeqNum, r *getResult) ([]byte, error) {
	if r.kind == base.KindMerge && r.seq >= r.maxTomb {
		return d.getMerged(rs, key, snap)
	}
	if r.kind == base.KindBlobIndex && r.seq >= r.maxTomb {
		return d.blobs.getCopy(key, r.value)
	}
	return r.resolve(key)
}

// getFromTable looks key up in one table, consulting its tombstones and then
// its filter before reading a data block.
func (d *DB) getFromTable(f *version.FileMetadata, level int, key []byte, snap base.SeqNum, h *extractorHandle, r *getResult) error {
	e, err := d.tables.acquire(f)
	if err != nil {
		return err
	}
	defer d.tables.release(e)
	tr := e.reader
	if tombs := tr.Tombstones(); len(tombs) > 0 {
		if t := rangedel.MaxCoveringIn(r.cf.cmp, tombs, key, snap); t > r.maxTomb {
			r.maxTomb = t
		}
	}
	if tr.HasFilter() {
		d.stats.filterChecks.Add(1)
		may, err := d.tableMayContain(e, key, h, r)
		if err != nil {
			return err
		}
		if !may {
			d.stats.filterUseful.Add(1)
			return nil
		}
	}
	if r.tablesRead == 0 {
		r.firstRead, r.firstLevel = f, level
	}
	r.tablesRead++
	v, kind, seq, found, err := tr.Get(key, snap)
	if err != nil {
		return err
	}
	if found {
		// tr.Get's value is a copy of its own (the block it came from is
		// released before Get returns), so it outlives the table.
		r.value, r.kind, r.seq, r.found = v, kind, seq, true
		r.owned = kind == base.KindSet || kind == base.KindBlobIndex
	}
	return nil
}

// tableMayContain asks the table's filter whether key may be present: the
// whole-key entry when the table has them, else the prefix entry when the
// current extractor is compatible with the table's.
// A filter read through the block cache (CacheIndexAndFilterBlocks) that
// cannot be read fails the lookup: skipping the table could miss the key.
func (d *DB) tableMayContain(e *tableEntry, key []byte, h *extractorHandle, r *getResult) (bool, error) {
	tr := e.reader
	if tr.WholeKeyFiltering() {
		// Hash once per lookup, not once per table probed.
		if !r.hashed {
			r.keyHash, r.hashed = bloom.HashKey(key), true
		}
		return tr.KeyMayMatchHashErr(key, r.keyHash)
	}
	if h != nil && h.ext.InDomain(key) && d.prefixFilterUsable(e, h) {
		return tr.PrefixMayMatchErr(h.ext.Transform(key))
	}
	return true, nil
}

// containsUserKey reports whether key lies within f's user-key bounds.
func containsUserKey(cmp *base.Comparer, f *version.FileMetadata, key []byte) bool {
	return cmp.CompareUser(f.Smallest.UserKey, key) <= 0 && cmp.CompareUser(key, f.Largest.UserKey) <= 0
}

// cloneValue returns a copy of v that the caller owns. make followed by
// copy is the form the compiler allocates without zeroing first, where
// append to make(0, n) clears the allocation and then copies over it.
func cloneValue(v []byte) []byte {
	c := make([]byte, len(v))
	copy(c, v)
	return c
}
