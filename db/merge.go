package db

import (
	"bytes"
	"encoding/binary"
	"strings"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/batch"
	"github.com/stratadb/strata/internal/optionsfile"
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

// Names of the built-in operators, RocksDB's.
const (
	UInt64AddOperatorName        = "UInt64AddOperator"
	StringAppendOperatorName     = "StringAppendOperator"
	StringAppendTESTOperatorName = "StringAppendTESTOperator"
	MaxOperatorName              = "MaxOperator"
	PutOperatorName              = "PutOperator"
)

// NewUInt64AddOperator returns RocksDB's "uint64add" operator: values and
// operands are 8-byte little-endian unsigned integers, added with
// wrap-around. A value of another length counts as 0, as in RocksDB.
func NewUInt64AddOperator() MergeOperator { return uint64Add{} }

type uint64Add struct{}

func (uint64Add) Name() string { return UInt64AddOperatorName }

// decodeUint64 reads an 8-byte little-endian value; another length counts
// as 0, as in RocksDB.
func decodeUint64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

func (uint64Add) FullMerge(_, existing []byte, operands [][]byte) ([]byte, error) {
	sum := decodeUint64(existing)
	for _, op := range operands {
		sum += decodeUint64(op)
	}
	return binary.LittleEndian.AppendUint64(make([]byte, 0, 8), sum), nil
}

func (u uint64Add) PartialMerge(key []byte, operands [][]byte) ([]byte, bool) {
	v, _ := u.FullMerge(key, nil, operands)
	return v, true
}

// NewStringAppendOperator returns RocksDB's "stringappend" operator: each
// operand is appended to the value, after delim when the value exists.
// RocksDB's default delimiter is ",".
func NewStringAppendOperator(delim string) MergeOperator {
	return &stringAppend{name: StringAppendOperatorName, delim: delim}
}

// NewStringAppendTESTOperator returns RocksDB's "stringappendtest"
// operator (StringAppendTESTOperator): the same values as
// NewStringAppendOperator under another name.
func NewStringAppendTESTOperator(delim string) MergeOperator {
	return &stringAppend{name: StringAppendTESTOperatorName, delim: delim}
}

type stringAppend struct {
	name, delim string
}

func (s *stringAppend) Name() string { return s.name }

func (s *stringAppend) FullMerge(_, existing []byte, operands [][]byte) ([]byte, error) {
	n := len(existing)
	for _, op := range operands {
		n += len(s.delim) + len(op)
	}
	v := make([]byte, 0, n)
	first := existing == nil
	v = append(v, existing...)
	for _, op := range operands {
		if !first {
			v = append(v, s.delim...)
		}
		first = false
		v = append(v, op...)
	}
	return v, nil
}

func (s *stringAppend) PartialMerge(_ []byte, operands [][]byte) ([]byte, bool) {
	v, _ := s.FullMerge(nil, nil, operands)
	return v, true
}

// NewMaxOperator returns RocksDB's "max" operator: the bytewise largest of
// the value and the operands.
func NewMaxOperator() MergeOperator {
	return &AssociativeMergeOperator{OperatorName: MaxOperatorName, Merge: func(_, existing, op []byte) []byte {
		if existing != nil && bytes.Compare(existing, op) >= 0 {
			return existing
		}
		return append([]byte{}, op...)
	}}
}

// NewPutOperator returns RocksDB's "put" operator: the newest operand
// replaces the value.
func NewPutOperator() MergeOperator {
	return &AssociativeMergeOperator{OperatorName: PutOperatorName, Merge: func(_, _, op []byte) []byte {
		return append([]byte{}, op...)
	}}
}

// MergeOperatorByName returns the built-in operator RocksDB's db_bench and
// ldb select with name: "uint64add", "stringappend", "stringappendtest",
// "max" or "put"; or with an OPTIONS file's merge_operator value
// ("UInt64AddOperator", "{id=StringAppendOperator;delimiter=,;}", ...). It
// returns nil for "", "nullptr" and names it does not know.
func MergeOperatorByName(name string) MergeOperator {
	id, delim := mergeOperatorID(name)
	switch id {
	case "uint64add", UInt64AddOperatorName:
		return NewUInt64AddOperator()
	case "stringappend", StringAppendOperatorName:
		return NewStringAppendOperator(delim)
	case "stringappendtest", StringAppendTESTOperatorName:
		return NewStringAppendTESTOperator(delim)
	case "max", MaxOperatorName:
		return NewMaxOperator()
	case "put", "put_v1", PutOperatorName, "PutOperatorV2":
		return NewPutOperator()
	}
	return nil
}

// mergeOperatorID returns the operator name of an OPTIONS file's
// merge_operator value ("" for nullptr) and its delimiter option (","
// when absent).
func mergeOperatorID(v string) (id, delim string) {
	delim = ","
	if strings.HasPrefix(v, "{") {
		m := optionsfile.ParseNested(v)
		id = m["id"]
		if d, ok := m["delimiter"]; ok {
			delim = unescapeOptionValue(d)
		}
	} else {
		id = v
	}
	if id == "nullptr" {
		id = ""
	}
	return id, delim
}

// unescapeOptionValue undoes RocksDB's escaping of option values (a
// backslash before a special character).
func unescapeOptionValue(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// optionsMergeOperatorValue is the merge_operator value of the OPTIONS file
// for op, in RocksDB's syntax.
func optionsMergeOperatorValue(op MergeOperator) string {
	if op == nil {
		return "nullptr"
	}
	if s, ok := op.(*stringAppend); ok {
		d := s.delim
		if strings.ContainsAny(d, `:;{}=\#`) {
			var b strings.Builder
			for i := 0; i < len(d); i++ {
				if strings.IndexByte(`:;{}=\#`, d[i]) >= 0 {
					b.WriteByte('\\')
				}
				b.WriteByte(d[i])
			}
			d = b.String()
		}
		return "{id=" + s.name + ";delimiter=" + d + ";}"
	}
	return op.Name()
}

// errNoMergeOperator is the error of reading a merge operand of key with
// no operator configured; it names the operator the OPTIONS file asked for.
func (d *DB) errNoMergeOperator(key []byte) error {
	if d.fileMergeOperator != "" {
		return errors.Wrapf(ErrInvalidArgument,
			"strata: key %q has merge operands, which need merge operator %s (named by the OPTIONS file): set Options.MergeOperator", key, d.fileMergeOperator)
	}
	if name, file := d.tableMergeOperator(); name != "" {
		return errors.Wrapf(ErrInvalidArgument,
			"strata: key %q has merge operands, which need merge operator %s (named by table %s): set Options.MergeOperator", key, name, file)
	}
	return errors.Wrapf(ErrInvalidArgument,
		"strata: key %q has merge operands, which need a merge operator: set Options.MergeOperator", key)
}

// tableMergeOperator returns the merge operator named by a table of the
// current version (rocksdb.merge.operator), and the table, for the error
// of reading operands with no operator and no OPTIONS file naming one.
func (d *DB) tableMergeOperator() (name, file string) {
	rs := d.loadReadState()
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
func (d *DB) fullMerge(key, existing []byte, operands [][]byte) ([]byte, error) {
	op := d.opts.MergeOperator
	if op == nil {
		return nil, d.errNoMergeOperator(key)
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

// Merge adds operand to the merge operands of key; reads combine them with
// Options.MergeOperator. Without an operator it returns ErrInvalidArgument.
func (d *DB) Merge(key, operand []byte, wo *WriteOptions) error {
	if d.opts.MergeOperator == nil {
		return errMergeWithoutOperator
	}
	if err := checkBatchGrowth(0, 0, len(key), len(operand), true); err != nil {
		return err
	}
	b := batchPool.Get().(*batch.Batch)
	b.Reset()
	b.Merge(key, operand)
	err := d.write(b, wo)
	batchPool.Put(b)
	return err
}

// SingleDelete removes key, which must have been Put exactly once since it
// was last deleted, with RocksDB's semantics: the single deletion removes
// the one Put it meets, and compaction drops both. Mixing SingleDelete with
// Delete, DeleteRange or Merge of the same key, or Putting the key more
// than once before the SingleDelete, gives undefined results (an older value
// may reappear). Use Delete when unsure.
func (d *DB) SingleDelete(key []byte, wo *WriteOptions) error {
	if err := checkBatchGrowth(0, 0, len(key), 0, false); err != nil {
		return err
	}
	b := batchPool.Get().(*batch.Batch)
	b.Reset()
	b.SingleDelete(key)
	err := d.write(b, wo)
	batchPool.Put(b)
	return err
}

// Merge adds a merge operand for key (see DB.Merge).
func (b *Batch) Merge(key, operand []byte) {
	if b.refuse(len(key), len(operand), true) {
		return
	}
	b.b.Merge(key, operand)
	b.hasMerge = true
}

// SingleDelete adds a single deletion of key (see DB.SingleDelete).
func (b *Batch) SingleDelete(key []byte) {
	if b.refuse(len(key), 0, false) {
		return
	}
	b.b.SingleDelete(key)
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
	if d.opts.MergeOperator == nil {
		return nil, d.errNoMergeOperator(key)
	}
	rs.refs.Add(1) // taken over by the iterator state
	it := mergeGetIters.Get().(*Iterator)
	*it = Iterator{d: d, snap: snap, lower: key,
		upper:      append(append(it.upper[:0], key...), 0),
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
	it.Seek(key)
	var v []byte
	if it.Valid() {
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
		break
	}
	if hasBase {
		existing = nonNil(existing)
	} else {
		existing = nil
	}
	v, err := it.d.fullMerge(it.savedKey, existing, it.mbuf.operands(true))
	if err != nil {
		it.err, it.valid = err, false
		return
	}
	it.savedValue = append(it.savedValue[:0], v...)
	it.merged, it.valid = true, true
}

// mergeOperatorReport is the OPTIONS file report line for a file's
// merge_operator value v when it differs from the configured op ("" when
// they agree).
func mergeOperatorReport(title, v string, op MergeOperator) string {
	id, _ := mergeOperatorID(v)
	switch {
	case op == nil && id == "":
		return ""
	case op == nil:
		return title + " merge_operator=" + v + ": no Options.MergeOperator: reading a key with merge operands fails"
	case optionsMergeOperatorValue(op) == v || (id == op.Name() && !strings.HasPrefix(v, "{")):
		return ""
	}
	return title + " merge_operator=" + v + ": Strata uses " + optionsMergeOperatorValue(op)
}
