package stress

import (
	"strconv"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestCompactMode runs the compaction mode for a few seeds, with one and
// with four subcompactions (the mode's 2 KiB target file size splits most
// L0 and manual compactions); STRATA_LONG=1 runs many more and longer.
// db.TestCompactionFaultsCaughtByStressCompactMode shows that this length
// catches the compaction bugs it was made for.
func TestCompactMode(t *testing.T) {
	seeds, ops := 8, 3000
	if testutil.Long() {
		seeds, ops = 200, 20000
	}
	for _, subs := range []int{1, 4} {
		for s := 1; s <= seeds; s++ {
			st, err := RunCompact(CompactConfig{Seed: int64(s), Ops: ops, Subcompactions: subs})
			require.NoError(t, err, "seed %d, %d subcompactions", s, subs)
			require.Equal(t, -1, st.FailedAtOp)
		}
	}
}

// TestCompactModeIsNotVacuous: a run compacts constantly, reaches the
// lower levels, checks held snapshots many times and reads live data, so
// agreement with the model means something.
func TestCompactModeIsNotVacuous(t *testing.T) {
	st, err := RunCompact(CompactConfig{Seed: 1, Ops: 3000})
	require.NoError(t, err)
	require.Equal(t, 3000, st.Ops)
	require.Greater(t, st.Compactions, uint64(st.Flushes), "fewer compactions than flushes: %s", st)
	require.GreaterOrEqual(t, st.DeepestLevel, 3, "%s", st)
	require.Greater(t, st.SnapshotChecks, 20, "%s", st)
	require.Greater(t, st.CompactRanges, 10, "%s", st)
	require.Positive(t, st.Reopens, "%s", st)
}

// TestCompactModeReportsMismatch: a write the model does not know of (made
// behind its back at Open) is reported with the seed, the operation, the
// key, the view and both values.
func TestCompactModeReportsMismatch(t *testing.T) {
	st, err := RunCompact(CompactConfig{Seed: 7, Ops: 3000, OnOpen: func(d *db.DB) {
		require.NoError(t, d.Put(Key(3), []byte("rogue"), nil))
	}})
	require.True(t, errors.Is(err, ErrCompactMismatch), "%v", err)
	require.GreaterOrEqual(t, st.FailedAtOp, 0)
	require.Contains(t, err.Error(), "seed 7: op "+strconv.Itoa(st.FailedAtOp)+" (")
	require.Contains(t, err.Error(), `key 00000003 at the latest state: want not found, got "rogue"`)
	require.Contains(t, err.Error(), "L0:") // the LSM shape
}
