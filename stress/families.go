package stress

import (
	"strconv"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
)

// churn drops the family of a non-default slot and creates a new one, of a
// new name, in its place: the dropped handle must refuse reads and writes
// with ErrInvalidArgument, the new family must start empty, and the
// slot's model restarts (Oracle.Forget). No other operation runs (r.mu is
// held exclusively) and faults are off, so the family list is known.
// Crash and power-loss mode run without churn (see Config.CFChurnOneIn):
// their expected state would have to record the family list.
func (t *thread) churn() {
	r := t.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.faults != nil {
		was := r.faults.enable(false)
		defer r.faults.enable(was)
		// An earlier injected fault may have left the DB refusing writes
		// (a failed WAL write): a reopen (verified) clears that, so the
		// drop and create below, with no faults, must succeed.
		t.reopenLocked(r.ext)
		if r.failed.Load() {
			return
		}
	}
	f := 1 + t.rng.Intn(len(r.names)-1)
	old := r.cfs[f]
	if err := r.d.DropColumnFamily(old); err != nil {
		r.fail(errors.Wrapf(err, "drop column family %s", r.names[f]))
		return
	}
	r.Stats.Churns.Add(1)
	k := Key(t.rng.Intn(r.cfg.MaxKey))
	if _, err := old.Get(k, nil); !errors.Is(err, db.ErrInvalidArgument) {
		r.fail(errors.Newf("get %s through dropped family %s: got %v, want ErrInvalidArgument", k, r.names[f], err))
		return
	}
	if err := old.Put(k, []byte("x"), nil); !errors.Is(err, db.ErrInvalidArgument) {
		r.fail(errors.Newf("put %s through dropped family %s: got %v, want ErrInvalidArgument", k, r.names[f], err))
		return
	}
	b := db.NewBatch()
	b.PutCF(r.cfs[0], k, []byte("x"))
	b.PutCF(old, k, []byte("x"))
	if err := r.d.Write(b, nil); !errors.Is(err, db.ErrInvalidArgument) {
		r.fail(errors.Newf("batch naming dropped family %s: got %v, want ErrInvalidArgument", r.names[f], err))
		return
	}
	it := old.NewIterator(nil)
	it.SeekToFirst()
	if it.Valid() || !errors.Is(it.Err(), db.ErrInvalidArgument) {
		r.fail(errors.Newf("iterator of dropped family %s: valid=%v err=%v, want ErrInvalidArgument", r.names[f], it.Valid(), it.Err()))
		it.Close()
		return
	}
	it.Close()
	// The refused batch applied nothing: its default-family key must be
	// as the model says (checked by the next verification; a quick check
	// here names the cause).
	i := int(0)
	if ki, err := KeyIndex(k); err == nil {
		i = ki
	}
	if v, err := r.cfs[0].Get(k, nil); err == nil && string(v) == "x" {
		r.fail(errors.Newf("batch naming dropped family %s applied its default-family put of %s", r.names[f], k))
		return
	} else if err == nil {
		s := r.oracle.State(i)
		if cerr := r.check(i, s, s, true, v, r.cfg.ValueSizeMult); cerr != nil {
			r.fail(errors.Wrapf(cerr, "after a batch naming dropped family %s", r.names[f]))
			return
		}
	}

	name := "cf" + strconv.Itoa(r.nextName)
	r.nextName++
	co, err := r.cfOptions(r.options, r.cfExt[0])
	if err != nil {
		r.fail(err)
		return
	}
	cf, err := r.d.CreateColumnFamily(name, co)
	if err != nil {
		r.fail(errors.Wrapf(err, "create column family %s", name))
		return
	}
	r.names[f], r.cfs[f], r.cfExt[f] = name, cf, r.cfExt[0]
	r.slotGen[f]++
	base := f * r.cfg.MaxKey
	r.oracle.Forget(base, base+r.cfg.MaxKey)
	it = cf.NewIterator(nil)
	defer it.Close()
	if it.SeekToFirst(); it.Valid() {
		r.fail(errors.Newf("new column family %s (in place of a dropped one) holds key %q", name, it.Key()))
		return
	}
	if err := it.Err(); err != nil {
		r.fail(errors.Wrapf(err, "iterate new column family %s", name))
	}
}

// Forget restarts the model of keys [lo, hi) (their family was dropped
// and a new, empty one took its place): each key reads as absent, as
// after an acknowledged delete at its highest version, and its history is
// gone, so a value of the old family read there is older than that delete
// and fails the check. No operation may run.
func (o *Oracle) Forget(lo, hi int) {
	for i := lo; i < hi; i++ {
		m := &o.mu[i%oracleStripes]
		m.Lock()
		n := o.states[i].Next
		o.states[i] = KeyState{Lo: n, Hi: n, LastDel: n, Next: n}
		o.hist[i], o.histTime[i], o.histBase[i] = nil, nil, n
		m.Unlock()
	}
}
