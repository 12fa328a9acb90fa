package db_test

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/prefix"
	"github.com/stretchr/testify/require"
)

// choosyAppend is stringappend whose PartialMerge sometimes declines, so
// that compaction also keeps uncombined operands.
type choosyAppend struct {
	db.MergeOperator
	mu  sync.Mutex // compactions call PartialMerge concurrently
	rng *rand.Rand
}

func (c *choosyAppend) PartialMerge(key []byte, ops [][]byte) ([]byte, bool) {
	c.mu.Lock()
	decline := c.rng.Intn(2) == 0
	c.mu.Unlock()
	if decline {
		return nil, false
	}
	return c.MergeOperator.PartialMerge(key, ops)
}

// mmodel is the sorted-map model of the merge test: stringappend with ",".
type mmodel map[string]string

func (m mmodel) clone() mmodel {
	c := make(mmodel, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (m mmodel) sorted() []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

type mergeRun struct {
	t     *testing.T
	rng   *rand.Rand
	opts  db.Options
	d     *db.DB
	m     mmodel
	snaps []*db.Snapshot
	views []mmodel
	trace []string
	// rangeDels: the run uses DeleteRange (a flush of a memtable with a
	// range deletion writes operands uncombined).
	rangeDels bool
}

// TestMergeModelRandomized writes random Put, Merge, Delete, DeleteRange
// and SingleDelete sequences (SingleDelete only as its contract allows:
// keys of their own, Put once between single deletions) with flushes,
// compactions, reopens and snapshots, and checks Get, MultiGet and
// iterators in both directions against a sorted-map model.
// STRATA_LONG=1 runs longer; -seed or STRATA_SEED replays a run.
func TestMergeModelRandomized(t *testing.T) {
	seed0 := testutil.Seed(t)
	runs, steps := 8, 300
	if testutil.Long() {
		runs, steps = 60, 2000
	}
	for i := 0; i < runs; i++ {
		seed := seed0 + int64(i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			r := &mergeRun{t: t, rng: rng, m: mmodel{}, rangeDels: rng.Intn(2) == 0}
			r.opts = db.Options{
				CreateIfMissing:                true,
				FS:                             vfs.NewMem(),
				WriteBufferSize:                (2 + rng.Intn(6)) << 10,
				BlockSize:                      []int{128, 4096}[rng.Intn(2)],
				Level0FileNumCompactionTrigger: 2 + rng.Intn(3),
				Level0SlowdownWritesTrigger:    1 << 20,
				Level0StopWritesTrigger:        1 << 20,
				TargetFileSizeBase:             8 << 10,
				MaxBytesForLevelBase:           32 << 10,
				DisableAutoCompactions:         rng.Intn(3) == 0,
				BloomBitsPerKey:                []int{0, 10}[rng.Intn(2)],
				MergeOperator:                  &choosyAppend{MergeOperator: db.NewStringAppendOperator(","), rng: rand.New(rand.NewSource(seed))},
			}
			if rng.Intn(2) == 0 {
				r.opts.PrefixExtractor = prefix.Fixed(2)
			}
			d, err := db.Open("/db", &r.opts)
			require.NoError(t, err)
			r.d = d
			defer func() {
				if t.Failed() {
					t.Logf("last operations:\n%s", strings.Join(r.trace, "\n"))
				}
				for _, s := range r.snaps {
					s.Release()
				}
				require.NoError(t, r.d.Close())
			}()
			for s := 0; s < steps && !t.Failed(); s++ {
				r.step()
			}
			r.checkAll()
		})
	}
}

func (r *mergeRun) logf(format string, args ...any) {
	r.trace = append(r.trace, fmt.Sprintf(format, args...))
	if len(r.trace) > 60 {
		r.trace = r.trace[1:]
	}
}

func (r *mergeRun) key() string  { return fmt.Sprintf("k%02d", r.rng.Intn(24)) }
func (r *mergeRun) skey() string { return fmt.Sprintf("s%02d", r.rng.Intn(8)) }

func (r *mergeRun) val() string { return fmt.Sprintf("v%d", r.rng.Intn(1000)) }

func (r *mergeRun) merge(m mmodel, k, v string) {
	if old, ok := m[k]; ok {
		m[k] = old + "," + v
	} else {
		m[k] = v
	}
}

func (r *mergeRun) step() {
	t := r.t
	switch n := r.rng.Intn(100); {
	case n < 25:
		k, v := r.key(), r.val()
		r.logf("merge %s %s", k, v)
		require.NoError(t, r.d.Merge([]byte(k), []byte(v), nil))
		r.merge(r.m, k, v)
	case n < 35:
		k, v := r.key(), r.val()
		r.logf("put %s %s", k, v)
		require.NoError(t, r.d.Put([]byte(k), []byte(v), nil))
		r.m[k] = v
	case n < 42:
		k := r.key()
		r.logf("delete %s", k)
		require.NoError(t, r.d.Delete([]byte(k), nil))
		delete(r.m, k)
	case n < 45 && r.rangeDels:
		a, b := r.key(), r.key()
		if a > b {
			a, b = b, a
		}
		r.logf("deleterange %s %s", a, b)
		require.NoError(t, r.d.DeleteRange([]byte(a), []byte(b), nil))
		for k := range r.m {
			if k >= a && k < b {
				delete(r.m, k)
			}
		}
	case n < 60:
		k := r.skey()
		if _, ok := r.m[k]; ok {
			r.logf("singledelete %s", k)
			require.NoError(t, r.d.SingleDelete([]byte(k), nil))
			delete(r.m, k)
		} else {
			v := r.val()
			r.logf("put %s %s", k, v)
			require.NoError(t, r.d.Put([]byte(k), []byte(v), nil))
			r.m[k] = v
		}
	case n < 66:
		b := db.NewBatch()
		var desc []string
		for i := r.rng.Intn(5); i >= 0; i-- {
			k, v := r.key(), r.val()
			if r.rng.Intn(4) == 0 {
				// A single-deletion key, within the contract.
				k = r.skey()
				if _, ok := r.m[k]; ok {
					b.SingleDelete([]byte(k))
					delete(r.m, k)
					desc = append(desc, "singledelete "+k)
				} else {
					b.Put([]byte(k), []byte(v))
					r.m[k] = v
					desc = append(desc, "put "+k+" "+v)
				}
				continue
			}
			if r.rng.Intn(3) == 0 {
				b.Put([]byte(k), []byte(v))
				r.m[k] = v
				desc = append(desc, "put "+k+" "+v)
			} else {
				b.Merge([]byte(k), []byte(v))
				r.merge(r.m, k, v)
				desc = append(desc, "merge "+k+" "+v)
			}
		}
		r.logf("batch %s", strings.Join(desc, "; "))
		require.NoError(t, r.d.Write(b, nil))
	case n < 72:
		r.logf("flush")
		require.NoError(t, r.d.Flush())
	case n < 76:
		r.logf("compact")
		require.NoError(t, r.d.CompactRange(nil, nil))
	case n < 82:
		if len(r.snaps) < 4 {
			r.logf("snapshot %d", len(r.snaps))
			r.snaps = append(r.snaps, r.d.NewSnapshot())
			r.views = append(r.views, r.m.clone())
		}
	case n < 85:
		if len(r.snaps) > 0 {
			i := r.rng.Intn(len(r.snaps))
			r.logf("release %d", i)
			r.snaps[i].Release()
			r.snaps = append(r.snaps[:i], r.snaps[i+1:]...)
			r.views = append(r.views[:i], r.views[i+1:]...)
		}
	case n < 87:
		r.logf("reopen")
		for _, s := range r.snaps {
			s.Release()
		}
		r.snaps, r.views = nil, nil
		require.NoError(t, r.d.Close())
		d, err := db.Open("/db", &r.opts)
		require.NoError(t, err)
		r.d = d
	default:
		r.check(nil, r.m, "latest")
	}
}

func (r *mergeRun) checkAll() {
	r.check(nil, r.m, "latest")
	for i, s := range r.snaps {
		r.check(&db.ReadOptions{Snapshot: s}, r.views[i], fmt.Sprintf("snapshot %d", i))
	}
}

func (r *mergeRun) check(ro *db.ReadOptions, m mmodel, name string) {
	t := r.t
	if ro == nil && len(r.snaps) > 0 && r.rng.Intn(2) == 0 {
		i := r.rng.Intn(len(r.snaps))
		ro, m, name = &db.ReadOptions{Snapshot: r.snaps[i]}, r.views[i], fmt.Sprintf("snapshot %d", i)
	}
	var keys [][]byte
	for i := 0; i < 24; i++ {
		keys = append(keys, []byte(fmt.Sprintf("k%02d", i)))
	}
	for i := 0; i < 8; i++ {
		keys = append(keys, []byte(fmt.Sprintf("s%02d", i)))
	}
	vals, errs := r.d.MultiGet(keys, ro)
	for i, k := range keys {
		want, ok := m[string(k)]
		got, err := r.d.Get(k, ro)
		if !ok {
			require.ErrorIs(t, err, db.ErrNotFound, "%s: Get %s = %q", name, k, got)
			require.ErrorIs(t, errs[i], db.ErrNotFound, "%s: MultiGet %s", name, k)
			continue
		}
		require.NoError(t, err, "%s: Get %s", name, k)
		require.Equal(t, want, string(got), "%s: Get %s", name, k)
		require.NoError(t, errs[i], "%s: MultiGet %s", name, k)
		require.Equal(t, want, string(vals[i]), "%s: MultiGet %s", name, k)
	}
	sorted := m.sorted()
	it := r.d.NewIterator(ro)
	defer func() { require.NoError(t, it.Close()) }()
	var fwd, bwd []string
	for it.SeekToFirst(); it.Valid(); it.Next() {
		fwd = append(fwd, string(it.Key())+"="+string(it.Value()))
	}
	require.NoError(t, it.Err())
	for it.SeekToLast(); it.Valid(); it.Prev() {
		bwd = append([]string{string(it.Key()) + "=" + string(it.Value())}, bwd...)
	}
	require.NoError(t, it.Err())
	var want []string
	for _, k := range sorted {
		want = append(want, k+"="+m[k])
	}
	require.Equal(t, want, fwd, "%s: forward scan", name)
	require.Equal(t, want, bwd, "%s: backward scan", name)
	// Random moves: direction changes across merged keys.
	pos := -1 // index in sorted; -1 or len: not valid
	target := keys[r.rng.Intn(len(keys))]
	it.Seek(target)
	pos = sort.SearchStrings(sorted, string(target))
	for i := 0; i < 20; i++ {
		if pos < 0 || pos >= len(sorted) {
			require.False(t, it.Valid(), "%s: after moves", name)
			break
		}
		require.True(t, it.Valid(), "%s: move %d", name, i)
		require.Equal(t, sorted[pos], string(it.Key()), "%s: move %d", name, i)
		require.Equal(t, m[sorted[pos]], string(it.Value()), "%s: move %d key %s", name, i, sorted[pos])
		if r.rng.Intn(2) == 0 {
			it.Next()
			pos++
		} else {
			it.Prev()
			pos--
		}
	}
	require.NoError(t, it.Err())
	r.checkBounded(ro, m, name)
	r.checkPrefix(ro, m, name)
}

// checkBounded scans between random bounds both ways.
func (r *mergeRun) checkBounded(ro *db.ReadOptions, m mmodel, name string) {
	t := r.t
	lo, hi := r.key(), r.skey()
	if r.rng.Intn(2) == 0 {
		lo, hi = r.key(), r.key()
		if lo > hi {
			lo, hi = hi, lo
		}
	}
	bro := &db.ReadOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)}
	if ro != nil {
		bro.Snapshot = ro.Snapshot
	}
	var want []string
	for _, k := range m.sorted() {
		if k >= lo && k < hi {
			want = append(want, k+"="+m[k])
		}
	}
	it := r.d.NewIterator(bro)
	defer func() { require.NoError(t, it.Close()) }()
	var fwd, bwd []string
	for it.SeekToFirst(); it.Valid(); it.Next() {
		fwd = append(fwd, string(it.Key())+"="+string(it.Value()))
	}
	require.NoError(t, it.Err())
	for it.SeekToLast(); it.Valid(); it.Prev() {
		bwd = append([]string{string(it.Key()) + "=" + string(it.Value())}, bwd...)
	}
	require.NoError(t, it.Err())
	require.Equal(t, want, fwd, "%s: forward scan in [%s, %s)", name, lo, hi)
	require.Equal(t, want, bwd, "%s: backward scan in [%s, %s)", name, lo, hi)
}

// checkPrefix seeks with PrefixSameAsStart when an extractor is set.
func (r *mergeRun) checkPrefix(ro *db.ReadOptions, m mmodel, name string) {
	if r.opts.PrefixExtractor == nil {
		return
	}
	t := r.t
	target := r.key()
	if r.rng.Intn(2) == 0 {
		target = r.skey()
	}
	pro := &db.ReadOptions{PrefixSameAsStart: true}
	if ro != nil {
		pro.Snapshot = ro.Snapshot
	}
	var want, got []string
	for _, k := range m.sorted() {
		if k >= target && k[:2] == target[:2] {
			want = append(want, k+"="+m[k])
		}
	}
	it := r.d.NewIterator(pro)
	for it.Seek([]byte(target)); it.Valid(); it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.Equal(t, want, got, "%s: prefix seek %s", name, target)
}
