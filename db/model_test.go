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
	runs, steps := 10, 400
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
