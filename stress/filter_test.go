package stress

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stratadb/strata/internal/testutil"

	"github.com/stretchr/testify/require"
)

// TestStressFilterTTL is the short stress run with the stress Filter and
// TTL on the oracle's clock: reads, iterators, snapshots, reopens and
// checkpoints are checked under both.
func TestStressFilterTTL(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filter bool
		ttl    time.Duration
		fifo   bool
	}{{"filter", true, 0, false}, {"ttl", false, 5 * time.Second, false}, {"filter+ttl", true, 5 * time.Second, false},
		{"filter+ttl+fifo", true, 4 * time.Second, true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := memConfig(t)
			c.Filter, c.TTL, c.FIFO, c.OpsPerThread = tc.filter, tc.ttl, tc.fifo, 1000*scale()
			c.CompactRangeOneIn, c.ClockStepOneIn = 100, 40
			r := runStress(t, c)
			require.Positive(t, r.Stats.Snapshots.Load())
			require.Positive(t, r.Stats.Compactions.Load())
			if !tc.fifo { // FIFO's absent keys are not counted: anything may be
				require.Positive(t, r.Stats.ReadGone.Load(), "no read found a value removed or expired")
			}
			if tc.filter && !tc.fifo { // FIFO rewrites nothing: only flushes filter
				require.Positive(t, r.Stats.ReadChanged.Load(), "no read found a changed value")
			}
			if tc.ttl > 0 {
				require.Positive(t, r.Stats.ClockSteps.Load())
			}
		})
	}
}

// TestCheckFiltered pins the oracle's rules under the filter and TTL.
func TestCheckFiltered(t *testing.T) {
	const i = 5
	o := NewOracle(10)
	o.SetRules(Rules{Filter: true, TTL: 10})
	write := func(del bool) KeyState {
		ws := []Write{{Key: i, Del: del}}
		op, err := o.Begin(ws)
		require.NoError(t, err)
		require.NoError(t, o.Commit(op, ws))
		return o.State(i)
	}
	changed := func(v uint32) []byte {
		b := Value(i, v, 1)
		b[0] |= changedBit
		return b
	}
	for v := uint32(1); v <= 4; v++ {
		write(false)
	}
	s4 := o.State(i) // version 4: kept
	require.NoError(t, o.CheckFiltered(i, s4, s4, true, Value(i, 4, 1), 1, false))
	require.Error(t, o.CheckFiltered(i, s4, s4, true, changed(4), 1, false), "the filter keeps version 4")
	require.Error(t, o.CheckFiltered(i, s4, s4, false, nil, 1, false), "version 4 is neither removed nor expired")
	s5 := write(false) // version 5: removed
	require.NoError(t, o.CheckFiltered(i, s5, s5, false, nil, 1, false))
	require.NoError(t, o.CheckFiltered(i, s5, s5, true, Value(i, 5, 1), 1, false), "not compacted yet")
	s6 := write(false) // version 6: changed
	require.NoError(t, o.CheckFiltered(i, s6, s6, true, changed(6), 1, false))
	require.NoError(t, o.CheckFiltered(i, s6, s6, true, Value(i, 6, 1), 1, false))
	require.Error(t, o.CheckFiltered(i, s6, s6, false, nil, 1, false))
	require.Error(t, o.CheckFiltered(i, s6, s6, true, Value(i, 5, 1), 1, false), "an overwritten version")

	require.NoError(t, o.Advance(10)) // written at the epoch, live until epoch+10
	require.NoError(t, o.CheckFiltered(i, s6, s6, true, changed(6), 1, false))
	require.NoError(t, o.Advance(1))
	require.Error(t, o.CheckFiltered(i, s6, s6, true, changed(6), 1, false), "expired")
	require.NoError(t, o.CheckFiltered(i, s6, s6, true, changed(6), 1, true), "expired, asked for")
	require.NoError(t, o.CheckFiltered(i, s6, s6, false, nil, 1, false), "expired")
	s7 := write(false) // version 7, written now: kept and live
	require.Error(t, o.CheckFiltered(i, s7, s7, false, nil, 1, false))
	s8 := write(true)
	require.NoError(t, o.CheckFiltered(i, s8, s8, false, nil, 1, false))
	require.Error(t, o.CheckFiltered(i, s8, s8, true, Value(i, 7, 1), 1, false))
}

// TestCrashFilterTTL runs SIGKILL cycles under the filter and TTL: the
// clock each child starts from is the one the log ends with.
func TestCrashFilterTTL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	c := Config{Seed: testutil.Seed(t), Threads: 4, MaxKey: 300, Dir: filepath.Join(dir, "db"),
		ExpectedLog: filepath.Join(dir, "expected"), WriteBufferSize: 16 << 10, Filter: true, TTL: 5 * time.Second,
		FlushOneIn: 200, CompactRangeOneIn: 100, SnapshotOneIn: 50, SwapExtractorOneIn: 200, PrefixSize: 6, ClockStepOneIn: 40}
	runCrashTest(t, c, 3*scale())
}

// TestGoneByRules: a key whose put expired and whose delete after it may
// or may not have been applied (it failed, or was in flight at a crash)
// reads as absent either way, so verification must not collapse it to the
// delete: an IncludeExpired read may still find the put.
func TestGoneByRules(t *testing.T) {
	const i = 3
	o := NewOracle(10)
	o.SetRules(Rules{TTL: 10})
	put := []Write{{Key: i}}
	op, err := o.Begin(put)
	require.NoError(t, err)
	require.NoError(t, o.Commit(op, put))
	del := []Write{{Key: i, Del: true}}
	op, err = o.Begin(del)
	require.NoError(t, err)
	require.NoError(t, o.Fail(op, del))
	s := o.State(i)
	require.True(t, MayBeAbsent(s, s))
	require.False(t, o.GoneByRules(i, s, s), "the put is live: absence means the delete was applied")
	require.NoError(t, o.Advance(11))
	require.True(t, o.GoneByRules(i, s, s), "the put expired: absence tells nothing of the delete")
	require.NoError(t, o.CheckFiltered(i, s, s, true, Value(i, 1, 1), 1, true), "an IncludeExpired read finds it")
	o.Resolve(i, false, 0) // what verification did before
	r := o.State(i)
	require.Error(t, o.CheckFiltered(i, r, r, true, Value(i, 1, 1), 1, true), "collapsed to the delete, the expired put is refused")
}
