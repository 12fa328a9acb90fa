package stress

// Compaction mode: one seeded, single-threaded sequence that keeps the engine
// compacting. A small key space is overwritten, deleted, range deleted and
// merged (ConcatMergeOperator) many times under a tiny memtable, an L0
// trigger of 2 and level targets of a few KiB, so that nearly every flush
// starts a compaction and the data spans L0 to L3: compactions into L1 and L2
// run with older versions below them, which a deletion they see may still
// hide. Up to four snapshots are held at a time, each for 50 to 200
// operations (several flushes and compactions), with stretches where none is
// held (so that the oldest stripe holds fresh deletions). The model is exact:
// the state of every key after each operation, and a copy of it per snapshot.
// Gets check one key (latest or at a held snapshot); after each Flush the
// latest state is checked key by key, and after each CompactRange and each
// reopen the latest state and every held snapshot are checked key by key and
// by a forward and a reverse scan. The sequence depends only on the seed;
// background compactions run on their own schedule, so the point where a bug
// shows may move a little between runs of one seed.

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"strconv"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
)

// ErrCompactMismatch marks a compaction-mode read that disagrees with the
// model.
var ErrCompactMismatch = errors.New("stress: compaction mode read disagrees with the model")

// CompactConfig is one compaction-mode run. Zero fields take the defaults.
type CompactConfig struct {
	Seed int64
	Ops  int // operations; default 2000
	Keys int // key space; default 32
	// OnOpen, when set, is called with the DB after each Open, before the
	// run uses it (tests plant engine faults through it).
	OnOpen func(*db.DB)
	// Subcompactions sets Options.MaxSubcompactions (0 = default, 1): the
	// mode's tiny tables make most L0 and manual compactions split.
	Subcompactions int
	Log            io.Writer // progress; nil = discard
}

// CompactStats counts what a compaction-mode run did.
type CompactStats struct {
	Ops, Reads, FullChecks, SnapshotChecks int
	Flushes, CompactRanges, Reopens        int
	Compactions                            uint64 // finished, from Metrics, over every Open
	DeepestLevel                           int    // the deepest level that held a table at a check
	FailedAtOp                             int    // the operation that found a mismatch; -1 = none
}

func (s CompactStats) String() string {
	return fmt.Sprintf("%d ops, %d reads checked, %d full checks (%d of snapshots), %d flushes, %d CompactRange, %d reopens, %d compactions, deepest level L%d",
		s.Ops, s.Reads, s.FullChecks, s.SnapshotChecks, s.Flushes, s.CompactRanges, s.Reopens, s.Compactions, s.DeepestLevel)
}

// compactSnapSlots bounds the snapshots held at once.
const compactSnapSlots = 4

// compactVal is a key's state in the model.
type compactVal struct {
	ok  bool
	val []byte // never appended to in place: snapshot copies share it
}

type compactSnap struct {
	s     *db.Snapshot
	at    int // the operation that took it
	state []compactVal
}

type compactRun struct {
	cfg   CompactConfig
	rng   *rand.Rand
	fs    vfs.FS
	d     *db.DB
	state []compactVal
	snaps []compactSnap
	st    CompactStats
	op    int    // the current operation
	what  string // the current operation, described
}

// RunCompact runs one compaction-mode sequence and checks every read
// against the model. The error, if any, wraps ErrCompactMismatch (or the
// engine's error), names the seed, the operation, the key and view, what
// was expected and what was read, and the LSM shape.
func RunCompact(cfg CompactConfig) (CompactStats, error) {
	if cfg.Ops == 0 {
		cfg.Ops = 2000
	}
	if cfg.Keys == 0 {
		cfg.Keys = 32
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	r := &compactRun{
		cfg:   cfg,
		rng:   rand.New(rand.NewSource(cfg.Seed)),
		fs:    vfs.NewMem(),
		state: make([]compactVal, cfg.Keys),
	}
	r.st.FailedAtOp = -1
	err := r.run()
	if err != nil {
		r.st.FailedAtOp = r.op
		err = errors.Wrapf(err, "seed %d: op %d (%s)", cfg.Seed, r.op, r.what)
	}
	if r.d != nil {
		r.releaseAll()
		r.st.Compactions += r.d.Metrics().Compact.Count
		if cerr := r.d.Close(); err == nil && cerr != nil {
			err = errors.Wrapf(cerr, "seed %d: close", cfg.Seed)
		}
	}
	return r.st, err
}

func (r *compactRun) open() error {
	d, err := db.Open("/compact", &db.Options{
		CreateIfMissing: true,
		FS:              r.fs,
		MergeOperator:   ConcatMergeOperator{},
		// A memtable of a few hundred entries; the explicit Flushes make
		// most tables, so a larger minimum write buffer would not change
		// the mode.
		WriteBufferSize:                16 << 10,
		BlockSize:                      256,
		BloomBitsPerKey:                10,
		Level0FileNumCompactionTrigger: 2,
		TargetFileSizeBase:             2 << 10,
		MaxBytesForLevelBase:           4 << 10,
		MaxBytesForLevelMultiplier:     2,
		MaxSubcompactions:              r.cfg.Subcompactions,
	})
	if err != nil {
		return errors.Wrap(err, "open")
	}
	r.d = d
	if r.cfg.OnOpen != nil {
		r.cfg.OnOpen(d)
	}
	return nil
}

func (r *compactRun) run() error {
	r.what = "open"
	if err := r.open(); err != nil {
		return err
	}
	for r.op = 0; r.op < r.cfg.Ops; r.op++ {
		r.st.Ops++
		if err := r.step(); err != nil {
			return err
		}
		if r.op%500 == 499 {
			fmt.Fprintf(r.cfg.Log, "compact: seed %d: %d ops, %s\n", r.cfg.Seed, r.op+1, r.levels())
		}
	}
	r.what = "final check"
	return r.checkAll()
}

func (r *compactRun) step() error {
	d, rng, k := r.d, r.rng, r.rng.Intn(r.cfg.Keys)
	r.what = "nothing (a snapshot slot was full or empty)"
	switch n := rng.Intn(1000); {
	case n < 290:
		v := []byte(fmt.Sprintf("p%d.", r.op))
		v = append(v, bytes.Repeat([]byte{'a' + byte(k%26)}, 20+rng.Intn(130))...)
		r.what = fmt.Sprintf("put %s", Key(k))
		if err := d.Put(Key(k), v, nil); err != nil {
			return err
		}
		r.state[k] = compactVal{ok: true, val: v}
	case n < 600:
		o := []byte(fmt.Sprintf("m%d,", r.op))
		r.what = fmt.Sprintf("merge %s %q", Key(k), o)
		if err := d.Merge(Key(k), o, nil); err != nil {
			return err
		}
		old := r.state[k].val
		nv := make([]byte, 0, len(old)+len(o))
		r.state[k] = compactVal{ok: true, val: append(append(nv, old...), o...)}
	case n < 780:
		r.what = fmt.Sprintf("delete %s", Key(k))
		if err := d.Delete(Key(k), nil); err != nil {
			return err
		}
		r.state[k] = compactVal{}
	case n < 800:
		hi := min(k+1+rng.Intn(4), r.cfg.Keys)
		r.what = fmt.Sprintf("delete range [%s, %s)", Key(k), Key(hi))
		if err := d.DeleteRange(Key(k), Key(hi), nil); err != nil {
			return err
		}
		for i := k; i < hi; i++ {
			r.state[i] = compactVal{}
		}
	case n < 920:
		view := rng.Intn(len(r.snaps) + 1) // len(r.snaps): the latest
		r.what = "get " + string(Key(k)) + " " + r.viewName(view)
		return r.checkKey(view, k)
	case n < 940:
		if len(r.snaps) < compactSnapSlots {
			r.what = "snapshot"
			r.snaps = append(r.snaps, compactSnap{s: d.NewSnapshot(), at: r.op, state: append([]compactVal(nil), r.state...)})
		}
	case n < 960:
		if len(r.snaps) > 0 {
			i := rng.Intn(len(r.snaps))
			r.what = "release " + r.viewName(i)
			r.snaps[i].s.Release()
			r.snaps = append(r.snaps[:i], r.snaps[i+1:]...)
		}
	case n < 990:
		r.what = "flush"
		r.st.Flushes++
		if err := d.Flush(); err != nil {
			return err
		}
		return r.checkView(len(r.snaps), false)
	case n < 999:
		lo, hi := []byte(nil), []byte(nil)
		r.what = "compact range (all)"
		if rng.Intn(2) == 0 {
			a := rng.Intn(r.cfg.Keys)
			b := min(a+1+rng.Intn(r.cfg.Keys/2), r.cfg.Keys)
			lo, hi = Key(a), Key(b)
			r.what = fmt.Sprintf("compact range [%s, %s)", lo, hi)
		}
		r.st.CompactRanges++
		if err := d.CompactRange(lo, hi); err != nil {
			return err
		}
		return r.checkAll()
	default:
		r.what = "reopen"
		r.st.Reopens++
		r.releaseAll()
		r.st.Compactions += d.Metrics().Compact.Count
		err := d.Close()
		r.d = nil
		if err != nil {
			return errors.Wrap(err, "close")
		}
		if err := r.open(); err != nil {
			return err
		}
		return r.checkAll()
	}
	return nil
}

func (r *compactRun) releaseAll() {
	for _, s := range r.snaps {
		s.s.Release()
	}
	r.snaps = r.snaps[:0]
}

// viewName names view i: a held snapshot, or (i == len(r.snaps)) the
// latest state.
func (r *compactRun) viewName(i int) string {
	if i == len(r.snaps) {
		return "at the latest state"
	}
	return fmt.Sprintf("at the snapshot taken at op %d", r.snaps[i].at)
}

func (r *compactRun) view(i int) (*db.ReadOptions, []compactVal) {
	if i == len(r.snaps) {
		return &db.ReadOptions{}, r.state
	}
	return &db.ReadOptions{Snapshot: r.snaps[i].s}, r.snaps[i].state
}

func (r *compactRun) checkKey(view, k int) error {
	ro, want := r.view(view)
	r.st.Reads++
	got, err := r.d.Get(Key(k), ro)
	switch {
	case errors.Is(err, db.ErrNotFound):
		if want[k].ok {
			return r.mismatch(view, k, showVal(want[k]), "not found")
		}
		return nil
	case err != nil:
		return errors.Wrapf(err, "get %s %s", Key(k), r.viewName(view))
	}
	if !want[k].ok || !bytes.Equal(got, want[k].val) {
		return r.mismatch(view, k, showVal(want[k]), showVal(compactVal{ok: true, val: got}))
	}
	return nil
}

// checkAll checks the latest state and every held snapshot exactly.
func (r *compactRun) checkAll() error {
	for i := len(r.snaps); i >= 0; i-- {
		if err := r.checkView(i, true); err != nil {
			return err
		}
	}
	return nil
}

// checkView checks every key of view i with Get and, with scan, the view's
// whole contents with a forward and a reverse iterator.
func (r *compactRun) checkView(i int, scan bool) error {
	r.st.FullChecks++
	if i < len(r.snaps) {
		r.st.SnapshotChecks++
	}
	r.noteDepth()
	for k := 0; k < r.cfg.Keys; k++ {
		if err := r.checkKey(i, k); err != nil {
			return err
		}
	}
	if !scan {
		return nil
	}
	ro, want := r.view(i)
	var live []int
	for k := range want {
		if want[k].ok {
			live = append(live, k)
		}
	}
	it := r.d.NewIterator(ro)
	defer it.Close()
	for _, reverse := range []bool{false, true} {
		var got []int
		if reverse {
			it.SeekToLast()
		} else {
			it.SeekToFirst()
		}
		for ; it.Valid(); r.move(it, reverse) {
			k, err := KeyIndex(it.Key())
			if err != nil || k >= r.cfg.Keys {
				return errors.Newf("scan %s: key %q outside the key space", r.viewName(i), it.Key())
			}
			r.st.Reads++
			if !want[k].ok || !bytes.Equal(it.Value(), want[k].val) {
				return r.mismatch(i, k, showVal(want[k]), showVal(compactVal{ok: true, val: it.Value()})+" (scan)")
			}
			got = append(got, k)
		}
		if err := it.Err(); err != nil {
			return errors.Wrapf(err, "scan %s", r.viewName(i))
		}
		if len(got) != len(live) {
			return errors.Mark(errors.Newf("scan %s (reverse %v): %d keys, want %d (%v, want %v)\n%s",
				r.viewName(i), reverse, len(got), len(live), got, live, r.levels()), ErrCompactMismatch)
		}
	}
	return nil
}

func (r *compactRun) move(it *db.Iterator, reverse bool) {
	if reverse {
		it.Prev()
	} else {
		it.Next()
	}
}

func (r *compactRun) mismatch(view, k int, want, got string) error {
	return errors.Mark(errors.Newf("key %s %s: want %s, got %s\n%s",
		Key(k), r.viewName(view), want, got, r.levels()), ErrCompactMismatch)
}

// noteDepth records the deepest level holding a table.
func (r *compactRun) noteDepth() {
	for l := db.NumLevels - 1; l > r.st.DeepestLevel; l-- {
		if n, _ := r.d.GetProperty(db.PropNumFilesAtLevelPrefix + strconv.Itoa(l)); n != "" && n != "0" {
			r.st.DeepestLevel = l
			return
		}
	}
}

func (r *compactRun) levels() string {
	s, _ := r.d.GetProperty(db.PropLevels)
	return s
}

func showVal(v compactVal) string {
	if !v.ok {
		return "not found"
	}
	const max = 120
	if len(v.val) > max {
		return fmt.Sprintf("%q... (%d bytes)", v.val[:max], len(v.val))
	}
	return fmt.Sprintf("%q", v.val)
}
