package stress

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
)

// Under Config.Filter the DB runs Filter, whose every decision follows
// from the value alone (the version in its header), so that the oracle
// knows what it may have made of each version: versions ≡ 0 mod 5 are
// removed, versions ≡ 1 mod 5 changed (the high bit of the value's first
// byte set, which no key index has), the rest kept. Under Config.TTL the
// DB reads the oracle's clock, which only moves with no operation running
// (the runner holds its lock exclusively), so the write time of every
// version is known exactly, and so is, at each read, whether it expired.
//
// A read may then find a version of the window [Lo, Next] as written or,
// if the filter changes it, changed; or nothing if a version of the window
// is a delete, one the filter removes, or one that expired. It must never
// find an expired version (unless ReadOptions.IncludeExpired), nor a
// changed one the filter keeps. What a snapshot reads is checked exactly
// against what it read when it was taken: no filter acts, and no TTL drops
// in compactions, what a live snapshot sees.

// Rules are what the oracle must allow for: Filter's decisions, and TTL
// (seconds, 0 = none) on the oracle's clock.
type Rules struct {
	Filter bool
	TTL    int64
}

// on reports whether a filter or TTL can make a version read as changed or
// absent.
func (r Rules) on() bool { return r.Filter || r.TTL > 0 }

// Filter is the stress run's CompactionFilter (see Rules).
type Filter struct {
	// OnFlush runs it in flushes too.
	OnFlush bool
}

// Name is the filter's name in the OPTIONS file.
func (Filter) Name() string { return "strata.StressFilter" }

// FilterOnFlush is the opt-in to flushes.
func (f Filter) FilterOnFlush() bool { return f.OnFlush }

// Filter removes or changes a value by its version (FilterFate).
func (Filter) Filter(_ int, _, value []byte) (db.FilterDecision, []byte) {
	if len(value) < valueHeader || value[0]&changedBit != 0 {
		return db.FilterKeep, nil
	}
	switch FilterFate(binary.BigEndian.Uint32(value[4:])) {
	case fateRemove:
		return db.FilterRemove, nil
	case fateChange:
		nv := append([]byte(nil), value...)
		nv[0] |= changedBit
		return db.FilterChangeValue, nv
	}
	return db.FilterKeep, nil
}

// changedBit marks a value Filter changed.
const changedBit = 0x80

// Filter fates.
const (
	fateKeep = iota
	fateRemove
	fateChange
)

// FilterFate is what Filter does to version v of any key.
func FilterFate(v uint32) int {
	switch v % 5 {
	case 0:
		return fateRemove
	case 1:
		return fateChange
	}
	return fateKeep
}

// decodeFiltered is DecodeValue for values Filter may have changed.
func decodeFiltered(i int, b []byte, mult int) (v uint32, changed bool, err error) {
	if len(b) > 0 && b[0]&changedBit != 0 {
		b = append([]byte(nil), b...)
		b[0] &^= changedBit
		changed = true
	}
	v, err = DecodeValue(i, b, mult)
	return v, changed, err
}

// ttlEpoch is where the oracle's clock starts: after RocksDB's smallest
// valid write time (2013), so the values are readable by `ldb --ttl`.
const ttlEpoch = 1_700_000_000

// SetRules sets the rules of o's checks; with a TTL the clock starts at
// ttlEpoch unless a loaded log moved it.
func (o *Oracle) SetRules(r Rules) {
	o.rules = r
	if o.clock.Load() == 0 {
		o.clock.Store(ttlEpoch)
	}
}

// Now is the oracle's clock, the DB's under TTL.
func (o *Oracle) Now() time.Time { return time.Unix(o.clock.Load(), 0) }

// Advance moves the clock by sec seconds, logging it first when
// persisted: a background compaction may read the new time as soon as it
// is set, and a crash must not bring back a clock behind what it dropped.
// No operation may be running.
func (o *Oracle) Advance(sec int64) error {
	now := o.clock.Load() + sec
	if o.log != nil {
		o.logMu.Lock()
		_, err := o.log.Write(appendRecord(nil, record{kind: recClock, a: uint32(now)}))
		o.logMu.Unlock()
		if err != nil {
			return err
		}
	}
	o.clock.Store(now)
	return nil
}

// expired reports whether version v of key i expired at the clock's time
// (stripe lock held); false without TTL or when v is not in the history.
func (o *Oracle) expired(i int, v uint32) bool {
	if o.rules.TTL == 0 {
		return false
	}
	b := o.histBase[i]
	if v <= b || int(v-b) > len(o.hist[i]) {
		return false
	}
	return int64(o.histTime[i][v-b-1])+o.rules.TTL < o.clock.Load()
}

// AbsentOK reports whether a read of key i may find nothing, given the
// states around it: a delete in the window, or a put the filter removes or
// that expired.
func (o *Oracle) AbsentOK(i int, pre, post KeyState) bool {
	return MayBeAbsent(pre, post) || o.GoneByRules(i, pre, post)
}

// GoneByRules reports whether a put of key i in the window of the states
// around a read is one the filter removes or that expired, so that finding
// nothing does not tell whether a delete of the window was applied.
func (o *Oracle) GoneByRules(i int, pre, post KeyState) bool {
	if !o.rules.on() {
		return false
	}
	m := &o.mu[i%oracleStripes]
	m.Lock()
	defer m.Unlock()
	for v := max(pre.Lo, 1); v <= post.Next; v++ {
		e, ok := o.histAt(i, v)
		if !ok || e&histKindMask != histPut {
			continue
		}
		if (o.rules.Filter && FilterFate(v) == fateRemove) || o.expired(i, v) {
			return true
		}
	}
	return false
}

// CheckFiltered is CheckRead under the rules: see the top of this file.
// includeExpired is the read's ReadOptions.IncludeExpired.
func (o *Oracle) CheckFiltered(i int, pre, post KeyState, found bool, value []byte, mult int, includeExpired bool) error {
	if !found {
		if o.AbsentOK(i, pre, post) {
			return nil
		}
		return errors.Newf("key %s: not found, expected version %s", Key(i), expectDesc(pre, post))
	}
	v, changed, err := decodeFiltered(i, value, mult)
	if err != nil {
		return errors.Wrapf(err, "key %s: bad value %q", Key(i), truncate(value))
	}
	if v < pre.Lo || v > post.Next || v == 0 {
		return errors.Newf("key %s: read version %d, expected %s", Key(i), v, expectDesc(pre, post))
	}
	if changed && !(o.rules.Filter && FilterFate(v) == fateChange) {
		return errors.Newf("key %s: read version %d changed, which the filter keeps", Key(i), v)
	}
	m := &o.mu[i%oracleStripes]
	m.Lock()
	exp := o.expired(i, v)
	m.Unlock()
	if exp && !includeExpired {
		return errors.Newf("key %s: read version %d, expired at %d (TTL %ds)", Key(i), v, o.clock.Load(), o.rules.TTL)
	}
	return nil
}

// snapRead is what a snapshot read of one key gave when it was taken.
type snapRead struct {
	found bool
	value []byte
}

// snapshotReads reads positions [lo, hi) of the operation's family through s
// with IncludeExpired, checks each against states, and returns them: what
// the snapshot must read from then on.
func (t *thread) snapshotReads(s *db.Snapshot, lo, hi int, states []KeyState) ([]snapRead, bool) {
	r := t.r
	out := make([]snapRead, hi-lo)
	ro := &db.ReadOptions{Snapshot: s, IncludeExpired: true}
	for p := lo; p < hi; p++ {
		i := t.at(p)
		v, err := t.cf().Get(t.k(i), ro)
		found, ok := t.readErr("snapshot get when taken", i, err)
		if !ok {
			return nil, false
		}
		st := states[p-lo]
		if err := r.oracle.CheckFiltered(i, st, st, found, v, r.cfg.ValueSizeMult, true); err != nil {
			r.fail(errors.Wrapf(err, "get at snapshot of [%s, %s) when taken: %s", t.bk(lo), t.bk(hi), r.oracle.HistoryString(i)))
			return nil, false
		}
		out[p-lo] = snapRead{found: found, value: v}
	}
	return out, true
}

// checkSnapshotExact reads the keys of h through its snapshot, by Get or by
// an iterator, with IncludeExpired or not, and checks that it reads what it
// read when taken: exactly, less what expired since without
// IncludeExpired.
func (t *thread) checkSnapshotExact(h heldSnapshot) {
	r := t.r
	inc := t.rng.Intn(2) == 0
	want := make([]snapRead, len(h.seen))
	for j, s := range h.seen {
		want[j] = s
		if i := t.at(h.lo + j); s.found && !inc {
			v, _, _ := decodeFiltered(i, s.value, r.cfg.ValueSizeMult)
			m := &r.oracle.mu[i%oracleStripes]
			m.Lock()
			exp := r.oracle.expired(i, v)
			m.Unlock()
			if exp {
				want[j] = snapRead{}
			}
		}
	}
	ro := &db.ReadOptions{Snapshot: h.snap, IncludeExpired: inc}
	what := func(how string, i int) string {
		return how + " at snapshot of [" + string(t.bk(h.lo)) + ", " + string(t.bk(h.hi)) + "), key " + string(Key(i)) +
			", include_expired=" + strconv.FormatBool(inc) + ": " + r.oracle.HistoryString(i)
	}
	if t.rng.Intn(2) == 0 {
		for p := h.lo; p < h.hi; p++ {
			i := t.at(p)
			v, err := t.cf().Get(t.k(i), ro)
			found, ok := t.readErr("snapshot get", i, err)
			if !ok {
				return
			}
			if w := want[p-h.lo]; !sameRead(found, v, w, r.cfg.FIFO) {
				r.fail(errors.Newf("%s: read found=%v %q, want found=%v %q (taken: %v)", what("get", i), found, truncate(v), w.found, truncate(w.value), h.seen[p-h.lo].found))
				return
			}
		}
		return
	}
	ro.LowerBound, ro.UpperBound = t.bk(h.lo), t.bk(h.hi)
	it := t.cf().NewIterator(ro)
	defer it.Close()
	got := make([]snapRead, len(want))
	last := h.lo - 1
	for it.SeekToFirst(); it.Valid(); it.Next() {
		ki, err := KeyIndex(it.Key())
		p := 0
		if err == nil && ki < r.cfg.MaxKey {
			p = t.pos(t.base + ki)
		}
		if err != nil || ki >= r.cfg.MaxKey || p <= last || p >= h.hi {
			r.fail(errors.Newf("iterate at snapshot of [%s, %s): key %q out of bounds or order", t.bk(h.lo), t.bk(h.hi), it.Key()))
			return
		}
		last = p
		got[p-h.lo] = snapRead{found: true, value: append([]byte(nil), it.Value()...)}
	}
	if err := it.Err(); err != nil {
		t.expectOK("iterate at snapshot", err)
		return
	}
	for j := range want {
		if !sameRead(got[j].found, got[j].value, want[j], r.cfg.FIFO) {
			r.fail(errors.Newf("%s: read found=%v %q, want found=%v %q (taken: %v)", what("iterate", t.at(h.lo+j)), got[j].found, truncate(got[j].value), want[j].found, truncate(want[j].value), h.seen[j].found))
			return
		}
	}
}

// sameRead reports whether a snapshot read matches what it must read.
// FIFO compaction drops whole tables, snapshots or not (and by age under
// TTL): there a key may also be absent.
func sameRead(found bool, v []byte, w snapRead, fifo bool) bool {
	if !found && fifo {
		return true
	}
	return found == w.found && bytes.Equal(v, w.value)
}

// advanceClock moves the TTL clock by 1 to 3 seconds with no operation
// running, so that every operation reads one time.
func (t *thread) advanceClock() {
	r := t.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.oracle.Advance(int64(1 + t.rng.Intn(3))); err != nil {
		r.fail(errors.Wrap(err, "expected-state log"))
	}
	r.Stats.ClockSteps.Add(1)
}
