package db_test

import (
	"fmt"
	"math/rand"
	"strconv"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

// rdKey and rdValue are the keys and values of the range-deletion read
// tests: values of ~100 bytes so that a few thousand keys fill ~40 tables
// with smallLeveled's 8 KiB target.
func rdKey(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }

func rdValue(i, round int) []byte {
	return []byte(fmt.Sprintf("value-%05d-%d-%090d", i, round, i))
}

// rdShape describes the tables of a closed database, read from the files
// themselves (not through the DB, so nothing is counted as opened).
type rdShape struct {
	tables, withRangeDels int
}

func rdTableShape(t *testing.T, fs vfs.FS, dir string) rdShape {
	names, err := fs.List(dir)
	require.NoError(t, err)
	var s rdShape
	for _, name := range names {
		kind, _, ok := base.ParseFilename(name)
		if !ok || kind != base.FileKindTable {
			continue
		}
		f, err := fs.Open(dir + "/" + name)
		require.NoError(t, err)
		st, err := f.Stat()
		require.NoError(t, err)
		r, err := table.Open(f, st.Size(), table.ReaderOptions{FileName: name})
		require.NoError(t, err)
		s.tables++
		if len(r.Tombstones()) > 0 {
			s.withRangeDels++
		}
		require.NoError(t, r.Close())
	}
	return s
}

func rdUintProp(t *testing.T, d *db.DB, name string) int {
	n, err := strconv.Atoi(mustProp(t, d, name))
	require.NoError(t, err)
	return n
}

// rdLevels returns the number of L0 files and of non-empty levels below L0.
func rdLevels(t *testing.T, d *db.DB) (l0, deeper int) {
	l0 = rdUintProp(t, d, db.PropNumFilesAtLevelPrefix+"0")
	for level := 1; level < 7; level++ {
		if rdUintProp(t, d, fmt.Sprintf("%s%d", db.PropNumFilesAtLevelPrefix, level)) > 0 {
			deeper++
		}
	}
	return l0, deeper
}

// rdScan reads up to n entries from start forward (or backward from start,
// inclusive, when back) and checks them against m.
func rdScan(t *testing.T, d *db.DB, ro *db.ReadOptions, m *testutil.Model, start []byte, n int, back bool) {
	t.Helper()
	var want []testutil.KV
	if back {
		all := m.Range(nil, append(append([]byte(nil), start...), 0))
		for i := len(all) - 1; i >= 0 && len(want) < n; i-- {
			want = append(want, all[i])
		}
	} else {
		want = m.Range(start, nil)
		if len(want) > n {
			want = want[:n]
		}
	}
	it := d.NewIterator(ro)
	var got []testutil.KV
	if back {
		for it.SeekForPrev(start); it.Valid() && len(got) < n; it.Prev() {
			got = append(got, testutil.KV{Key: string(it.Key()), Value: string(it.Value())})
		}
	} else {
		for it.Seek(start); it.Valid() && len(got) < n; it.Next() {
			got = append(got, testutil.KV{Key: string(it.Key()), Value: string(it.Value())})
		}
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.Equal(t, want, got, "scan of %d from %q (back=%v)", n, start, back)
}

// TestRangeDelReadsOpenFewTables: after a reopen, a bounded scan and a Get
// open the tables they read and the tables that hold range deletions, not
// every table of the database (the first iterator over a read view used to
// open all of them to collect range tombstones). Results stay exactly those
// of a model, with range deletions in upper levels hiding keys of lower
// ones, in both directions and at a snapshot.
func TestRangeDelReadsOpenFewTables(t *testing.T) {
	fs := vfs.NewMem()
	const dir = "/db"
	require.NoError(t, fs.MkdirAll(dir, 0o755))
	d, err := db.Open(dir, smallLeveled(fs))
	require.NoError(t, err)
	m := testutil.NewModel()
	rng := rand.New(rand.NewSource(7))
	const n = 3000
	for i := 0; i < n; i++ {
		require.NoError(t, d.Put(rdKey(i), rdValue(i, 0), nil))
		m.Put(rdKey(i), rdValue(i, 0))
	}
	require.NoError(t, db.WaitForCompactions(d))
	// A few range deletions over keys that sit in deep levels by now, with
	// some overwrites, each round flushed.
	var lastDel int
	for round := 1; round <= 4; round++ {
		a := rng.Intn(n - 100)
		b := a + 20 + rng.Intn(60)
		require.NoError(t, d.DeleteRange(rdKey(a), rdKey(b), nil))
		m.DeleteRange(rdKey(a), rdKey(b))
		for j := 0; j < 50; j++ {
			i := rng.Intn(n)
			require.NoError(t, d.Put(rdKey(i), rdValue(i, round), nil))
			m.Put(rdKey(i), rdValue(i, round))
		}
		require.NoError(t, d.Flush())
		lastDel = a
		if round < 4 {
			require.NoError(t, db.WaitForCompactions(d))
		}
	}
	require.NoError(t, d.Close())
	shape := rdTableShape(t, fs, dir)
	t.Logf("%d tables, %d with range deletions", shape.tables, shape.withRangeDels)
	require.GreaterOrEqual(t, shape.tables, 30, "the test needs a database of many tables")
	require.GreaterOrEqual(t, shape.withRangeDels, 1)

	reopen := func() *db.DB {
		o := smallLeveled(fs)
		o.DisableAutoCompactions = true // no background work opens tables
		d, err := db.Open(dir, o)
		require.NoError(t, err)
		require.Equal(t, 0, rdUintProp(t, d, db.PropTablesOpened), "Open opens no table")
		return d
	}

	// A 10-key scan starting just before the last range deletion (its
	// tombstone is in L0 or L1, the keys it hides further down).
	start := rdKey(lastDel - 3)
	d = reopen()
	l0, deeper := rdLevels(t, d)
	require.GreaterOrEqual(t, deeper, 2, "the test needs several levels")
	// Per level, a 10-key scan reads at most two adjacent files.
	bound := shape.withRangeDels + l0 + 2*deeper
	require.Less(t, bound, shape.tables/2, "the bound must be well below opening everything")
	rdScan(t, d, nil, m, start, 10, false)
	opened := rdUintProp(t, d, db.PropTablesOpened)
	t.Logf("forward 10-key scan opened %d of %d tables (bound %d)", opened, shape.tables, bound)
	require.LessOrEqual(t, opened, bound)
	rdScan(t, d, nil, m, start, 10, true)
	require.LessOrEqual(t, rdUintProp(t, d, db.PropTablesOpened), bound+2*deeper+l0)
	require.NoError(t, d.Close())

	// Backward first, on a fresh open.
	d = reopen()
	rdScan(t, d, nil, m, rdKey(lastDel+5), 10, true)
	require.LessOrEqual(t, rdUintProp(t, d, db.PropTablesOpened), bound)
	require.NoError(t, d.Close())

	// Get opens at most one table per level (and each L0 file holding the
	// key): never a table for its tombstones alone.
	d = reopen()
	for _, i := range []int{lastDel + 1, n / 2} {
		before := rdUintProp(t, d, db.PropTablesOpened)
		got, err := d.Get(rdKey(i), nil)
		if want, ok := m.Get(rdKey(i)); ok {
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		} else {
			require.ErrorIs(t, err, db.ErrNotFound)
		}
		require.LessOrEqual(t, rdUintProp(t, d, db.PropTablesOpened)-before, l0+deeper, "Get of key %d", i)
	}

	// A snapshot, then a range deletion and overwrites in the memtable.
	snap := d.NewSnapshot()
	sm := m.Clone()
	a := lastDel - 40
	require.NoError(t, d.DeleteRange(rdKey(a), rdKey(a+30), nil))
	m.DeleteRange(rdKey(a), rdKey(a+30))
	for i := a + 10; i < a+15; i++ {
		require.NoError(t, d.Put(rdKey(i), rdValue(i, 9), nil))
		m.Put(rdKey(i), rdValue(i, 9))
	}
	snapRO := &db.ReadOptions{Snapshot: snap}
	for _, s := range []int{a - 2, a + 8, lastDel - 3} {
		for _, back := range []bool{false, true} {
			rdScan(t, d, snapRO, sm, rdKey(s), 10, back)
			rdScan(t, d, nil, m, rdKey(s), 10, back)
		}
	}
	// Everything, both directions, both views.
	keys := make([][]byte, 0, n)
	for i := 0; i < n; i += 7 {
		keys = append(keys, rdKey(i))
	}
	checkView(t, d, snapRO, sm, keys)
	checkView(t, d, nil, m, keys)
	snap.Release()
	require.NoError(t, d.Close())
}
