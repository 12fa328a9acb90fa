package stress

import (
	"fmt"
	"path/filepath"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/table"
)

// This file holds the operations that came with merge, single delete,
// ingestion, checkpoints and iterator refresh.

func (t *thread) merge() {
	r := t.r
	r.Stats.Merges.Add(1)
	ws := []Write{{Key: t.key(), Merge: true}}
	t.write("merge", ws, func() error {
		return t.cf().Merge(t.k(ws[0].Key), Value(ws[0].Key, ws[0].Version, r.cfg.ValueSizeMult), t.wo())
	})
}

// singleDelete single-deletes a key whose only write since its last delete
// is one acknowledged put (RocksDB defines SingleDelete only then), and
// checks that the key reads as absent afterwards.
func (t *thread) singleDelete() {
	r := t.r
	k := t.key()
	keys := []int{k}
	r.oracle.LockKeys(keys)
	defer r.oracle.UnlockKeys(keys)
	if !r.oracle.SingleDeleteOK(k) {
		return
	}
	r.Stats.SingleDeletes.Add(1)
	ws := []Write{{Key: k, Del: true, Single: true}}
	if !t.writeLocked("single delete", ws, func() error { return t.cf().SingleDelete(t.k(k), t.wo()) }) {
		return
	}
	v, err := t.cf().Get(t.k(k), nil)
	if found, ok := t.readErr("get after single delete", k, err); ok && found {
		r.fail(errors.Newf("key %s: found %q right after its single delete (version %d)", Key(k), truncate(v), ws[0].Version))
	}
}

func (r *Runner) fs() vfs.FS {
	if r.options != nil && r.options.FS != nil {
		return r.options.FS
	}
	return vfs.Default
}

// ingest writes an external table file over a locked key range (random
// puts and deletes, sometimes a range deletion over keys it has no point
// entry for) and ingests it, moved or copied. The range's writes are one
// operation for the oracle, like a batch: pending during Ingest, committed
// when it returns, uncertain if it fails.
func (t *thread) ingest() {
	r := t.r
	lo := t.key() // positions (see keyOrder)
	hi := min(lo+1+t.rng.Intn(32), t.end())
	keys := r.order.sortedIndexes(t.base, lo-t.base, hi-t.base)
	// An optional range deletion [da, db) of keys with no point entry.
	da, dbEnd := lo, lo
	if t.rng.Intn(3) == 0 {
		da = lo + t.rng.Intn(hi-lo)
		dbEnd = da + 1 + t.rng.Intn(hi-da)
		if t.bk(dbEnd) == nil {
			dbEnd-- // no key bounds it under this order
		}
	}
	// ws in key order, as the external file wants them.
	var ws []Write
	for p := lo; p < hi; p++ {
		switch k := t.at(p); {
		case p >= da && p < dbEnd:
			ws = append(ws, Write{Key: k, Del: true})
		case t.rng.Intn(2) == 0:
		default:
			ws = append(ws, Write{Key: k, Del: t.rng.Intn(4) == 0})
		}
	}
	if len(ws) == 0 {
		ws = append(ws, Write{Key: t.at(lo)})
	}
	r.oracle.LockKeys(keys)
	defer r.oracle.UnlockKeys(keys)
	r.Stats.Ingests.Add(1)
	fs := r.fs()
	dir := r.cfg.Dir + ".ext"
	path := filepath.Join(dir, fmt.Sprintf("t%d-%d.sst", t.id, r.Stats.Ops.Load()))
	move := t.rng.Intn(2) == 0
	what := fmt.Sprintf("ingest [%s, %s) (%d writes, range deletion at positions [%d, %d), move=%v)", t.bk(lo), t.bk(hi), len(ws), da, dbEnd, move)
	t.writeLocked(what, ws, func() error {
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		f, err := fs.Create(path)
		if err != nil {
			return err
		}
		defer fs.Remove(path) // gone already after a moved ingestion
		// The file is in the family's order (every family has the DB's
		// comparer), which Ingest checks by the comparator name.
		x := table.NewExternalWriter(f, table.ExternalWriterOptions{BloomBitsPerKey: r.cfg.BloomBits, Comparer: r.cfg.comparer()})
		for _, w := range ws {
			switch p := t.pos(w.Key); {
			case p >= da && p < dbEnd:
			case w.Del:
				err = x.Delete(t.k(w.Key))
			default:
				err = x.Put(t.k(w.Key), Value(w.Key, w.Version, r.cfg.ValueSizeMult))
			}
			if err != nil {
				f.Close()
				return err
			}
		}
		if dbEnd > da {
			if err := x.DeleteRange(t.bk(da), t.bk(dbEnd)); err != nil {
				f.Close()
				return err
			}
		}
		if _, err := x.Finish(); err != nil {
			f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		return t.cf().Ingest([]string{path}, &db.IngestOptions{Move: move, SkipVerify: t.rng.Intn(2) == 0})
	})
}

// removeAll removes dir and the files in it (checkpoints are flat).
func removeAll(fs vfs.FS, dir string) {
	names, _ := fs.List(dir)
	for _, n := range names {
		fs.Remove(filepath.Join(dir, n))
	}
	fs.Remove(dir)
}

// checkpoint takes a checkpoint, opens it (read-only or not) and checks
// every key against the oracle: a key may be at any version between its
// state before Checkpoint was called and after it returned, as for a read.
func (t *thread) checkpoint() {
	r := t.r
	r.Stats.Checkpoints.Add(1)
	fs := r.fs()
	dir := fmt.Sprintf("%s.ckpt%d", r.cfg.Dir, t.id)
	removeAll(fs, dir)
	removeAll(fs, dir+".tmp")
	n := r.oracle.N()
	pre := r.oracle.States(0, n)
	err := r.d.Checkpoint(dir)
	post := r.oracle.States(0, n)
	if !t.expectOK("checkpoint", err) {
		return
	}
	defer removeAll(fs, dir)
	o, err := r.dbOptions(r.ext)
	if err != nil {
		r.fail(err)
		return
	}
	o.CreateIfMissing = false
	o.ReadOnly = t.rng.Intn(2) == 0
	c, err := db.Open(dir, o)
	if !t.expectOK("open checkpoint "+dir, err) {
		return
	}
	defer c.Close()
	cfs, err := handles(c, r.names)
	if err != nil {
		r.fail(errors.Wrapf(err, "checkpoint %s", dir))
		return
	}
	for i := 0; i < n; i++ {
		v, err := cfs[i/r.cfg.MaxKey].Get(r.key(i), nil)
		found, ok := t.readErr("checkpoint get", i, err)
		if !ok {
			return
		}
		if err := r.check(i, pre[i], post[i], found, v, r.cfg.ValueSizeMult); err != nil {
			r.fail(errors.Wrapf(err, "checkpoint %s (read_only=%v)", dir, o.ReadOnly))
			return
		}
	}
}

// iterRefresh makes an iterator with bounds [lo, hi), walks it, then moves
// its bounds with SetBounds, either keeping its view (new bounds inside the
// old ones, checked against the states saved when it was made) or also
// calling Refresh (checked against the states around the Refresh), and
// walks it again; sometimes it refreshes once more without new bounds.
func (t *thread) iterRefresh(ro *db.ReadOptions, lo, hi int, fwd bool) {
	r := t.r
	r.Stats.Refreshes.Add(1)
	pre := t.statesAt(lo, hi)
	it := t.cf().NewIterator(ro)
	defer it.Close()
	post := t.statesAt(lo, hi)
	what := fmt.Sprintf("refresh iterator (thread %d, family %s, extractor %q, bounds [%d,%d), total_order_seek=%v)", t.id, r.names[t.fam], t.ext(), lo, hi, ro.TotalOrderSeek)
	t.checkIter(it, fwd, lo, hi, pre, post, what, false, 0)
	for round := 0; round < 1+t.rng.Intn(3) && !r.failed.Load(); round++ {
		lo2 := lo + t.rng.Intn(hi-lo)
		hi2 := lo2 + 1 + t.rng.Intn(hi-lo2)
		refresh := t.rng.Intn(2) == 0
		it.SetBounds(t.bk(lo2), t.bk(hi2))
		pre2, post2 := pre[lo2-lo:hi2-lo], post[lo2-lo:hi2-lo]
		if refresh {
			pre2 = t.statesAt(lo2, hi2)
			err := it.Refresh()
			post2 = t.statesAt(lo2, hi2)
			if !t.expectOK(what+": refresh", err) {
				return
			}
			lo, hi, pre, post = lo2, hi2, pre2, post2
		}
		fwd2 := t.rng.Intn(2) == 0
		useSeek := t.rng.Intn(2) == 0
		seek := lo2 + t.rng.Intn(hi2-lo2)
		t.checkIter(it, fwd2, lo2, hi2, pre2, post2,
			fmt.Sprintf("%s: round %d: set bounds [%d,%d) refresh=%v", what, round, lo2, hi2, refresh), useSeek, seek)
	}
}
