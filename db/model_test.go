package db_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/prefix"
	"github.com/stretchr/testify/require"
)

// TestModelRandomized drives a DB with random operations and checks every
// read against a sorted-map model, at the latest state and at snapshots.
// Flushes are frequent (tiny write buffers), the DB is reopened now and
// then, and the prefix extractor changes at run time: results must stay
// exactly those of the model. -seed (or STRATA_SEED) replays a failure;
// STRATA_LONG=1 runs more and longer runs.
func TestModelRandomized(t *testing.T) {
	base := testutil.Seed(t)
	runs, steps := 20, 400
	if testutil.Long() {
		runs, steps = 100, 3000
	}
	for i := 0; i < runs; i++ {
		seed := base + int64(i)
		for _, fsKind := range []string{"mem", "os"} {
			if fsKind == "os" && i%3 != 0 {
				continue // the OS file system is slower: a third of the runs
			}
			t.Run(fmt.Sprintf("%s/seed=%d", fsKind, seed), func(t *testing.T) {
				r := newModelRun(t, seed, fsKind)
				r.run(steps)
			})
		}
	}
}

// modelSnap is a live snapshot and the model state it must see.
type modelSnap struct {
	s *db.Snapshot
	m *testutil.Model
}

type modelRun struct {
	t     *testing.T
	rng   *rand.Rand
	keys  [][]byte
	fs    vfs.FS
	dir   string
	opts  db.Options
	d     *db.DB
	model *testutil.Model
	snaps []modelSnap
	ext   prefix.Extractor // the extractor in force
	trace []string         // the last operations, for failure messages
}

var modelExtractors = []func() prefix.Extractor{
	func() prefix.Extractor { return nil },
	func() prefix.Extractor { return prefix.Fixed(1) },
	func() prefix.Extractor { return prefix.Fixed(2) },
	func() prefix.Extractor { return prefix.Capped(2) },
	func() prefix.Extractor { return prefix.Noop() },
}

var modelExtractorStrings = []string{"", "nullptr", "fixed:1", "fixed:2", "capped:2", "noop", "rocksdb.FixedPrefix.3"}

func newModelRun(t *testing.T, seed int64, fsKind string) *modelRun {
	rng := rand.New(rand.NewSource(seed))
	r := &modelRun{t: t, rng: rng, model: testutil.NewModel()}
	r.keys = testutil.KeyUniverse(rng, 200)
	if fsKind == "mem" {
		r.fs, r.dir = vfs.NewMem(), "/db"
	} else {
		r.dir = t.TempDir()
	}
	r.opts = db.Options{
		CreateIfMissing: true,
		WriteBufferSize: (4 + rng.Intn(13)) << 10,
		BloomBitsPerKey: []int{0, 10}[rng.Intn(2)],
		PrefixExtractor: modelExtractors[rng.Intn(len(modelExtractors))](),
		Compression:     db.Compression(rng.Intn(3)),
		BlockSize:       []int{128, 1024, 4096}[rng.Intn(3)],
		// Compaction may be missing or slow: never stop writes on L0 count.
		Level0FileNumCompactionTrigger: 2 + rng.Intn(3),
		Level0SlowdownWritesTrigger:    1 << 20,
		Level0StopWritesTrigger:        1 << 20,
		TargetFileSizeBase:             16 << 10,
		MaxBytesForLevelBase:           64 << 10,
		DisableAutoCompactions:         rng.Intn(4) == 0,
		FS:                             r.fs,
	}
	r.opts.LevelCompactionDynamicLevelBytes = rng.Intn(2) == 0
	r.opts.DisableConcurrentMemtableWrites = rng.Intn(4) == 0
	r.ext = r.opts.PrefixExtractor
	d, err := db.Open(r.dir, &r.opts)
	require.NoError(t, err)
	r.d = d
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("options: %+v\nlast operations:\n%s", r.opts, strings.Join(r.trace, "\n"))
		}
		if r.d != nil {
			r.releaseAll()
			r.d.Close()
		}
	})
	return r
}

func (r *modelRun) logf(format string, args ...any) {
	if len(r.trace) >= 40 {
		r.trace = r.trace[1:]
	}
	r.trace = append(r.trace, fmt.Sprintf(format, args...))
}

func (r *modelRun) key() []byte { return r.keys[r.rng.Intn(len(r.keys))] }

// keyPair returns two keys in order, equal now and then.
func (r *modelRun) keyPair() ([]byte, []byte) {
	a, b := r.key(), r.key()
	if r.rng.Intn(10) == 0 {
		b = a
	}
	if bytes.Compare(a, b) > 0 {
		a, b = b, a
	}
	return a, b
}

func (r *modelRun) writeOpts() *db.WriteOptions {
	switch r.rng.Intn(8) {
	case 0:
		return &db.WriteOptions{Sync: true}
	case 1:
		return &db.WriteOptions{DisableWAL: true}
	case 2:
		return nil
	}
	return &db.WriteOptions{}
}

func (r *modelRun) run(steps int) {
	for step := 0; step < steps; step++ {
		r.step()
		if step%50 == 49 {
			r.checkAll()
		}
	}
	r.checkAll()
	r.reopen()
	r.checkAll()
}

func (r *modelRun) step() {
	t := r.t
	switch n := r.rng.Intn(100); {
	case n < 30:
		k, v := r.key(), testutil.RandValue(r.rng, 64)
		r.logf("Put(%q, %d bytes)", k, len(v))
		require.NoError(t, r.d.Put(k, v, r.writeOpts()))
		r.model.Put(k, v)
	case n < 40:
		k := r.key()
		r.logf("Delete(%q)", k)
		require.NoError(t, r.d.Delete(k, r.writeOpts()))
		r.model.Delete(k)
	case n < 45:
		s, e := r.keyPair()
		if r.rng.Intn(8) == 0 && !bytes.Equal(s, e) {
			r.logf("DeleteRange(%q, %q) inverted", e, s)
			require.ErrorIs(t, r.d.DeleteRange(e, s, nil), db.ErrInvalidArgument)
			return
		}
		r.logf("DeleteRange(%q, %q)", s, e)
		require.NoError(t, r.d.DeleteRange(s, e, r.writeOpts()))
		r.model.DeleteRange(s, e)
	case n < 55:
		r.writeBatch()
	case n < 58:
		r.logf("NewSnapshot")
		r.snaps = append(r.snaps, modelSnap{r.d.NewSnapshot(), r.model.Clone()})
	case n < 61:
		if len(r.snaps) > 0 {
			i := r.rng.Intn(len(r.snaps))
			r.logf("Release snapshot %d", i)
			r.snaps[i].s.Release()
			r.snaps = append(r.snaps[:i], r.snaps[i+1:]...)
		}
	case n < 63:
		r.logf("Flush")
		require.NoError(t, r.d.Flush())
	case n < 64:
		r.logf("CompactRange")
		s, e := r.keyPair()
		if r.rng.Intn(2) == 0 {
			s, e = nil, nil
		}
		require.NoError(t, r.d.CompactRange(s, e))
	case n < 65:
		r.reopen()
	case n < 67:
		r.setOptions()
	default:
		r.check()
	}
}

func (r *modelRun) writeBatch() {
	b := db.NewBatch()
	n := 1 + r.rng.Intn(8)
	var ops []func(*testutil.Model)
	for i := 0; i < n; i++ {
		switch r.rng.Intn(6) {
		case 0, 1, 2:
			k, v := r.key(), testutil.RandValue(r.rng, 64)
			b.Put(k, v)
			ops = append(ops, func(m *testutil.Model) { m.Put(k, v) })
		case 3, 4:
			k := r.key()
			b.Delete(k)
			ops = append(ops, func(m *testutil.Model) { m.Delete(k) })
		default:
			s, e := r.keyPair()
			b.DeleteRange(s, e)
			ops = append(ops, func(m *testutil.Model) { m.DeleteRange(s, e) })
		}
	}
	require.Equal(r.t, n, b.Count())
	r.logf("Write(batch of %d)", n)
	require.NoError(r.t, r.d.Write(b, r.writeOpts()))
	for _, op := range ops {
		op(r.model)
	}
}

func (r *modelRun) setOptions() {
	if r.rng.Intn(2) == 0 {
		v := fmt.Sprint((2 + r.rng.Intn(30)) << 10)
		r.logf("SetOptions(write_buffer_size=%s)", v)
		require.NoError(r.t, r.d.SetOptions(map[string]string{"write_buffer_size": v}))
		return
	}
	v := modelExtractorStrings[r.rng.Intn(len(modelExtractorStrings))]
	r.logf("SetOptions(prefix_extractor=%q)", v)
	require.NoError(r.t, r.d.SetOptions(map[string]string{"prefix_extractor": v}))
	r.ext = nil
	if v != "" && v != "nullptr" {
		e, err := prefix.Parse(v)
		require.NoError(r.t, err)
		r.ext = e
	}
}

func (r *modelRun) releaseAll() {
	for _, s := range r.snaps {
		s.s.Release()
	}
	r.snaps = nil
}

// reopen closes the DB and opens it again, now and then with another
// extractor (and so with tables whose filters do not match it).
func (r *modelRun) reopen() {
	r.logf("Close+Open")
	r.releaseAll()
	require.NoError(r.t, r.d.Close())
	r.d = nil
	if r.rng.Intn(2) == 0 {
		r.opts.PrefixExtractor = modelExtractors[r.rng.Intn(len(modelExtractors))]()
	}
	r.ext = r.opts.PrefixExtractor
	d, err := db.Open(r.dir, &r.opts)
	require.NoError(r.t, err)
	r.d = d
}

// view picks the latest state or a live snapshot to read at.
func (r *modelRun) view() (*db.ReadOptions, *testutil.Model, string) {
	if len(r.snaps) == 0 || r.rng.Intn(2) == 0 {
		return &db.ReadOptions{}, r.model, "latest"
	}
	i := r.rng.Intn(len(r.snaps))
	return &db.ReadOptions{Snapshot: r.snaps[i].s}, r.snaps[i].m, fmt.Sprintf("snapshot %d", i)
}

// check runs one random read at a random view.
func (r *modelRun) check() {
	ro, m, name := r.view()
	switch r.rng.Intn(3) {
	case 0:
		for i := 0; i < 5; i++ {
			r.checkGet(ro, m, name, r.key())
		}
	case 1:
		r.checkMultiGet(ro, m, name)
	default:
		r.checkIter(ro, m, name, 30)
	}
}

// checkAll compares every key and full scans, at the latest state and at
// every snapshot.
func (r *modelRun) checkAll() {
	views := []modelSnap{{nil, r.model}}
	views = append(views, r.snaps...)
	for i, v := range views {
		ro := &db.ReadOptions{Snapshot: v.s}
		name := fmt.Sprintf("view %d", i)
		for _, k := range r.keys {
			r.checkGet(ro, v.m, name, k)
		}
		r.checkScan(ro, v.m, name)
	}
}

func (r *modelRun) checkGet(ro *db.ReadOptions, m *testutil.Model, name string, k []byte) {
	got, err := r.d.Get(k, ro)
	want, ok := m.Get(k)
	if !ok {
		require.ErrorIs(r.t, err, db.ErrNotFound, "Get(%q) at %s", k, name)
		return
	}
	require.NoError(r.t, err, "Get(%q) at %s", k, name)
	require.Equal(r.t, want, got, "Get(%q) at %s", k, name)
}

func (r *modelRun) checkMultiGet(ro *db.ReadOptions, m *testutil.Model, name string) {
	keys := make([][]byte, r.rng.Intn(12))
	for i := range keys {
		keys[i] = r.key()
	}
	vals, errs := r.d.MultiGet(keys, ro)
	require.Len(r.t, vals, len(keys))
	require.Len(r.t, errs, len(keys))
	for i, k := range keys {
		want, ok := m.Get(k)
		if !ok {
			require.ErrorIs(r.t, errs[i], db.ErrNotFound, "MultiGet[%d] %q at %s", i, k, name)
			continue
		}
		require.NoError(r.t, errs[i], "MultiGet[%d] %q at %s", i, k, name)
		require.Equal(r.t, want, vals[i], "MultiGet[%d] %q at %s", i, k, name)
	}
}

// checkScan walks the whole view forward and backward.
func (r *modelRun) checkScan(ro *db.ReadOptions, m *testutil.Model, name string) {
	want := m.Range(nil, nil)
	it := r.d.NewIterator(ro)
	got := []testutil.KV{}
	for it.SeekToFirst(); it.Valid(); it.Next() {
		got = append(got, testutil.KV{Key: string(it.Key()), Value: string(it.Value())})
	}
	require.NoError(r.t, it.Err())
	require.Equal(r.t, len(want), len(got), "forward scan at %s", name)
	require.Equal(r.t, want, got, "forward scan at %s", name)
	got = got[:0]
	for it.SeekToLast(); it.Valid(); it.Prev() {
		got = append(got, testutil.KV{Key: string(it.Key()), Value: string(it.Value())})
	}
	require.NoError(r.t, it.Err())
	for i, j := 0, len(got)-1; i < j; i, j = i+1, j-1 {
		got[i], got[j] = got[j], got[i]
	}
	require.Equal(r.t, len(want), len(got), "backward scan at %s", name)
	require.Equal(r.t, want, got, "backward scan at %s", name)
	require.NoError(r.t, it.Close())
}

// randBound returns nil or a key, or now and then a key outside the
// universe.
func (r *modelRun) randBound() []byte {
	switch r.rng.Intn(4) {
	case 0, 1:
		return nil
	case 2:
		return append(append([]byte{}, r.key()...), 0x01)
	}
	return append([]byte{}, r.key()...)
}

// checkIter makes moves random positioning and stepping calls, in mixed
// directions, on an iterator with random bounds and prefix options,
// comparing each position with the model's.
func (r *modelRun) checkIter(ro *db.ReadOptions, m *testutil.Model, name string, moves int) {
	lo, hi := r.randBound(), r.randBound()
	if lo != nil && hi != nil && bytes.Compare(lo, hi) > 0 {
		lo, hi = hi, lo
	}
	ro.LowerBound, ro.UpperBound = lo, hi
	ro.PrefixSameAsStart = r.rng.Intn(3) == 0
	ro.TotalOrderSeek = r.rng.Intn(2) == 0
	desc := fmt.Sprintf("%s lower=%q upper=%q prefixSame=%v totalOrder=%v ext=%v",
		name, lo, hi, ro.PrefixSameAsStart, ro.TotalOrderSeek, extName(r.ext))
	it := r.d.NewIterator(ro)
	defer func() { require.NoError(r.t, it.Close()) }()
	mi := testutil.NewModelIter(m.Range(lo, hi), r.ext, ro.PrefixSameAsStart)
	var ops []string
	for i := 0; i < moves; i++ {
		op := r.rng.Intn(10)
		if ro.PrefixSameAsStart && op < 2 {
			op += 2 // SeekToFirst/SeekToLast: whether they narrow is not fixed
		}
		if !mi.Valid() && op >= 6 {
			op = 2 + r.rng.Intn(4)
		}
		k := r.key()
		if r.rng.Intn(4) == 0 {
			k = append(append([]byte{}, k...), 0x00)
		}
		switch op {
		case 0:
			ops = append(ops, "SeekToFirst")
			it.SeekToFirst()
			mi.SeekToFirst()
		case 1:
			ops = append(ops, "SeekToLast")
			it.SeekToLast()
			mi.SeekToLast()
		case 2, 3:
			ops = append(ops, fmt.Sprintf("Seek(%q)", k))
			it.Seek(k)
			mi.Seek(k)
		case 4, 5:
			ops = append(ops, fmt.Sprintf("SeekForPrev(%q)", k))
			it.SeekForPrev(k)
			mi.SeekForPrev(k)
		case 6, 7:
			ops = append(ops, "Next")
			it.Next()
			mi.Next()
		default:
			ops = append(ops, "Prev")
			it.Prev()
			mi.Prev()
		}
		require.NoError(r.t, it.Err(), "%s after %v", desc, ops)
		require.Equal(r.t, mi.Valid(), it.Valid(), "Valid: %s after %v", desc, ops)
		if mi.Valid() {
			e := mi.Entry()
			require.Equal(r.t, e.Key, string(it.Key()), "Key: %s after %v", desc, ops)
			require.Equal(r.t, e.Value, string(it.Value()), "Value of %q: %s after %v", e.Key, desc, ops)
		}
	}
}

func extName(e prefix.Extractor) string {
	if e == nil {
		return "none"
	}
	return e.Name()
}
