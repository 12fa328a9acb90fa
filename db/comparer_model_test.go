package db_test

// The comparer model test: random writes, snapshots, flushes, compactions
// (with subcompactions) and reopens of a database ordered by a non-bytewise
// Comparer, checked against a sorted map that orders keys with the same
// Comparer: Get, MultiGet, forward and backward iteration, Seek and
// SeekForPrev under LowerBound/UpperBound.

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/prefix"
	"github.com/stretchr/testify/require"
)

// lengthFirstComparer orders shorter keys first, then bytewise: decimal
// numbers without leading zeros sort numerically. Its Separator and
// Successor return keys of the same length (a shorter key would sort
// first), which exercises the table writer's use of both.
type lengthFirstComparer struct{}

func (lengthFirstComparer) Name() string { return "strata.test.LengthFirst" }

func (lengthFirstComparer) Compare(a, b []byte) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return bytes.Compare(a, b)
}

// Separator returns a key k with a <= k < b: for keys of one length, a up
// to the first differing byte, that byte plus one, then zeros, when that
// is still below b.
func (c lengthFirstComparer) Separator(dst, a, b []byte) []byte {
	if len(a) == len(b) {
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		if i < len(a) && a[i] < 0xff && a[i]+1 < b[i] {
			dst = append(dst, a[:i]...)
			dst = append(dst, a[i]+1)
			for len(dst) < len(a) {
				dst = append(dst, 0)
			}
			return dst
		}
	}
	return append(dst, a...)
}

// Successor returns the largest key of a's length, which is >= a.
func (lengthFirstComparer) Successor(dst, a []byte) []byte {
	for range a {
		dst = append(dst, 0xff)
	}
	return dst
}

// cmpModel is a map whose sorted views follow a comparer.
type cmpModel struct {
	cmp db.Comparer
	m   map[string]string
}

func newCmpModel(c db.Comparer) *cmpModel { return &cmpModel{cmp: c, m: map[string]string{}} }

func (m *cmpModel) clone() *cmpModel {
	c := newCmpModel(m.cmp)
	for k, v := range m.m {
		c.m[k] = v
	}
	return c
}

func (m *cmpModel) deleteRange(start, end []byte) {
	for k := range m.m {
		if m.cmp.Compare([]byte(k), start) >= 0 && m.cmp.Compare([]byte(k), end) < 0 {
			delete(m.m, k)
		}
	}
}

// sorted returns the live keys in [lower, upper) (nil: no bound) in order.
func (m *cmpModel) sorted(lower, upper []byte) []string {
	var out []string
	for k := range m.m {
		if lower != nil && m.cmp.Compare([]byte(k), lower) < 0 {
			continue
		}
		if upper != nil && m.cmp.Compare([]byte(k), upper) >= 0 {
			continue
		}
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return m.cmp.Compare([]byte(out[i]), []byte(out[j])) < 0 })
	return out
}

type cmpRun struct {
	t     *testing.T
	rng   *rand.Rand
	opts  db.Options
	dir   string
	d     *db.DB
	keys  [][]byte
	m     *cmpModel
	snaps []*db.Snapshot
	views []*cmpModel
	log   []string
	// prefixLen > 0: the family has a fixed-length prefix extractor, and
	// iterators sometimes read with PrefixSameAsStart.
	prefixLen int
	// subcompactions sums the split compactions of the databases opened
	// so far (the counter restarts with each Open).
	subcompactions uint64
}

func (r *cmpRun) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf(format, args...))
	if len(r.log) > 40 {
		r.log = r.log[1:]
	}
}

func (r *cmpRun) key() []byte { return r.keys[r.rng.Intn(len(r.keys))] }

func (r *cmpRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s\nlast operations:\n%v", fmt.Sprintf(format, args...), r.log)
}

func TestComparerModel(t *testing.T) {
	var alpha [][]byte
	for _, a := range []string{"a", "b", "c", "d"} {
		alpha = append(alpha, []byte(a))
		for _, b := range []string{"", "a", "b", "ab", "ba", "\x00", "\xff"} {
			alpha = append(alpha, []byte(a+b))
			alpha = append(alpha, []byte(a+b+"z"))
		}
	}
	var nums [][]byte
	for i := 0; i < 120; i++ {
		nums = append(nums, []byte(strconv.Itoa(i*37%1000)))
	}
	for _, tc := range []struct {
		name      string
		cmp       db.Comparer
		keys      [][]byte
		prefixLen int
	}{
		{"reverse", db.ReverseBytewiseComparer(), alpha, 1},
		{"lengthfirst", lengthFirstComparer{}, nums, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := testutil.Seed(t)
			steps := 1500
			if testing.Short() {
				steps = 500
			}
			r := &cmpRun{t: t, rng: rand.New(rand.NewSource(seed)), dir: t.TempDir(), keys: tc.keys,
				m: newCmpModel(tc.cmp), prefixLen: tc.prefixLen}
			r.opts = db.Options{CreateIfMissing: true, Comparer: tc.cmp, WriteBufferSize: 8 << 10,
				BlockSize: 256, TargetFileSizeBase: 2 << 10, MaxBytesForLevelBase: 16 << 10,
				Level0FileNumCompactionTrigger: 2, MaxSubcompactions: 4,
				MergeOperator: db.NewStringAppendOperator(","), BloomBitsPerKey: 10}
			if tc.prefixLen > 0 {
				// The keys with one byte prefix are one run in reverse
				// order too: the extractor's contract holds.
				r.opts.PrefixExtractor = prefix.Fixed(tc.prefixLen)
			}
			d, err := db.Open(r.dir, &r.opts)
			require.NoError(t, err)
			r.d = d
			defer func() {
				r.releaseAll()
				require.NoError(t, r.d.Close())
			}()
			for i := 0; i < steps; i++ {
				r.step()
			}
			r.checkAll()
			require.NoError(t, r.d.CompactRange(nil, nil))
			r.checkAll()
			r.subcompactions += db.Subcompactions(r.d)
			require.Positive(t, r.subcompactions, "no compaction was split into subcompactions")
		})
	}
}

func (r *cmpRun) step() {
	t := r.t
	switch n := r.rng.Intn(100); {
	case n < 40:
		// Values up to a few hundred bytes: enough input for
		// compactions to split into subcompactions.
		k, v := r.key(), []byte(fmt.Sprintf("v%d-%s", r.rng.Intn(1000), strings.Repeat("x", r.rng.Intn(300))))
		r.logf("Put %q", k)
		require.NoError(t, r.d.Put(k, v, nil))
		r.m.m[string(k)] = string(v)
	case n < 50:
		k := r.key()
		r.logf("Delete %q", k)
		require.NoError(t, r.d.Delete(k, nil))
		delete(r.m.m, string(k))
	case n < 58:
		k, op := r.key(), []byte(fmt.Sprintf("m%d", r.rng.Intn(100)))
		r.logf("Merge %q", k)
		require.NoError(t, r.d.Merge(k, op, nil))
		if v, ok := r.m.m[string(k)]; ok {
			r.m.m[string(k)] = v + "," + string(op)
		} else {
			r.m.m[string(k)] = string(op)
		}
	case n < 63:
		a, b := r.key(), r.key()
		if r.m.cmp.Compare(a, b) > 0 {
			a, b = b, a
		}
		r.logf("DeleteRange %q %q", a, b)
		require.NoError(t, r.d.DeleteRange(a, b, nil))
		r.m.deleteRange(a, b)
	case n < 68:
		b := db.NewBatch()
		for i := r.rng.Intn(5); i >= 0; i-- {
			k := r.key()
			if r.rng.Intn(3) == 0 {
				b.Delete(k)
				delete(r.m.m, string(k))
			} else {
				v := []byte(fmt.Sprintf("b%d", r.rng.Intn(1000)))
				b.Put(k, v)
				r.m.m[string(k)] = string(v)
			}
		}
		r.logf("Write batch")
		require.NoError(t, r.d.Write(b, nil))
	case n < 72:
		r.logf("NewSnapshot")
		r.snaps = append(r.snaps, r.d.NewSnapshot())
		r.views = append(r.views, r.m.clone())
	case n < 74:
		if len(r.snaps) > 0 {
			i := r.rng.Intn(len(r.snaps))
			r.logf("Release snapshot %d", i)
			r.snaps[i].Release()
			r.snaps = append(r.snaps[:i], r.snaps[i+1:]...)
			r.views = append(r.views[:i], r.views[i+1:]...)
		}
	case n < 78:
		r.logf("Flush")
		require.NoError(t, r.d.Flush())
	case n < 80:
		a, b := r.key(), r.key()
		if r.m.cmp.Compare(a, b) > 0 {
			a, b = b, a
		}
		if r.rng.Intn(2) == 0 {
			a, b = nil, nil
		}
		r.logf("CompactRange %q %q", a, b)
		require.NoError(t, r.d.CompactRange(a, b))
	case n < 81:
		r.logf("Close+Open")
		r.releaseAll()
		r.subcompactions += db.Subcompactions(r.d)
		require.NoError(t, r.d.Close())
		d, err := db.Open(r.dir, &r.opts)
		require.NoError(t, err)
		r.d = d
	case n < 90:
		r.checkGets()
	case n < 95 && r.prefixLen > 0:
		r.checkPrefixIter()
	default:
		r.checkIter()
	}
}

func (r *cmpRun) releaseAll() {
	for _, s := range r.snaps {
		s.Release()
	}
	r.snaps, r.views = nil, nil
}

// view picks the latest state or a live snapshot.
func (r *cmpRun) view() (*db.ReadOptions, *cmpModel, string) {
	if len(r.snaps) == 0 || r.rng.Intn(2) == 0 {
		return nil, r.m, "latest"
	}
	i := r.rng.Intn(len(r.snaps))
	return &db.ReadOptions{Snapshot: r.snaps[i]}, r.views[i], fmt.Sprintf("snapshot %d", i)
}

func (r *cmpRun) checkAll() {
	for _, k := range r.keys {
		r.checkGet(nil, r.m, "latest", k)
	}
	for i := 0; i < 20; i++ {
		r.checkIter()
	}
}

func (r *cmpRun) checkGet(ro *db.ReadOptions, m *cmpModel, name string, k []byte) {
	got, err := r.d.Get(k, ro)
	want, ok := m.m[string(k)]
	if !ok {
		if err != db.ErrNotFound {
			r.fail("%s: Get(%q) = %q, %v; want not found", name, k, got, err)
		}
		return
	}
	if err != nil || string(got) != want {
		r.fail("%s: Get(%q) = %q, %v; want %q", name, k, got, err, want)
	}
}

func (r *cmpRun) checkGets() {
	ro, m, name := r.view()
	for i := 0; i < 5; i++ {
		r.checkGet(ro, m, name, r.key())
	}
	keys := make([][]byte, 1+r.rng.Intn(8))
	for i := range keys {
		keys[i] = r.key()
	}
	vals, errs := r.d.MultiGet(keys, ro)
	for i, k := range keys {
		want, ok := m.m[string(k)]
		switch {
		case !ok && errs[i] != db.ErrNotFound:
			r.fail("%s: MultiGet key %q = %q, %v; want not found", name, k, vals[i], errs[i])
		case ok && (errs[i] != nil || string(vals[i]) != want):
			r.fail("%s: MultiGet key %q = %q, %v; want %q", name, k, vals[i], errs[i], want)
		}
	}
}

// checkIter scans forward and backward within random bounds, then seeks
// and steps.
func (r *cmpRun) checkIter() {
	ro0, m, name := r.view()
	ro := &db.ReadOptions{}
	if ro0 != nil {
		*ro = *ro0
	}
	if r.rng.Intn(2) == 0 {
		ro.LowerBound = r.key()
	}
	if r.rng.Intn(2) == 0 {
		ro.UpperBound = r.key()
	}
	if ro.LowerBound != nil && ro.UpperBound != nil && m.cmp.Compare(ro.LowerBound, ro.UpperBound) > 0 {
		ro.LowerBound, ro.UpperBound = ro.UpperBound, ro.LowerBound
	}
	want := m.sorted(ro.LowerBound, ro.UpperBound)
	name = fmt.Sprintf("%s [%q, %q)", name, ro.LowerBound, ro.UpperBound)
	it := r.d.NewIterator(ro)
	defer func() { require.NoError(r.t, it.Close()) }()
	var got []string
	for it.SeekToFirst(); it.Valid(); it.Next() {
		got = append(got, string(it.Key()))
		if v := m.m[string(it.Key())]; v != string(it.Value()) {
			r.fail("%s: forward scan: value of %q is %q, want %q", name, it.Key(), it.Value(), v)
		}
	}
	require.NoError(r.t, it.Err())
	if fmt.Sprint(got) != fmt.Sprint(want) {
		r.fail("%s: forward scan\n got %q\nwant %q", name, got, want)
	}
	got = got[:0]
	for it.SeekToLast(); it.Valid(); it.Prev() {
		got = append(got, string(it.Key()))
	}
	require.NoError(r.t, it.Err())
	rev := make([]string, len(want))
	for i, k := range want {
		rev[len(want)-1-i] = k
	}
	if fmt.Sprint(got) != fmt.Sprint(rev) {
		r.fail("%s: backward scan\n got %q\nwant %q", name, got, rev)
	}
	// Seek and SeekForPrev, then a few steps either way.
	for q := 0; q < 4; q++ {
		target := r.key()
		var pos int
		if r.rng.Intn(2) == 0 {
			it.Seek(target)
			pos = sort.Search(len(want), func(i int) bool { return m.cmp.Compare([]byte(want[i]), target) >= 0 })
			if ro.LowerBound != nil && m.cmp.Compare(target, ro.LowerBound) < 0 {
				pos = 0
			}
		} else {
			it.SeekForPrev(target)
			pos = sort.Search(len(want), func(i int) bool { return m.cmp.Compare([]byte(want[i]), target) > 0 }) - 1
			if ro.UpperBound != nil && m.cmp.Compare(target, ro.UpperBound) >= 0 {
				pos = len(want) - 1
			}
		}
		for s := 0; s < 4; s++ {
			if pos < 0 || pos >= len(want) {
				if it.Valid() {
					r.fail("%s: seek %q step %d: at %q, want invalid", name, target, s, it.Key())
				}
				break
			}
			if !it.Valid() || string(it.Key()) != want[pos] {
				r.fail("%s: seek %q step %d: valid %v key %q, want %q", name, target, s, it.Valid(), it.Key(), want[pos])
			}
			if r.rng.Intn(2) == 0 {
				it.Next()
				pos++
			} else {
				it.Prev()
				pos--
			}
		}
		require.NoError(r.t, it.Err())
	}
}

// checkPrefixIter seeks with PrefixSameAsStart (forward from the Seek key
// while the prefix holds, or backward from SeekForPrev's) and compares with
// the model's keys of that prefix.
func (r *cmpRun) checkPrefixIter() {
	ro0, m, name := r.view()
	ro := &db.ReadOptions{PrefixSameAsStart: true}
	if ro0 != nil {
		ro.Snapshot = ro0.Snapshot
	}
	target := r.key()
	p := target[:r.prefixLen]
	var want []string
	for _, k := range m.sorted(nil, nil) {
		if strings.HasPrefix(k, string(p)) {
			want = append(want, k)
		}
	}
	it := r.d.NewIterator(ro)
	defer func() { require.NoError(r.t, it.Close()) }()
	var got, exp []string
	if r.rng.Intn(2) == 0 {
		for _, k := range want {
			if m.cmp.Compare([]byte(k), target) >= 0 {
				exp = append(exp, k)
			}
		}
		for it.Seek(target); it.Valid(); it.Next() {
			got = append(got, string(it.Key()))
		}
	} else {
		for i := len(want) - 1; i >= 0; i-- {
			if m.cmp.Compare([]byte(want[i]), target) <= 0 {
				exp = append(exp, want[i])
			}
		}
		for it.SeekForPrev(target); it.Valid(); it.Prev() {
			got = append(got, string(it.Key()))
		}
	}
	require.NoError(r.t, it.Err())
	if fmt.Sprint(got) != fmt.Sprint(exp) {
		r.fail("%s: prefix %q from %q\n got %q\nwant %q", name, p, target, got, exp)
	}
}
