package db

import (
	"bytes"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/iterator"
	"github.com/stratadb/strata/internal/memtable"
)

// flushMergeIter combines merge operands while a memtable is flushed, as
// RocksDB's flush does, under the compaction rules of
// compaction_merge.go that need nothing below the memtable: in one
// snapshot stripe, operands ending on a value or a deletion of the same
// stripe become one value (what else the stripe holds under them is
// dropped), and other runs of two or more operands are combined by
// PartialMerge when the operator allows. It is used only for memtables
// without range deletions, and walks forward only (First, Next).
type flushMergeIter struct {
	iterator.Iterator // the memtable's
	d                 *DB
	cf                *ColumnFamily
	op                MergeOperator
	snaps             []base.SeqNum

	ok      bool // the memtable iterator rests on an entry
	advance bool // that entry was yielded: step past it first
	err     error

	// out holds entries made here, yielded before reading further.
	out    []flushEntry
	outPos int
	cur    flushEntry // the entry yielded, when made here
	made   bool       // Key and Value come from cur

	skipKey    []byte // entries of skipKey in skipStripe are dropped
	skipStripe int
	skipping   bool

	ops  mergeBuf
	seqs []base.SeqNum
}

// flushIter returns the iterator a flush of m writes, planned with the
// snapshots snaps: with a merge operator and no range deletion in m,
// operands are combined; with filter and a CompactionFilter that opts in
// (FilterOnFlush), values are filtered.
func (cf *ColumnFamily) flushIter(m *memtable.MemTable, snaps []base.SeqNum, filter bool) iterator.Iterator {
	d := cf.d
	it := m.NewIter()
	op := cf.mergeOperator()
	var out iterator.Iterator = it
	if op != nil && !m.HasTombstones() {
		out = &flushMergeIter{Iterator: it, d: d, cf: cf, op: op, snaps: snaps}
	}
	if f := cf.newEntryFilter(0, true); filter && f != nil {
		out = &flushFilterIter{Iterator: out, f: f, last: len(snaps), snaps: snaps, cmp: cf.cmp}
	}
	return out
}

type flushEntry struct {
	key   base.InternalKey
	value []byte
}

func (f *flushMergeIter) First() bool {
	f.out, f.outPos, f.skipping, f.advance = f.out[:0], 0, false, false
	f.ok = f.Iterator.First()
	return f.step()
}

func (f *flushMergeIter) Next() bool { return f.step() }

func (f *flushMergeIter) Key() base.InternalKey {
	if f.made {
		return f.cur.key
	}
	return f.Iterator.Key()
}

func (f *flushMergeIter) Value() []byte {
	if f.made {
		return f.cur.value
	}
	return f.Iterator.Value()
}

func (f *flushMergeIter) Error() error {
	if f.err != nil {
		return f.err
	}
	return f.Iterator.Error()
}

func (f *flushMergeIter) Close() error {
	err := f.Iterator.Close()
	if f.err != nil {
		return f.err
	}
	return err
}

// step yields the next entry: a made one, or the memtable's own (not
// copied: the memtable iterator stays on it until the next step).
func (f *flushMergeIter) step() bool {
	if f.outPos < len(f.out) {
		f.cur, f.made = f.out[f.outPos], true
		f.outPos++
		return true
	}
	f.out, f.outPos, f.made = f.out[:0], 0, false
	if f.err != nil {
		return false
	}
	if f.advance {
		f.advance = false
		f.ok = f.Iterator.Next()
	}
	for f.ok {
		k := f.Iterator.Key()
		stripe := stripeOf(k.SeqNum(), f.snaps)
		if f.skipping && stripe == f.skipStripe && bytes.Equal(k.UserKey, f.skipKey) {
			f.ok = f.Iterator.Next()
			continue
		}
		f.skipping = false
		if k.Kind() != base.KindMerge {
			f.advance = true
			return true
		}
		if err := f.mergeRun(k, stripe); err != nil {
			f.err = err
			return false
		}
		return f.step()
	}
	return false
}

// mergeRun reads the operands of k's key in stripe from the memtable
// iterator's position and queues what replaces them.
func (f *flushMergeIter) mergeRun(k base.InternalKey, stripe int) error {
	ukey := append([]byte(nil), k.UserKey...)
	f.ops.reset()
	f.seqs = f.seqs[:0]
	for {
		f.ops.add(f.Iterator.Value())
		f.seqs = append(f.seqs, f.Iterator.Key().SeqNum())
		f.ok = f.Iterator.Next()
		if !f.ok {
			break
		}
		nk := f.Iterator.Key()
		if !bytes.Equal(nk.UserKey, ukey) || stripeOf(nk.SeqNum(), f.snaps) != stripe || nk.Kind() != base.KindMerge {
			break
		}
	}
	newest := f.seqs[0]
	if f.ok {
		nk := f.Iterator.Key()
		if bytes.Equal(nk.UserKey, ukey) && stripeOf(nk.SeqNum(), f.snaps) == stripe {
			var existing []byte
			switch nk.Kind() {
			case base.KindSet:
				existing = append([]byte{}, f.Iterator.Value()...)
			case base.KindDelete, base.KindSingleDelete:
			default:
				return f.queueOperands(ukey)
			}
			v, err := f.cf.fullMerge(ukey, existing, f.ops.operands(true))
			if err != nil {
				return err
			}
			f.out = append(f.out, flushEntry{key: base.MakeInternalKey(ukey, newest, base.KindSet), value: v})
			f.skipKey, f.skipStripe, f.skipping = ukey, stripe, true
			return nil
		}
	}
	return f.queueOperands(ukey)
}

// queueOperands queues the collected operands, combined when the operator
// allows.
func (f *flushMergeIter) queueOperands(ukey []byte) error {
	if f.ops.len() > 1 {
		if v, ok := f.op.PartialMerge(ukey, f.ops.operands(true)); ok {
			f.out = append(f.out, flushEntry{key: base.MakeInternalKey(ukey, f.seqs[0], base.KindMerge), value: v})
			return nil
		}
	}
	for i, op := range f.ops.operands(false) {
		f.out = append(f.out, flushEntry{key: base.MakeInternalKey(ukey, f.seqs[i], base.KindMerge), value: append([]byte(nil), op...)})
	}
	return nil
}

// flushFilterIter applies a family's CompactionFilter in a flush, for a
// filter that opts in (FilterOnFlush): the newest entry of each key, when
// it is a value that no snapshot sees (the last stripe), is passed to the
// filter. A removed value becomes a deletion at its sequence number;
// FilterRemoveAndSkipUntil drops the entries of the last stripe up to its
// bound. Merge operands are not filtered in flushes.
type flushFilterIter struct {
	iterator.Iterator
	cmp   *base.Comparer
	f     *entryFilter
	snaps []base.SeqNum
	last  int // the stripe no snapshot sees

	cur     []byte // the user key of the entry yielded
	started bool
	// altered: a decision other than FilterKeep was applied.
	altered bool
	skip    []byte // FilterRemoveAndSkipUntil's bound; nil: none
	// made: the entry yielded is key/value, not the inner iterator's.
	made  bool
	key   base.InternalKey
	value []byte
}

func (f *flushFilterIter) First() bool {
	f.started, f.skip = false, nil
	return f.settle(f.Iterator.First())
}

func (f *flushFilterIter) Next() bool { return f.settle(f.Iterator.Next()) }

func (f *flushFilterIter) Key() base.InternalKey {
	if f.made {
		return f.key
	}
	return f.Iterator.Key()
}

func (f *flushFilterIter) Value() []byte {
	if f.made {
		return f.value
	}
	return f.Iterator.Value()
}

// settle decides for the entry the inner iterator rests on, stepping past
// those that are dropped.
func (f *flushFilterIter) settle(ok bool) bool {
	f.made = false
	for ; ok; ok = f.Iterator.Next() {
		k := f.Iterator.Key()
		newKey := !f.started || !bytes.Equal(k.UserKey, f.cur)
		if newKey {
			f.cur = append(f.cur[:0], k.UserKey...)
			f.started = true
		}
		stripe := stripeOf(k.SeqNum(), f.snaps)
		if f.skip != nil {
			if f.cmp.CompareUser(k.UserKey, f.skip) < 0 {
				if stripe == f.last {
					continue
				}
			} else {
				f.skip = nil
			}
		}
		if !newKey || stripe != f.last || k.Kind() != base.KindSet {
			return true
		}
		d, nv := f.f.filter(k.UserKey, f.Iterator.Value())
		if d != FilterKeep {
			f.altered = true
		}
		switch d {
		case FilterRemove:
			f.made, f.key, f.value = true, base.MakeInternalKey(f.cur, k.SeqNum(), base.KindDelete), nil
		case FilterChangeValue:
			f.made, f.key = true, base.MakeInternalKey(f.cur, k.SeqNum(), base.KindSet)
			f.value = append(f.value[:0], nv...)
		case FilterRemoveAndSkipUntil:
			if f.skip = skipUntil(f.cmp, k.UserKey, nv); f.skip != nil {
				continue
			}
		}
		return true
	}
	return false
}
