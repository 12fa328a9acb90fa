package db

import (
	"bytes"
	"sync/atomic"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/iterator"
	"github.com/stratadb/strata/internal/rangedel"
)

// compactionMerger is the garbage-collecting walk of a compaction (see the
// rules at the top of compaction_run.go), with merge operands and single
// deletions:
//
//   - the newest entry of a stripe that is a merge operand starts a stack
//     of the stripe's operands. A stack ending on a value, a deletion or a
//     range tombstone of the same stripe becomes one value (FullMerge over
//     what it ended on; what lies under it in the stripe is dropped). A
//     stack reaching the end of the key's entries at the bottommost level
//     has nothing under it and becomes one value too. Otherwise the
//     operands are combined by PartialMerge when the operator allows, or
//     kept. Operands of different stripes are never combined: a snapshot
//     between them must read the older ones alone.
//   - with no merge operator configured, operands are kept with every
//     version under them (what an operator would combine).
//   - a single deletion whose next entry is a value of the same key in the
//     same stripe drops with that value, and the entries under them are
//     read as if the pair had never been written; otherwise it is kept
//     (hiding the rest of its stripe), except at the bottommost level in
//     the oldest stripe, where nothing lies below. A single deletion right
//     under a value of the same stripe is kept (no reader sees it) outside
//     the oldest stripe at the bottommost level: once the value's own
//     single deletion drops with it, this one must still hide what lies
//     below, in older stripes or lower levels. A Delete right under a
//     value of the same stripe is kept for the same reason (Put, snapshot,
//     Delete, Put, SingleDelete is within the contract).
//   - with a CompactionFilter or TTL (filt), the newest value of a key in
//     the last stripe (seen by no snapshot) goes through the filter: a
//     removal becomes a deletion at its sequence number (so nothing older
//     shows again), then follows the deletion rules; a skip drops every
//     last-stripe entry below its bound. Operands of a last-stripe stack go
//     through FilterMergeOperand. Entries a snapshot sees never reach the
//     filter (docs/compaction-filters.md).
type compactionMerger struct {
	d     *DB
	cf    *ColumnFamily
	out   *compactionOutputs
	it    iterator.Iterator
	sets  []rangedel.Set
	snaps []base.SeqNum
	op    MergeOperator
	filt  *entryFilter    // nil: no CompactionFilter and no TTL
	fault compactionFault // faultNone outside tests
	// skip is the bound of a FilterRemoveAndSkipUntil in force: entries of
	// keys below it in the last stripe are dropped; nil: none.
	skip []byte
	// cancel, set when another range of a split compaction failed, stops
	// the walk at the next user key; nil when the compaction is not split.
	cancel *atomic.Bool

	cur     []byte // the current user key
	emitted bool   // an entry of cur was written
	ops     mergeBuf
	seqs    []base.SeqNum // of the operands in ops, newest first
}

func (m *compactionMerger) add(k base.InternalKey, value []byte) error {
	first := !m.emitted
	m.emitted = true
	return m.out.add(k, value, first)
}

// compactionFault is a bug a test plants in compaction
// (DB.testingCompactionFault), to show that the stress harness's compaction
// mode (package stress, RunCompact) catches it: each is a mistake the other
// short stress runs miss, or catch only with a lucky seed. Outside tests it
// is always faultNone; the checks cost one comparison per compaction and one
// per stripe change within an operand stack.
type compactionFault uint32

const (
	faultNone compactionFault = iota
	// faultDropDeletesAboveBottom drops oldest-stripe point deletions in
	// every compaction, as if each were bottommost: the older value a
	// deletion hides in a lower level comes back.
	faultDropDeletesAboveBottom
	// faultMergeAcrossStripes lets an operand stack run on into older
	// stripes: a snapshot between the operands loses the older ones.
	faultMergeAcrossStripes
)

// covered reports whether the entry (uk, seq) of stripe is deleted by a
// range tombstone of the same stripe.
func (m *compactionMerger) covered(uk []byte, seq base.SeqNum, stripe int) bool {
	return m.sets[stripe].MaxCovering(uk) > seq
}

func (m *compactionMerger) run() error {
	it := m.it
	started := false
	lastStripe := -1
	sdUnderSet := false // the previous entry written is a value of m.cur
	bottommost := m.out.c.bottommost
	// dropDeletes: a point deletion of the oldest stripe hides nothing
	// only when no level below the output holds the key.
	dropDeletes := bottommost || m.fault == faultDropDeletesAboveBottom
	ok := it.First()
	for ok {
		k := it.Key()
		uk, seq := k.UserKey, k.SeqNum()
		if !started || !bytes.Equal(uk, m.cur) {
			if m.cancel != nil && m.cancel.Load() {
				return errSubcompactionCancelled
			}
			if m.d.compactAbort.Load() {
				return errCompactionAborted
			}
			m.cur = append(m.cur[:0], uk...)
			started, m.emitted = true, false
			lastStripe = -1
		}
		stripe := stripeOf(seq, m.snaps)
		if m.skip != nil {
			if m.cf.cmp.CompareUser(uk, m.skip) < 0 {
				if stripe == len(m.snaps) {
					// Skipped by the filter: dropped without a deletion,
					// and not read as this stripe's newest (RocksDB seeks
					// past them).
					ok = it.Next()
					continue
				}
			} else {
				m.skip = nil
			}
		}
		keepSD := sdUnderSet
		sdUnderSet = false
		if stripe == lastStripe {
			if keepSD && (k.Kind() == base.KindSingleDelete || k.Kind() == base.KindDelete) && !(bottommost && stripe == 0) {
				// Shadowed, but kept: see the type's comment.
				if err := m.add(k, nil); err != nil {
					return err
				}
			}
			ok = it.Next()
			continue // shadowed by a newer version of the same stripe
		}
		if m.covered(uk, seq, stripe) {
			lastStripe = stripe
			ok = it.Next()
			continue // deleted by a range tombstone of the same stripe
		}
		kind := k.Kind()
		switch {
		case kind == base.KindMerge && m.op == nil:
			// Keep the versions under it: see the type's comment.
			if err := m.add(k, it.Value()); err != nil {
				return err
			}
			ok = it.Next()
			continue
		case kind == base.KindMerge:
			lastStripe = stripe
			var err error
			if ok, err = m.mergeStack(stripe, bottommost); err != nil {
				return err
			}
			continue
		case kind == base.KindSingleDelete:
			lastStripe = stripe
			sdKey := base.MakeInternalKey(m.cur, seq, kind)
			ok = it.Next()
			if ok {
				nk := it.Key()
				// A blob index is a value here, as in RocksDB.
				if (nk.Kind() == base.KindSet || nk.Kind() == base.KindBlobIndex) && bytes.Equal(nk.UserKey, m.cur) &&
					stripeOf(nk.SeqNum(), m.snaps) == stripe && !m.covered(nk.UserKey, nk.SeqNum(), stripe) {
					// The single deletion and its value drop together. What
					// lies under them is read afresh: under the contract
					// (one Put per SingleDelete) it can only be an older
					// single deletion, which must stay in force.
					lastStripe = -1
					ok = it.Next()
					continue
				}
			}
			if bottommost && stripe == 0 {
				continue
			}
			if err := m.add(sdKey, nil); err != nil {
				return err
			}
			continue
		}
		lastStripe = stripe
		value := it.Value()
		if (kind == base.KindSet || kind == base.KindBlobIndex) && m.filt != nil && stripe == len(m.snaps) {
			// The newest version of the key, seen by no snapshot: the only
			// one the filter is asked about. A value in a blob file is
			// read for it unless FilterBlobByKey decides by the key, as
			// RocksDB 7.8 does (kUndetermined, its default, reads it): a
			// filter or TTL that never saw blob values would keep them
			// forever.
			d, nv, decided := FilterKeep, []byte(nil), false
			if kind == base.KindBlobIndex {
				d, nv, decided = m.filt.filterBlobByKey(uk)
			}
			if !decided {
				fv := value
				if kind == base.KindBlobIndex {
					var err error
					if fv, err = m.d.blobs.getNoFill(uk, value); err != nil {
						return err
					}
				}
				d, nv = m.filt.filter(uk, fv)
			}
			if d != FilterKeep {
				m.out.c.filtered.Store(true)
			}
			switch d {
			case FilterRemove:
				kind, value = base.KindDelete, nil
				k = base.MakeInternalKey(m.cur, seq, kind)
			case FilterChangeValue:
				// A new value: written inline, or to a new blob file when
				// it reaches min_blob_size (out.add decides). The old
				// blob's reference, read and not written, is counted as
				// garbage of its file.
				kind, value = base.KindSet, nv
				k = base.MakeInternalKey(m.cur, seq, kind)
			case FilterRemoveAndSkipUntil:
				if m.skip = skipUntil(m.cf.cmp, uk, nv); m.skip != nil {
					ok = it.Next()
					continue
				}
			}
		}
		if kind == base.KindDelete && dropDeletes && stripe == 0 {
			ok = it.Next()
			continue
		}
		if err := m.add(k, value); err != nil {
			return err
		}
		sdUnderSet = kind == base.KindSet || kind == base.KindBlobIndex
		ok = it.Next()
	}
	return it.Error()
}

// mergeStack reads the merge operands of m.cur in stripe from the
// iterator's position (the newest, live) and writes what replaces them. It
// leaves the iterator on the first entry it did not consume and returns
// whether it is positioned.
func (m *compactionMerger) mergeStack(stripe int, bottommost bool) (bool, error) {
	it := m.it
	m.ops.reset()
	m.seqs = m.seqs[:0]
	newest := it.Key().SeqNum()
	// Operands no snapshot sees go through the filter's
	// FilterMergeOperand, when it has one.
	var opFilter *entryFilter
	if stripe == len(m.snaps) {
		opFilter = m.filt
	}
	addOp := func(v []byte, seq base.SeqNum) {
		if opFilter.dropOperand(m.cur, v) {
			m.out.c.filtered.Store(true)
			return
		}
		m.ops.add(v)
		m.seqs = append(m.seqs, seq)
	}
	addOp(it.Value(), newest)
	var existing []byte
	terminated, keyEnded := false, false
	ok := it.Next()
	for ok {
		k := it.Key()
		if !bytes.Equal(k.UserKey, m.cur) {
			keyEnded = true
			break
		}
		seq := k.SeqNum()
		if stripeOf(seq, m.snaps) != stripe && m.fault != faultMergeAcrossStripes {
			break
		}
		if m.covered(k.UserKey, seq, stripe) {
			terminated = true // a deletion: nothing under the operands
			break
		}
		switch k.Kind() {
		case base.KindMerge:
			addOp(it.Value(), seq)
			ok = it.Next()
			continue
		case base.KindSet:
			existing = append([]byte{}, it.Value()...)
		case base.KindBlobIndex:
			// The operands merge into the blob's value: the result is an
			// inline value, and the blob becomes garbage (RocksDB does
			// the same).
			v, err := m.d.blobs.getNoFill(k.UserKey, it.Value())
			if err != nil {
				return false, err
			}
			existing = append([]byte(nil), v...)
		}
		// A value, a deletion (or an entry of a kind Strata does not
		// know): the stack ends on it; the caller skips the rest of the
		// stripe.
		terminated = true
		break
	}
	if !ok {
		if err := it.Error(); err != nil {
			return false, err
		}
		keyEnded = true
	}
	if m.ops.len() == 0 {
		// The filter dropped every operand: what the stack ended on is
		// the key's state.
		switch {
		case terminated && existing != nil:
			return ok, m.add(base.MakeInternalKey(m.cur, newest, base.KindSet), existing)
		case terminated && !(bottommost && stripe == 0):
			return ok, m.add(base.MakeInternalKey(m.cur, newest, base.KindDelete), nil)
		}
		return ok, nil
	}
	if terminated || (keyEnded && bottommost) {
		v, err := m.cf.fullMerge(m.cur, existing, m.ops.operands(true))
		if err != nil {
			return false, err
		}
		return ok, m.add(base.MakeInternalKey(m.cur, newest, base.KindSet), v)
	}
	if m.ops.len() > 1 {
		ops := m.ops.operands(true)
		if v, merged := m.op.PartialMerge(m.cur, ops); merged {
			return ok, m.add(base.MakeInternalKey(m.cur, newest, base.KindMerge), v)
		}
	}
	ops := m.ops.operands(false)
	for i, op := range ops {
		if err := m.add(base.MakeInternalKey(m.cur, m.seqs[i], base.KindMerge), op); err != nil {
			return false, err
		}
	}
	return ok, nil
}
