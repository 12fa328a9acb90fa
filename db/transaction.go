package db

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/rangedel"
	"github.com/stratadb/strata/internal/version"
)

// Isolation is a transaction's isolation level.
type Isolation int

const (
	// SnapshotIsolation: Commit fails with ErrConflict when a key the
	// transaction wrote or read with GetForUpdate was written by a commit
	// after its snapshot. Write skew commits.
	SnapshotIsolation Isolation = iota
	// Serializable: SnapshotIsolation's conflicts, and also every key read
	// by Get (found or not) and every key range an iterator passed over:
	// neither write skew nor phantoms pass.
	Serializable
)

// TransactionOptions configure a transaction; the zero value is an
// optimistic SnapshotIsolation transaction.
type TransactionOptions struct {
	Isolation Isolation
	// Pessimistic locks keys when written or read for update (RocksDB
	// TransactionDB); the default is optimistic (RocksDB
	// OptimisticTransactionDB): nothing waits, Commit validates.
	Pessimistic bool
	// LockTimeout bounds a pessimistic lock wait; 0 is 1 s.
	LockTimeout time.Duration
	// Sync makes Commit fsync the WAL before it returns, as
	// WriteOptions.Sync: a commit acknowledged with Sync survives a power
	// loss. Without it a commit is as durable as an unsynced write (it
	// survives a process crash, not a power loss, until a later sync). A
	// transaction without writes has nothing to sync. Update and View use
	// the defaults (no Sync).
	Sync bool
}

// Transaction is a unit of reads and writes that commits atomically or not
// at all. It reads at a snapshot taken when it began, sees its own writes,
// and buffers them in an indexed batch: nothing of it is visible to anyone
// before Commit returns nil. Commit validates (see Isolation) and writes one
// batch through the database's commit pipeline: in the WAL it is a plain
// RocksDB write batch. A Transaction is not safe for concurrent use. After
// Commit (whatever it returned) or Rollback every method returns an error
// wrapping ErrClosed. See docs/transactions.md.
type Transaction struct {
	d        *DB
	opts     TransactionOptions
	snap     *Snapshot
	b        *Batch
	readOnly bool
	done     bool

	// writeSet holds the keys written; writes lists them in order of
	// first write, so that a rollback to a savepoint forgets the ones
	// written since (saves holds len(writes) at each savepoint).
	writeSet map[txnKey]struct{}
	writes   []txnKey
	saves    []int
	// reads holds the keys read with GetForUpdate, and under Serializable
	// those read with Get; ranges the iterators' ranges (Serializable).
	reads  map[txnKey]struct{}
	ranges []*readRange
	// locks are the pessimistic locks held (see lockManager).
	locks []lockKey
}

type txnKey struct {
	cf  *ColumnFamily
	key string
}

// NewTransaction begins a transaction; nil opts are the defaults
// (optimistic, SnapshotIsolation). On a closed database every method of the
// transaction returns an error wrapping ErrClosed.
func (d *DB) NewTransaction(opts *TransactionOptions) *Transaction {
	t := &Transaction{d: d, writeSet: map[txnKey]struct{}{}, reads: map[txnKey]struct{}{}}
	if opts != nil {
		t.opts = *opts
	}
	if t.opts.LockTimeout <= 0 {
		t.opts.LockTimeout = defaultLockTimeout
	}
	if d.checkOpen() != nil {
		t.done = true
		return t
	}
	t.snap = d.NewSnapshot()
	t.b = d.NewIndexedBatch()
	return t
}

// updateRetries bounds the attempts of Update after the first.
const updateRetries = 10

// Update runs fn in a new transaction (default options) and commits it.
// When fn or Commit return an error wrapping ErrConflict it runs fn again
// in a fresh transaction, after a jittered backoff, up to updateRetries
// times, then returns that error. Any other error of fn is returned
// unchanged and nothing is committed. On a closed database it returns
// ErrClosed without running fn.
func (d *DB) Update(fn func(*Transaction) error) error {
	backoff := 50 * time.Microsecond
	for attempt := 0; ; attempt++ {
		if err := d.checkOpen(); err != nil {
			return err
		}
		t := d.NewTransaction(nil)
		err := fn(t)
		if err == nil {
			err = t.Commit()
		} else {
			_ = t.Rollback()
		}
		if err == nil || !errors.Is(err, ErrConflict) || attempt == updateRetries {
			return err
		}
		// Jitter: transactions that conflicted together must not retry
		// in step.
		time.Sleep(backoff/2 + rand.N(backoff))
		if backoff < 10*time.Millisecond {
			backoff *= 2
		}
	}
}

// View runs fn in a read-only transaction at one snapshot and returns fn's
// error; the transaction's writes return ErrReadOnly. Nothing is validated:
// a View commits nothing. On a closed database it returns ErrClosed
// without running fn.
func (d *DB) View(fn func(*Transaction) error) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	t := d.NewTransaction(nil)
	t.readOnly = true
	err := fn(t)
	_ = t.Rollback()
	return err
}

var errTxnClosed = errors.Wrap(ErrClosed, "strata: transaction already committed or rolled back")

// check refuses a call on a finished transaction or a closed database
// (ErrClosed either way; the database's error first, as elsewhere).
func (t *Transaction) check() error {
	if err := t.d.checkOpen(); err != nil {
		return err
	}
	if t.done {
		return errTxnClosed
	}
	return nil
}

func (t *Transaction) checkWrite(cf *ColumnFamily) error {
	if err := t.check(); err != nil {
		return err
	}
	if t.readOnly {
		return errors.Wrap(ErrReadOnly, "strata: write in a read-only transaction (DB.View)")
	}
	return t.checkFamily(cf)
}

func (t *Transaction) checkFamily(cf *ColumnFamily) error {
	if cf == nil || cf.d != t.d {
		return errors.Wrap(ErrInvalidArgument, "strata: transaction on a column family of another database (or nil)")
	}
	return errTTLFamily(cf)
}

// errTTLFamily refuses transactions and indexed batches on a family with a
// TTL: their buffered values carry no write time, and reading them through
// the TTL read path would take four bytes of value for one (RocksDB's
// DBWithTTL and TransactionDB do not combine either).
func errTTLFamily(cf *ColumnFamily) error {
	if cf.opts.TTL > 0 {
		return errors.Wrapf(ErrInvalidArgument, "strata: column family %q has a TTL: transactions and indexed batches are not supported on it", cf.name)
	}
	return nil
}

// lock takes key's lock for a pessimistic transaction.
func (t *Transaction) lock(cf *ColumnFamily, key []byte) error {
	if !t.opts.Pessimistic {
		return nil
	}
	return t.d.lockManager().lock(t, lockKey{cf: cf.id, key: string(key)}, t.opts.LockTimeout)
}

// Get returns the value of key in the default family: the transaction's own
// writes first, then its snapshot.
func (t *Transaction) Get(key []byte) ([]byte, error) { return t.GetCF(t.d.def, key) }

// GetCF is Get in family cf.
func (t *Transaction) GetCF(cf *ColumnFamily, key []byte) ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if err := t.checkFamily(cf); err != nil {
		return nil, err
	}
	if t.opts.Isolation == Serializable {
		t.reads[txnKey{cf, string(key)}] = struct{}{}
	}
	return t.b.index.get(cf, key, &ReadOptions{Snapshot: t.snap}, t.b.b.Count())
}

// GetForUpdate is Get that also makes key a conflict key under either
// isolation level, and, in a pessimistic transaction, locks it first.
func (t *Transaction) GetForUpdate(key []byte) ([]byte, error) {
	return t.GetForUpdateCF(t.d.def, key)
}

// GetForUpdateCF is GetForUpdate in family cf.
func (t *Transaction) GetForUpdateCF(cf *ColumnFamily, key []byte) ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if err := t.checkFamily(cf); err != nil {
		return nil, err
	}
	if err := t.lock(cf, key); err != nil {
		return nil, err
	}
	t.reads[txnKey{cf, string(key)}] = struct{}{}
	return t.b.index.get(cf, key, &ReadOptions{Snapshot: t.snap}, t.b.b.Count())
}

// noteWrite adds key to the write set.
func (t *Transaction) noteWrite(cf *ColumnFamily, key []byte) {
	k := txnKey{cf, string(key)}
	if _, ok := t.writeSet[k]; !ok {
		t.writeSet[k] = struct{}{}
		t.writes = append(t.writes, k)
	}
}

// Put sets key to value in the default family.
func (t *Transaction) Put(key, value []byte) error { return t.PutCF(t.d.def, key, value) }

// PutCF sets key to value in family cf.
func (t *Transaction) PutCF(cf *ColumnFamily, key, value []byte) error {
	if err := t.checkWrite(cf); err != nil {
		return err
	}
	if err := t.lock(cf, key); err != nil {
		return err
	}
	t.b.PutCF(cf, key, value)
	if t.b.err != nil {
		return t.b.err
	}
	t.noteWrite(cf, key)
	return nil
}

// Delete removes key from the default family.
func (t *Transaction) Delete(key []byte) error { return t.DeleteCF(t.d.def, key) }

// DeleteCF removes key from family cf.
func (t *Transaction) DeleteCF(cf *ColumnFamily, key []byte) error {
	if err := t.checkWrite(cf); err != nil {
		return err
	}
	if err := t.lock(cf, key); err != nil {
		return err
	}
	t.b.DeleteCF(cf, key)
	if t.b.err != nil {
		return t.b.err
	}
	t.noteWrite(cf, key)
	return nil
}

// Merge adds a merge operand for key in the default family.
func (t *Transaction) Merge(key, operand []byte) error { return t.MergeCF(t.d.def, key, operand) }

// MergeCF adds a merge operand for key in family cf, which must have a
// merge operator.
func (t *Transaction) MergeCF(cf *ColumnFamily, key, operand []byte) error {
	if err := t.checkWrite(cf); err != nil {
		return err
	}
	if cf.opts.MergeOperator == nil {
		return errors.Wrapf(errMergeWithoutOperator, "strata: column family %q", cf.name)
	}
	if err := t.lock(cf, key); err != nil {
		return err
	}
	t.b.MergeCF(cf, key, operand)
	if t.b.err != nil {
		return t.b.err
	}
	t.noteWrite(cf, key)
	return nil
}

// NewIterator returns an iterator over the default family: the
// transaction's writes merged over its snapshot, whatever ro.Snapshot says.
// Bounds and PrefixSameAsStart apply. It sees the transaction's writes as
// of its making (see Batch.NewIteratorCF). Under Serializable the range it
// passes over is validated at Commit.
func (t *Transaction) NewIterator(ro *ReadOptions) *Iterator { return t.NewIteratorCF(t.d.def, ro) }

// NewIteratorCF is NewIterator over family cf.
func (t *Transaction) NewIteratorCF(cf *ColumnFamily, ro *ReadOptions) *Iterator {
	if err := t.check(); err != nil {
		return &Iterator{err: err, closed: true}
	}
	if err := t.checkFamily(cf); err != nil {
		return &Iterator{err: err, closed: true}
	}
	var r ReadOptions
	if ro != nil {
		r = *ro
	}
	r.Snapshot = t.snap
	var track *readRange
	if t.opts.Isolation == Serializable {
		track = &readRange{cf: cf}
		t.ranges = append(t.ranges, track)
	}
	return t.b.index.newIterator(cf, &r, t.b.b.Count(), track)
}

// SetSavePoint marks the current state of the transaction's writes for
// RollbackToSavePoint. Savepoints nest. On a finished transaction it does
// nothing (it has no error to return).
func (t *Transaction) SetSavePoint() {
	if t.done {
		return
	}
	t.b.setSavePoint()
	t.saves = append(t.saves, len(t.writes))
}

// RollbackToSavePoint undoes the writes made since the latest savepoint and
// removes it; it returns an error wrapping ErrNotFound when there is none.
// Locks taken since are kept, as RocksDB does, and so are the reads.
func (t *Transaction) RollbackToSavePoint() error {
	if err := t.check(); err != nil {
		return err
	}
	if len(t.saves) == 0 || !t.b.rollbackToSavePoint() {
		return errors.Wrap(ErrNotFound, "strata: RollbackToSavePoint without a savepoint")
	}
	n := t.saves[len(t.saves)-1]
	t.saves = t.saves[:len(t.saves)-1]
	for _, k := range t.writes[n:] {
		delete(t.writeSet, k)
	}
	t.writes = t.writes[:n]
	return nil
}

// Rollback discards the transaction: nothing of it was or will be written.
// On a closed database it still releases the transaction's snapshot and
// locks, and returns ErrClosed.
func (t *Transaction) Rollback() error {
	if t.done {
		return t.check()
	}
	t.finish()
	return t.d.checkOpen()
}

// finish ends the transaction: its snapshot and locks go.
func (t *Transaction) finish() {
	t.done = true
	t.snap.Release()
	if len(t.locks) > 0 {
		t.d.lockManager().unlockAll(t)
	}
	t.b = nil
}

// Commit validates the transaction and writes its batch, atomically: the
// validation runs in the commit pipeline's critical section with every
// earlier write applied, and the batch takes its sequence numbers before
// any later write can. It returns an error wrapping ErrConflict when a key
// (or range) of the transaction's conflict set was written by a commit
// after its snapshot: nothing is then written. A transaction without
// writes validates too. Either way the transaction is finished.
func (t *Transaction) Commit() error {
	if t.done {
		return t.check()
	}
	defer t.finish()
	if err := t.d.checkOpen(); err != nil {
		return err
	}
	b := t.b
	if b.err != nil {
		return b.err
	}
	if b.Count() == 0 {
		return t.d.exclusive(t.validate)
	}
	return t.d.writeValidated(b, t.validate, t.opts.Sync)
}

// writeValidated is DB.Write for a transaction's batch: validate runs in
// the pipeline's critical section before the batch takes its sequence
// numbers; sync is WriteOptions.Sync. Kept apart from Write so that plain writes pay nothing for it.
func (d *DB) writeValidated(b *Batch, validate func() error, sync bool) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if d.opts.ReadOnly {
		return errors.Wrap(ErrReadOnly, "strata: write to a read-only database")
	}
	fams := make([]*ColumnFamily, 0, len(b.fams)+1)
	if b.usesDefault {
		fams = append(fams, d.def)
	}
	for _, f := range b.fams {
		if err := f.cf.check(d); err != nil {
			return err
		}
		fams = append(fams, f.cf)
	}
	for _, f := range fams {
		if err := errTTLFamily(f); err != nil {
			return err
		}
	}
	var cf *ColumnFamily
	if len(fams) == 1 {
		cf, fams = fams[0], nil
	}
	if need := arenaNeed(&b.b); int64(need) > maxBatchArena {
		return errors.Wrapf(ErrInvalidArgument, "strata: transaction batch of %d bytes and %d records needs %d memtable bytes, above the limit of %d",
			b.b.Len(), b.b.Count(), need, maxBatchArena)
	}
	w := writerPool.Get().(*writer)
	*w = writer{b: &b.b, cf: cf, fams: fams, validate: validate, sync: sync}
	err := d.commitWrite(w)
	writerPool.Put(w)
	return err
}

// validate reports ErrConflict when a key or range of the conflict set was
// written after the snapshot. It runs with the commit pipeline drained
// under its lock: the families' read views then hold every write that took
// a sequence number. Its cost is a point lookup per key and a scan per
// range, in the memtables and the tables holding sequence numbers at or
// above the snapshot's (others are skipped on their metadata): proportional
// to the conflict set and to what was written since, not to the database.
func (t *Transaction) validate() error {
	s := t.snap.seq
	check := func(k txnKey) error {
		if err := k.cf.check(t.d); err != nil {
			return err
		}
		w, err := t.d.writtenSince(k.cf, []byte(k.key), s)
		if err != nil {
			return err
		}
		if w {
			return errors.Wrapf(ErrConflict, "strata: key %q of column family %q was written after the transaction's snapshot", k.key, k.cf.name)
		}
		return nil
	}
	for _, k := range t.writes {
		if err := check(k); err != nil {
			return err
		}
	}
	for k := range t.reads {
		if _, ok := t.writeSet[k]; ok {
			continue
		}
		if err := check(k); err != nil {
			return err
		}
	}
	for _, r := range t.ranges {
		if !r.used() {
			continue
		}
		if err := r.cf.check(t.d); err != nil {
			return err
		}
		w, err := t.d.writtenInRangeSince(r, s)
		if err != nil {
			return err
		}
		if w {
			return errors.Wrapf(ErrConflict, "strata: a key in the range %s of column family %q an iterator read was written after the transaction's snapshot", r, r.cf.name)
		}
	}
	return nil
}

// writtenSince reports whether a write with a sequence number >= s (a put,
// deletion, merge operand, or a range tombstone covering key) of key is in
// cf's current read view.
func (d *DB) writtenSince(cf *ColumnFamily, key []byte, s base.SeqNum) (bool, error) {
	rs := cf.loadReadState()
	defer rs.unref()
	for _, m := range rs.mems {
		if _, largest := m.SeqNumRange(); largest < s {
			continue // empty, or nothing since the snapshot
		}
		if _, _, seq, ok := m.Get(key, base.MaxSeqNum); ok && seq >= s {
			return true, nil
		}
		if m.HasTombstones() && rangedel.MaxCoveringIn(cf.cmp, m.Tombstones(base.MaxSeqNum), key, base.MaxSeqNum) >= s {
			return true, nil
		}
	}
	h := cf.extractor.Load()
	for _, files := range rs.version.Levels {
		for _, f := range files {
			if f.LargestSeq < s || !containsUserKey(cf.cmp, f, key) {
				continue
			}
			w, err := d.tableWrittenSince(f, key, s, h, rs.cf)
			if err != nil || w {
				return w, err
			}
		}
	}
	return false, nil
}

// tableWrittenSince is writtenSince for one table.
func (d *DB) tableWrittenSince(f *version.FileMetadata, key []byte, s base.SeqNum, h *extractorHandle, cf *ColumnFamily) (bool, error) {
	e, err := d.tables.acquire(f)
	if err != nil {
		return false, err
	}
	defer d.tables.release(e)
	tr := e.reader
	if tombs := tr.Tombstones(); len(tombs) > 0 && rangedel.MaxCoveringIn(cf.cmp, tombs, key, base.MaxSeqNum) >= s {
		return true, nil
	}
	if tr.HasFilter() {
		r := getResult{cf: cf}
		may, err := d.tableMayContain(e, key, h, &r)
		if err != nil {
			return false, err
		}
		if !may {
			return false, nil
		}
	}
	_, _, seq, found, err := tr.Get(key, base.MaxSeqNum)
	if err != nil {
		return false, err
	}
	return found && seq >= s, nil
}

// writtenInRangeSince reports whether a write with a sequence number >= s
// lies in r (a point entry in it, or a range tombstone overlapping it) in
// r's family's current read view. Memtables and tables with nothing at or
// above s are skipped; the others are scanned over r only.
func (d *DB) writtenInRangeSince(tr *readRange, s base.SeqNum) (bool, error) {
	rs := tr.cf.loadReadState()
	defer rs.unref()
	lo, loInf, hi, hiInf, hiIncl := tr.bounds()
	r := &keyRange{lo: lo, hi: hi, loInf: loInf, hiInf: hiInf, hiIncl: hiIncl, cmp: tr.cf.cmp}
	inRange := func(k []byte) bool { return r.hiInf || r.below(k) }
	for _, m := range rs.mems {
		if _, largest := m.SeqNumRange(); largest < s {
			continue
		}
		it := m.NewIter()
		ok := r.loInf && it.First() || !r.loInf && it.SeekGE(r.lo)
		for ; ok && inRange(it.Key().UserKey); ok = it.Next() {
			if it.Key().SeqNum() >= s {
				return true, nil
			}
		}
		if m.HasTombstones() && r.tombstoneSince(m.Tombstones(base.MaxSeqNum), s) {
			return true, nil
		}
	}
	for _, files := range rs.version.Levels {
		for _, f := range files {
			if f.LargestSeq < s || !r.overlaps(f.Smallest.UserKey, f.Largest.UserKey, true) {
				continue
			}
			if w, err := d.tableRangeWrittenSince(f, r, s, inRange); err != nil || w {
				return w, err
			}
		}
	}
	return false, nil
}

func (d *DB) tableRangeWrittenSince(f *version.FileMetadata, r *keyRange, s base.SeqNum, inRange func([]byte) bool) (bool, error) {
	e, err := d.tables.acquire(f)
	if err != nil {
		return false, err
	}
	defer d.tables.release(e)
	if r.tombstoneSince(e.reader.Tombstones(), s) {
		return true, nil
	}
	it := e.reader.NewIter()
	defer it.Close()
	ok := r.loInf && it.First() || !r.loInf && it.SeekGE(r.lo)
	for ; ok && inRange(it.Key().UserKey); ok = it.Next() {
		if it.Key().SeqNum() >= s {
			return true, nil
		}
	}
	if err := it.Error(); err != nil {
		return false, errors.Wrapf(err, "strata: validating a transaction's range in table %06d", f.FileNum)
	}
	return false, nil
}

// overlaps reports whether [start, end) (end inclusive with endIncl)
// meets r.
func (r *keyRange) overlaps(start, end []byte, endIncl bool) bool {
	if !r.hiInf && !r.below(start) {
		return false
	}
	if r.loInf {
		return true
	}
	c := r.cmp.CompareUser(end, r.lo)
	return c > 0 || c == 0 && endIncl
}

// tombstoneSince reports whether one of tombs, of sequence number >= s,
// overlaps r.
func (r *keyRange) tombstoneSince(tombs []base.Tombstone, s base.SeqNum) bool {
	for _, t := range tombs {
		if t.Seq >= s && r.overlaps(t.Start, t.End, false) {
			return true
		}
	}
	return false
}

// keyRange is a range [lo, hi) to validate; loInf (hiInf) for no lower
// (upper) end.
type keyRange struct {
	lo, hi       []byte
	loInf, hiInf bool
	hiIncl       bool // hi is in the range
	cmp          *base.Comparer
}

// below reports whether k is below r's upper end (hi not infinite).
func (r *keyRange) below(k []byte) bool {
	c := r.cmp.CompareUser(k, r.hi)
	return c < 0 || c == 0 && r.hiIncl
}

func (r *readRange) String() string {
	lo, loInf, hi, hiInf, hiIncl := r.bounds()
	l, h := fmt.Sprintf("%q", lo), fmt.Sprintf("%q", hi)
	if loInf {
		l = "start"
	}
	if hiInf {
		h = "end"
	}
	if hiIncl && !hiInf {
		return "[" + l + ", " + h + "]"
	}
	return "[" + l + ", " + h + ")"
}
