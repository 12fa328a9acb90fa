package db

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/internal/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// subOptions are the options of the subcompaction tests: small tables,
// blocks and outputs, so that a few hundred KiB of input split into
// several ranges with several outputs each.
func subOptions(fs vfs.FS, subs int) *Options {
	return &Options{CreateIfMissing: true, FS: fs, DisableAutoCompactions: true,
		WriteBufferSize: 64 << 10, TargetFileSizeBase: 16 << 10, BlockSize: 256,
		MaxSubcompactions: subs, MergeOperator: NewUInt64AddOperator()}
}

// subWorkload applies the seed's random writes to d: puts and deletes of
// "k" keys, range deletions over them, uint64add merges of "m" keys (with
// puts and deletes under them) and single deletions of "s" keys (each put
// once between single deletions, as the contract requires), with flushes
// between batches of ops. It returns the snapshots it took.
type subWorkload struct {
	rng    *rand.Rand
	sdLive map[int]bool
}

func (w *subWorkload) run(t *testing.T, d *DB, ops int) {
	t.Helper()
	r := w.rng
	val := func() []byte { return []byte(fmt.Sprintf("v%d-%s", r.Intn(1e6), strings.Repeat("x", r.Intn(60)))) }
	for i := 0; i < ops; i++ {
		switch x := r.Intn(100); {
		case x < 45:
			require.NoError(t, d.Put([]byte(fmt.Sprintf("k%05d", r.Intn(3000))), val(), nil))
		case x < 52:
			require.NoError(t, d.Delete([]byte(fmt.Sprintf("k%05d", r.Intn(3000))), nil))
		case x < 54:
			lo := r.Intn(3000)
			require.NoError(t, d.DeleteRange([]byte(fmt.Sprintf("k%05d", lo)), []byte(fmt.Sprintf("k%05d", lo+1+r.Intn(40))), nil))
		case x < 75:
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], uint64(r.Intn(100)))
			k := []byte(fmt.Sprintf("m%04d", r.Intn(400)))
			switch y := r.Intn(20); {
			case y == 0:
				require.NoError(t, d.Delete(k, nil))
			case y == 1:
				require.NoError(t, d.Put(k, b[:], nil))
			default:
				require.NoError(t, d.Merge(k, b[:], nil))
			}
		default:
			n := r.Intn(500)
			k := []byte(fmt.Sprintf("s%04d", n))
			if w.sdLive[n] {
				require.NoError(t, d.SingleDelete(k, nil))
			} else {
				require.NoError(t, d.Put(k, val(), nil))
			}
			w.sdLive[n] = !w.sdLive[n]
		}
		if i%1500 == 1499 {
			require.NoError(t, d.Flush())
		}
	}
	require.NoError(t, d.Flush())
}

// subScan returns every key and value d shows at snap (nil: latest).
func subScan(t *testing.T, d *DB, snap *Snapshot) []string {
	t.Helper()
	it := d.NewIterator(&ReadOptions{Snapshot: snap})
	var out []string
	for it.SeekToFirst(); it.Valid(); it.Next() {
		out = append(out, fmt.Sprintf("%s=%x", it.Key(), it.Value()))
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return out
}

// subRun is one database of the equivalence test, with its snapshots.
type subRun struct {
	d     *DB
	snaps []*Snapshot
}

func (r *subRun) views(t *testing.T) [][]string {
	v := [][]string{subScan(t, r.d, nil)}
	for _, s := range r.snaps {
		v = append(v, subScan(t, r.d, s))
	}
	return v
}

// compactLevel compacts level into the next alone, as a manual compaction
// (CompactRange compacts no deeper than the deepest level holding data).
func compactLevel(t *testing.T, d *DB, level int, bottommost bool) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	cur := d.def.mu.vf.Current()
	p := cur.PickRange(level, level+1, nil, nil)
	require.NotNil(t, p)
	c := d.def.newCompaction(cur, p, true)
	require.Equal(t, bottommost, c.bottommost)
	d.startCompactionLocked(c)
	require.NoError(t, d.runCompactionLocked(c))
}

func checkLevels(t *testing.T, d *DB) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	require.NoError(t, d.def.mu.vf.Current().CheckOrdering())
	require.Empty(t, d.mu.pendingOutputs)
}

// The same writes compacted with one and with four subcompactions read
// the same, at the latest state and at every snapshot, after a
// non-bottommost L0 compaction (point deletions kept) and after a full
// manual compaction (bottommost: deletions dropped), and the same as
// before compaction; the split compaction's outputs do not overlap.
func TestSubcompactionsMatchOneCompaction(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		var runs [2]*subRun
		var before [][]string
		for i, subs := range []int{1, 4} {
			d, err := Open("db", subOptions(vfs.NewMem(), subs))
			require.NoError(t, err)
			r := &subRun{d: d}
			runs[i] = r
			w := &subWorkload{rng: rand.New(rand.NewSource(seed)), sdLive: map[int]bool{}}
			// Rounds 1 and 2 end with everything in L2 (the L1 into L2
			// compaction, a manual one, is split too).
			w.run(t, d, 6000)
			r.snaps = append(r.snaps, d.NewSnapshot())
			require.NoError(t, d.CompactRange(nil, nil))
			w.run(t, d, 6000)
			r.snaps = append(r.snaps, d.NewSnapshot())
			require.NoError(t, d.CompactRange(nil, nil))
			compactLevel(t, d, 1, true)
			// Round 3: L0 over L2 data, compacted into L1 only, not
			// bottommost: point deletions are kept.
			w.run(t, d, 3000)
			r.snaps = append(r.snaps, d.NewSnapshot())
			w.run(t, d, 3000)
			if i == 0 {
				before = r.views(t)
			} else {
				require.Equal(t, before, r.views(t), "seed %d: the two databases differ before compaction", seed)
			}
			compactLevel(t, d, 0, false)
			checkLevels(t, d)
			require.Equal(t, before, r.views(t), "seed %d, %d subcompactions: L0 compaction changed what reads see", seed, subs)
			require.NoError(t, d.CompactRange(nil, nil))
			checkLevels(t, d)
			require.Equal(t, before, r.views(t), "seed %d, %d subcompactions: full compaction changed what reads see", seed, subs)
		}
		require.Zero(t, runs[0].d.stats.subcompactions.Load())
		require.Greater(t, runs[1].d.stats.subcompactions.Load(), uint64(4), "seed %d: no compaction was split", seed)
		for _, r := range runs {
			for _, s := range r.snaps {
				s.Release()
			}
			require.NoError(t, r.d.Close())
		}
	}
}

// subFill writes and flushes enough for a split compaction and returns
// what reads see.
func subFill(t *testing.T, d *DB) []string {
	w := &subWorkload{rng: rand.New(rand.NewSource(7)), sdLive: map[int]bool{}}
	w.run(t, d, 8000)
	return subScan(t, d, nil)
}

// tableFiles lists the table files in dir.
func tableFiles(t *testing.T, fs vfs.FS, dir string) []string {
	names, err := fs.List(dir)
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ".sst") {
			out = append(out, n)
		}
	}
	return out
}

// A failure in one range fails the whole compaction: nothing is
// installed, every range's outputs are deleted, reads see what they saw,
// and after reopening the compaction succeeds. The failure is injected
// once as an error opening a range's inputs and once as a failed sync of
// an output table (errorfs) while the ranges run.
func TestSubcompactionFailureFailsCompaction(t *testing.T) {
	for _, how := range []string{"hook", "errorfs"} {
		t.Run(how, func(t *testing.T) {
			mem := vfs.NewMem()
			var armed atomic.Bool
			var syncs atomic.Int32
			fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
				if how == "errorfs" && armed.Load() && op == errorfs.OpSync && strings.HasSuffix(path, ".sst") && syncs.Add(1) == 3 {
					return errorfs.Injected(op, path)
				}
				return nil
			}))
			d, err := Open("db", subOptions(fs, 4))
			require.NoError(t, err)
			want := subFill(t, d)
			files := tableFiles(t, mem, "db")
			boom := errors.New("injected subcompaction failure")
			if how == "hook" {
				var calls atomic.Int32
				h := func(lower []byte) error {
					if calls.Add(1) == 3 {
						return boom
					}
					return nil
				}
				d.testingSubcompactionHook.Store(&h)
			}
			armed.Store(true)
			err = d.CompactRange(nil, nil)
			require.Error(t, err)
			if how == "hook" {
				require.ErrorIs(t, err, boom)
			} else {
				require.ErrorIs(t, err, errorfs.ErrInjected)
			}
			require.NotErrorIs(t, err, errSubcompactionCancelled)
			require.Greater(t, d.stats.subcompactions.Load(), uint64(1))
			armed.Store(false)
			d.testingSubcompactionHook.Store(nil)
			checkLevels(t, d)
			require.Equal(t, files, tableFiles(t, mem, "db"), "outputs of the failed compaction left behind")
			require.Equal(t, want, subScan(t, d, nil))
			require.Error(t, d.Put([]byte("after"), nil, nil), "writes stop after a failed compaction (the background error)")
			require.NoError(t, d.Close())

			d, err = Open("db", subOptions(fs, 4))
			require.NoError(t, err)
			require.Equal(t, want, subScan(t, d, nil))
			require.NoError(t, d.CompactRange(nil, nil))
			checkLevels(t, d)
			require.Equal(t, want, subScan(t, d, nil))
			require.NoError(t, d.Close())
		})
	}
}

// Close while the ranges of a compaction run aborts every range: the
// compaction installs nothing and leaves no output behind, and the
// database reopens with its data.
func TestSubcompactionCloseAborts(t *testing.T) {
	mem := vfs.NewMem()
	d, err := Open("db", subOptions(mem, 4))
	require.NoError(t, err)
	want := subFill(t, d)
	files := tableFiles(t, mem, "db")
	started := make(chan struct{})
	release := make(chan struct{})
	var calls atomic.Int32
	h := func(lower []byte) error {
		if calls.Add(1) == 1 {
			close(started)
			<-release
		}
		return nil
	}
	d.testingSubcompactionHook.Store(&h)
	done := make(chan error, 1)
	go func() { done <- d.CompactRange(nil, nil) }()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	// Close sets the abort flag before it waits for the compaction; give
	// it the flag, then let the held range go.
	for !d.compactAbort.Load() {
		runtime.Gosched()
	}
	close(release)
	require.ErrorIs(t, <-done, ErrClosed)
	require.NoError(t, <-closed)
	require.Equal(t, files, tableFiles(t, mem, "db"))
	d, err = Open("db", subOptions(mem, 4))
	require.NoError(t, err)
	require.Equal(t, want, subScan(t, d, nil))
	require.NoError(t, d.Close())
}

// max_subcompactions is a database option: DB.SetOptions changes it (and
// the OPTIONS file records it), a family's SetOptions refuses it.
func TestMaxSubcompactionsSetOptions(t *testing.T) {
	mem := vfs.NewMem()
	d, err := Open("db", subOptions(mem, 0))
	require.NoError(t, err)
	require.Equal(t, 1, d.subcompactionLimit())
	require.NoError(t, d.SetOptions(map[string]string{"max_subcompactions": "3"}))
	require.Equal(t, 3, d.subcompactionLimit())
	require.Error(t, d.SetOptions(map[string]string{"max_subcompactions": "0"}))
	require.Error(t, d.SetOptions(map[string]string{"max_subcompactions": "1025"}))
	require.Equal(t, 3, d.subcompactionLimit())
	cf, err := d.CreateColumnFamily("other", nil)
	require.NoError(t, err)
	err = cf.SetOptions(map[string]string{"max_subcompactions": "2"})
	require.ErrorIs(t, err, ErrInvalidArgument)
	var opts string
	names, err := mem.List("db")
	require.NoError(t, err)
	for _, n := range names {
		if strings.HasPrefix(n, "OPTIONS-") && n > opts {
			opts = n
		}
	}
	f, err := mem.Open("db/" + opts)
	require.NoError(t, err)
	var buf bytes.Buffer
	_, err = buf.ReadFrom(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Contains(t, buf.String(), "max_subcompactions=3")
	require.NoError(t, d.Close())
	_, err = Open("db", subOptions(mem, -1))
	require.ErrorIs(t, err, ErrInvalidArgument)
}

// The boundaries cut a compaction into ranges of about equal input bytes,
// in increasing order inside the inputs' key range; a compaction too small
// for its target file size, or not from L0 and not manual, is not cut.
func TestSubcompactionBoundariesBalance(t *testing.T) {
	d, err := Open("db", subOptions(vfs.NewMem(), 4))
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	subFill(t, d)
	d.mu.Lock()
	defer d.mu.Unlock()
	cur := d.def.mu.vf.Current()
	p := cur.PickRange(0, 1, nil, nil)
	require.NotNil(t, p)
	c := d.def.newCompaction(cur, p, true)
	bounds, err := d.subcompactionBoundaries(c, 4)
	require.NoError(t, err)
	require.Len(t, bounds, 3)
	var total uint64
	for _, f := range p.Inputs[0] {
		total += f.Size
	}
	edges := append(append([][]byte{nil}, bounds...), nil)
	for i := 0; i+1 < len(edges); i++ {
		if edges[i] != nil && edges[i+1] != nil {
			require.Negative(t, bytes.Compare(edges[i], edges[i+1]))
		}
		var n uint64
		for _, f := range p.Inputs[0] {
			b, err := d.approximateTableSize(base.DefaultComparer, f, edges[i], edges[i+1])
			require.NoError(t, err)
			n += b
		}
		require.InDelta(t, float64(total)/4, float64(n), float64(total)/10, "range %d of %d bytes holds %d", i, total, n)
	}
	require.Positive(t, bytes.Compare(bounds[0], p.Smallest))
	require.Negative(t, bytes.Compare(bounds[2], p.Largest))

	// One range per 80% of the target file size at most.
	c.targetSize = total
	bounds, err = d.subcompactionBoundaries(c, 4)
	require.NoError(t, err)
	require.Len(t, bounds, 1)
	c.targetSize = 2 * total
	bounds, err = d.subcompactionBoundaries(c, 4)
	require.NoError(t, err)
	require.Empty(t, bounds)
	// Automatic compactions below L0 are not split.
	c.targetSize, c.manual = total/8, false
	c.pick = &version.Pick{StartLevel: 1, OutputLevel: 2, Inputs: p.Inputs, Smallest: p.Smallest, Largest: p.Largest}
	bounds, err = d.subcompactionBoundaries(c, 4)
	require.NoError(t, err)
	require.Empty(t, bounds)
}
