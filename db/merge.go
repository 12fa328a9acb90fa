package db

import (
	"bytes"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/batch"
)

// MergeOperator combines the merge operands written with DB.Merge into a
// value, as RocksDB's MergeOperator. Set it in Options.MergeOperator; a
// database must be opened with the operator it was written with (the OPTIONS
// file and every table record its Name).
//
// The engine calls the methods from any goroutine, possibly concurrently, and
// the slices it passes are valid only during the call: an implementation
// must not keep or modify them. The result must be a new slice.
type MergeOperator interface {
	// Name identifies the operator in the OPTIONS file and in table
	// properties. Use RocksDB's name for an operator with RocksDB's
	// semantics so that either engine can open the other's databases.
	Name() string
	// FullMerge applies operands, oldest first, to existing: the value
	// below them, or nil when there is none (the key was absent or
	// deleted). An error fails the read (or the compaction) that asked.
	FullMerge(key, existing []byte, operands [][]byte) ([]byte, error)
	// PartialMerge combines operands, oldest first, into one operand
	// without knowing the value below them. ok false means they cannot be
	// combined: compaction then keeps them all. There are always at least
	// two operands.
	PartialMerge(key []byte, operands [][]byte) (merged []byte, ok bool)
}

// AssociativeMergeOperator adapts an associative function to
// MergeOperator, as RocksDB's AssociativeMergeOperator: Merge folds one
// operand into the value so far (nil when there is none), and partial merges
// use the same function.
type AssociativeMergeOperator struct {
	OperatorName string
	Merge        func(key, existing, operand []byte) []byte
}

// Name returns OperatorName.
func (a *AssociativeMergeOperator) Name() string { return a.OperatorName }

// FullMerge folds the operands into existing, left to right.
func (a *AssociativeMergeOperator) FullMerge(key, existing []byte, operands [][]byte) ([]byte, error) {
	v := existing
	for _, op := range operands {
		v = a.Merge(key, v, op)
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// PartialMerge folds the operands into one, left to right.
func (a *AssociativeMergeOperator) PartialMerge(key []byte, operands [][]byte) ([]byte, bool) {
	var v []byte
	for i, op := range operands {
		if i == 0 {
			v = append([]byte{}, op...)
			continue
		}
		v = a.Merge(key, v, op)
	}
	return v, true
}

// errNoMergeOperator is the error of reading a merge operand of key with
// no operator configured; it names the operator the OPTIONS file asked for.
func (cf *ColumnFamily) errNoMergeOperator(key []byte) error {
	d := cf.d
	if d.fileMergeOperator != "" && cf.id == 0 {
		return errors.Wrapf(ErrInvalidArgument,
			"strata: key %q has merge operands, which need merge operator %s (named by the OPTIONS file): set Options.MergeOperator", key, d.fileMergeOperator)
	}
	if name, file := cf.tableMergeOperator(); name != "" {
		return errors.Wrapf(ErrInvalidArgument,
			"strata: key %q has merge operands, which need merge operator %s (named by table %s): set Options.MergeOperator", key, name, file)
	}
	return errors.Wrapf(ErrInvalidArgument,
		"strata: key %q has merge operands, which need a merge operator: set Options.MergeOperator", key)
}

// tableMergeOperator returns the merge operator named by a table of the
// current version (rocksdb.merge.operator), and the table, for the error
// of reading operands with no operator and no OPTIONS file naming one.
func (cf *ColumnFamily) tableMergeOperator() (name, file string) {
	d := cf.d
	rs := cf.loadReadState()
	defer rs.unref()
	for _, files := range rs.version.Levels {
		for _, f := range files {
			e, err := d.tables.acquire(f)
			if err != nil {
				continue
			}
			var n string
			if p := e.reader.Properties(); p != nil {
				n = p.MergeOperatorName
			}
			d.tables.release(e)
			if n != "" && n != "nullptr" {
				return n, base.MakeFilename(base.FileKindTable, f.FileNum)
			}
		}
	}
	return "", ""
}

// fullMerge runs the configured operator's FullMerge, wrapping its error.
func (cf *ColumnFamily) fullMerge(key, existing []byte, operands [][]byte) ([]byte, error) {
	op := cf.mergeOperator()
	if op == nil {
		return nil, cf.errNoMergeOperator(key)
	}
	v, err := op.FullMerge(key, existing, operands)
	if err != nil {
		return nil, errors.Wrapf(err, "strata: merge operator %s failed on key %q", op.Name(), key)
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// errMergeWithoutOperator is the error of writing a merge operand to a
// database opened without a merge operator.
var errMergeWithoutOperator = errors.Wrap(ErrInvalidArgument, "strata: Merge needs Options.MergeOperator")

// Merge adds operand to the merge operands of key in the default family;
// reads combine them with Options.MergeOperator. Without an operator it
// returns ErrInvalidArgument.
func (d *DB) Merge(key, operand []byte, wo *WriteOptions) error { return d.def.Merge(key, operand, wo) }

// Merge adds operand to the merge operands of key in the family; reads
// combine them with the family's MergeOperator. Without one it returns
// ErrInvalidArgument.
func (cf *ColumnFamily) Merge(key, operand []byte, wo *WriteOptions) error {
	if cf != nil && cf.opts.MergeOperator == nil {
		if err := cf.check(cf.d); err != nil {
			return err
		}
		return errMergeWithoutOperator
	}
	if err := checkBatchGrowth(0, 0, len(key), len(operand), true); err != nil {
		return err
	}
	if cf != nil && cf.opts.TTL > 0 {
		operand = appendTTL(operand, cf.d.nowUnix())
	}
	b := batchPool.Get().(*batch.Batch)
	b.Reset()
	b.MergeCF(cf.id, key, operand)
	err := cf.write(b, wo)
	batchPool.Put(b)
	return err
}

// SingleDelete removes key from the default family, which must have been
// Put exactly once since it was last deleted, with RocksDB's semantics: the
// single deletion removes the one Put it meets, and compaction drops both.
// Mixing SingleDelete with Delete, DeleteRange or Merge of the same key, or
// Putting the key more than once before the SingleDelete, gives undefined
// results (an older value may reappear). Use Delete when unsure.
func (d *DB) SingleDelete(key []byte, wo *WriteOptions) error { return d.def.SingleDelete(key, wo) }

// SingleDelete removes key from the family (see DB.SingleDelete).
func (cf *ColumnFamily) SingleDelete(key []byte, wo *WriteOptions) error {
	if err := checkBatchGrowth(0, 0, len(key), 0, false); err != nil {
		return err
	}
	b := batchPool.Get().(*batch.Batch)
	b.Reset()
	b.SingleDeleteCF(cf.id, key)
	err := cf.write(b, wo)
	batchPool.Put(b)
	return err
}

// Merge adds a merge operand for key (see DB.Merge).
func (b *Batch) Merge(key, operand []byte) {
	if b.refuse(len(key), len(operand), true) {
		return
	}
	b.b.Merge(key, operand)
	b.hasMerge, b.usesDefault = true, true
	if b.index != nil {
		b.indexLast(0, base.KindMerge, key, operand)
	}
}

// SingleDelete adds a single deletion of key (see DB.SingleDelete).
func (b *Batch) SingleDelete(key []byte) {
	if b.refuse(len(key), 0, false) {
		return
	}
	b.b.SingleDelete(key)
	b.usesDefault = true
	if b.index != nil {
		b.indexLast(0, base.KindSingleDelete, key, nil)
	}
}

// mergeBuf holds merge operands copied out of engine memory: one byte
// buffer and the bounds of each operand, so that collecting them allocates
// only when the buffers grow.
type mergeBuf struct {
	data []byte
	ends []int
	ops  [][]byte
}

// nonNil returns b, or an empty slice for nil: an empty value is a value
// (FullMerge's existing is nil only when there is none).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func (m *mergeBuf) reset() { m.data, m.ends = m.data[:0], m.ends[:0] }

func (m *mergeBuf) add(v []byte) {
	m.data = append(m.data, v...)
	m.ends = append(m.ends, len(m.data))
}

func (m *mergeBuf) len() int { return len(m.ends) }

// operands returns the operands, in the order added or reversed.
func (m *mergeBuf) operands(reverse bool) [][]byte {
	m.ops = m.ops[:0]
	start := 0
	for _, e := range m.ends {
		m.ops = append(m.ops, m.data[start:e:e])
		start = e
	}
	if reverse {
		for i, j := 0, len(m.ops)-1; i < j; i, j = i+1, j-1 {
			m.ops[i], m.ops[j] = m.ops[j], m.ops[i]
		}
	}
	return m.ops
}

// mergeGetIters recycles the iterators (and their buffers) getMerged
// uses; none is reachable once getMerged returns.
var mergeGetIters = sync.Pool{New: func() any { return new(Iterator) }}

// getMerged answers Get for a key whose newest visible version is a merge
// operand: an iterator over the same view resolves it.
func (d *DB) getMerged(rs *readState, key []byte, snap base.SeqNum) ([]byte, error) {
	if rs.cf.opts.MergeOperator == nil {
		return nil, rs.cf.errNoMergeOperator(key)
	}
	rs.refs.Add(1) // taken over by the iterator state
	it := mergeGetIters.Get().(*Iterator)
	cmp := rs.cf.cmp
	// The bound key+"\x00" is key's successor only in bytewise order;
	// other orders read unbounded and check the key found.
	var upper []byte
	if cmp.Bytewise {
		upper = append(append(it.upper[:0], key...), 0)
	}
	*it = Iterator{d: d, cf: rs.cf, cmp: cmp, snap: snap, lower: key,
		upper:      upper,
		savedKey:   it.savedKey[:0],
		savedValue: it.savedValue[:0],
		seekBuf:    it.seekBuf[:0],
		mbuf:       mergeBuf{data: it.mbuf.data[:0], ends: it.mbuf.ends[:0], ops: it.mbuf.ops[:0]},
	}
	defer mergeGetIters.Put(it)
	st, err := d.acquireIterState(rs, snap)
	if err != nil {
		return nil, err
	}
	st.owner = it
	it.st, it.iter, it.tombs = st, &st.merging, &st.tombs
	it.setIterBounds()
	it.Seek(key)
	var v []byte
	if it.Valid() && (cmp.Bytewise || cmp.Compare(it.Key(), key) == 0) {
		v = append([]byte{}, it.Value()...)
	}
	err = it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, ErrNotFound
	}
	return v, nil
}

// mergeForward resolves the key at the internal iterator's position, whose
// newest visible entry is a live merge operand: it reads the older entries
// down to a value, a deletion or the end of the key, and leaves the result
// in savedKey and savedValue with the internal iterator past what it read.
func (it *Iterator) mergeForward() {
	k := it.iter.Key()
	it.savedKey = append(it.savedKey[:0], k.UserKey...)
	it.mbuf.reset()
	it.mbuf.add(it.iter.Value())
	var existing []byte
	hasBase := false
	for {
		it.iterValid = it.iter.Next()
		if !it.iterValid {
			if err := it.iter.Error(); err != nil {
				it.err, it.valid = err, false
				return
			}
			break
		}
		k = it.iter.Key()
		if !bytes.Equal(k.UserKey, it.savedKey) {
			break
		}
		// Older entries of one key follow the first visible one: all are
		// visible at it.snap.
		if !it.tombs.Empty() && it.tombs.Deleted(k.UserKey, k.SeqNum()) {
			break
		}
		kind := k.Kind()
		if kind == base.KindMerge {
			it.mbuf.add(it.iter.Value())
			continue
		}
		if kind == base.KindSet {
			it.savedValue = append(it.savedValue[:0], it.iter.Value()...)
			existing, hasBase = it.savedValue, true
		}
		if kind == base.KindBlobIndex {
			v, err := it.d.blobs.get(k.UserKey, it.iter.Value())
			if err != nil {
				it.err, it.valid = err, false
				return
			}
			it.savedValue = append(it.savedValue[:0], v...)
			existing, hasBase = it.savedValue, true
		}
		break
	}
	if hasBase {
		existing = nonNil(existing)
	} else {
		existing = nil
	}
	v, err := it.cf.fullMerge(it.savedKey, existing, it.mbuf.operands(true))
	if err != nil {
		it.err, it.valid = err, false
		return
	}
	it.savedValue = append(it.savedValue[:0], v...)
	it.merged, it.valid = true, true
}
