package stress

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratadb/strata/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestKeyOrderReverse checks the positions under a reversed order: each
// range of positions [lo, hi) is exactly the keys a DB sorting by that
// order holds between the bounds bound(lo) and bound(hi), in that order.
func TestKeyOrderReverse(t *testing.T) {
	const n = 50
	rev := func(a, b []byte) int { return bytes.Compare(b, a) }
	for _, c := range []struct {
		name string
		cmp  func(a, b []byte) int
	}{{"bytewise", nil}, {"explicit bytewise", bytes.Compare}, {"reverse", rev}} {
		o := newKeyOrder(n, c.cmp)
		cmp := c.cmp
		if cmp == nil {
			cmp = bytes.Compare
		}
		for p := 0; p < n; p++ {
			require.Equal(t, p, o.posOf(o.at(p)), c.name)
			if p > 0 {
				require.Negative(t, cmp(Key(o.at(p-1)), Key(o.at(p))), "%s: position %d", c.name, p)
			}
		}
		switch c.name {
		case "reverse":
			require.Equal(t, n-1, o.at(0))
			require.Nil(t, o.bound(n, n), "no key follows every key in reverse order")
		case "bytewise":
			require.Equal(t, Key(n), o.bound(n, n))
		default:
			require.Nil(t, o.bound(n, n), "only the default order knows a key after the last")
		}
		for lo := 0; lo < n; lo++ {
			for hi := lo; hi <= n; hi++ {
				lb, ub := o.bound(lo, n), o.bound(hi, n)
				var in []int
				for p := 0; p < n; p++ { // the DB's order: position order
					k := Key(o.at(p))
					if cmp(lb, k) <= 0 && (ub == nil || cmp(k, ub) < 0) {
						in = append(in, o.at(p))
					}
				}
				var want []int
				for p := lo; p < hi; p++ {
					want = append(want, o.at(p))
				}
				require.Equal(t, want, in, "%s: positions [%d, %d)", c.name, lo, hi)
			}
		}
		idx := o.sortedIndexes(100, 3, 9)
		require.IsIncreasing(t, idx)
		require.Len(t, idx, 6)
	}
}

// TestStressExplicitCompare runs the short stress with Compare set to
// bytes.Compare: the DB's order, but the oracle goes through its position
// tables and, as under any order but bytewise, leaves ranges that reach
// the last key without an upper bound.
func TestStressExplicitCompare(t *testing.T) {
	c := memConfig(t)
	c.Compare, c.OpsPerThread = bytes.Compare, 800*scale()
	r := runStress(t, c)
	require.Positive(t, r.Stats.Iters.Load())
	require.Positive(t, r.Stats.Ingests.Load())
}

// TestStressReverseComparator runs the short stress on a DB ordered by
// db.ReverseBytewiseComparer, with the filter and TTL on the oracle's
// clock and several families: iteration, bounds and range deletions are
// checked in the reverse order.
func TestStressReverseComparator(t *testing.T) {
	c := memConfig(t)
	c.Comparator, c.OpsPerThread, c.ColumnFamilies = "reverse", 800*scale(), 2
	c.Filter, c.TTL = true, 10*time.Second
	r := runStress(t, c)
	require.Positive(t, r.Stats.Iters.Load())
	require.Zero(t, r.Stats.Ingests.Load(), "ingestion is off under the filter and TTL")
}

// TestStressReverseIngest runs the short stress under the reverse order
// with ingestion on: the external files are built with the DB's comparer
// (a bytewise file would be refused by Ingest, failing the run), and the
// oracle checks what they put and range-delete in the reverse order.
func TestStressReverseIngest(t *testing.T) {
	c := memConfig(t)
	c.Comparator, c.OpsPerThread, c.ColumnFamilies, c.IngestOneIn = "reverse", 800*scale(), 2, 40
	r := runStress(t, c)
	require.Positive(t, r.Stats.Iters.Load())
	require.Positive(t, r.Stats.Ingests.Load())
}

// TestCrashReverseComparator: crash children carry the comparator in
// their config, so each reopens the DB with it (a bytewise child would
// fail Open with ErrInvalidArgument).
func TestCrashReverseComparator(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	c := Config{Seed: testutil.Seed(t), Threads: 4, MaxKey: 300, Dir: filepath.Join(dir, "db"),
		ExpectedLog: filepath.Join(dir, "expected"), WriteBufferSize: 16 << 10, Comparator: "reverse",
		FlushOneIn: 200, CompactRangeOneIn: 100, SnapshotOneIn: 50, SwapExtractorOneIn: 200, PrefixSize: 6}
	runCrashTest(t, c, 3*scale())
}
