package db_test

import (
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/stress"
	"github.com/stretchr/testify/require"
)

// TestCompactionFaultsCaughtByStressCompactMode plants each known
// compaction bug (compactionFault) and requires the stress harness's
// compaction mode, at the length go test runs it, to report a wrong read
// for every seed tried; the same seeds pass without the fault. Both bugs
// once passed every short stress run: a point deletion dropped above the
// bottommost level (the older value below it comes back) and an operand
// stack merged across a snapshot (the snapshot loses older operands).
func TestCompactionFaultsCaughtByStressCompactMode(t *testing.T) {
	faults := []struct {
		name  string
		fault db.CompactionFault
	}{
		{"none", db.CompactionFaultNone},
		{"drop-deletes-above-bottom", db.CompactionFaultDropDeletesAboveBottom},
		{"merge-across-stripes", db.CompactionFaultMergeAcrossStripes},
	}
	for _, f := range faults {
		for seed := int64(1); seed <= 4; seed++ {
			t0 := time.Now()
			st, err := stress.RunCompact(stress.CompactConfig{Seed: seed, Ops: 4000,
				OnOpen: func(d *db.DB) { db.SetCompactionFault(d, f.fault) }})
			if f.fault == db.CompactionFaultNone {
				require.NoError(t, err, "seed %d without a planted fault", seed)
				continue
			}
			require.Error(t, err, "%s, seed %d: not caught (%s)", f.name, seed, st)
			require.True(t, errors.Is(err, stress.ErrCompactMismatch), "%s, seed %d: %v", f.name, seed, err)
			require.Contains(t, err.Error(), "seed ")
			t.Logf("%s, seed %d: caught at op %d in %s", f.name, seed, st.FailedAtOp, time.Since(t0).Round(time.Millisecond))
		}
	}
}
