package stress

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStressNewOps is a short run with merge, single delete, ingestion,
// checkpoints and iterator refresh at high rates; each must have run.
func TestStressNewOps(t *testing.T) {
	c := memConfig(t)
	c.OpsPerThread = 1000 * scale()
	c.MergeOneIn, c.SingleDeleteOneIn, c.IngestOneIn, c.CheckpointOneIn, c.IterRefreshOneIn = 4, 6, 60, 400, 2
	r := runStress(t, c)
	for name, n := range map[string]int64{"merges": r.Stats.Merges.Load(), "single deletes": r.Stats.SingleDeletes.Load(),
		"ingests": r.Stats.Ingests.Load(), "checkpoints": r.Stats.Checkpoints.Load(), "refreshes": r.Stats.Refreshes.Load()} {
		require.Positive(t, n, name)
	}
}

func write(o *Oracle, w Write, ack bool) uint32 {
	ws := []Write{w}
	op, _ := o.Begin(ws)
	if ack {
		o.Commit(op, ws)
	} else {
		o.Fail(op, ws)
	}
	return ws[0].Version
}

func concat(i int, vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = append(b, Value(i, v, 1)...)
	}
	return b
}

// TestCheckMerged pins the oracle's rules for merged values.
func TestCheckMerged(t *testing.T) {
	o := NewOracle(4)
	const k = 1
	write(o, Write{Key: k}, true)               // 1 put
	write(o, Write{Key: k, Merge: true}, true)  // 2 merge
	write(o, Write{Key: k, Merge: true}, false) // 3 merge, failed
	write(o, Write{Key: k, Merge: true}, true)  // 4 merge
	s := o.State(k)
	require.NoError(t, o.CheckMerged(k, s, s, concat(k, 1, 2, 4), 1))
	require.NoError(t, o.CheckMerged(k, s, s, concat(k, 1, 2, 3, 4), 1))
	require.ErrorContains(t, o.CheckMerged(k, s, s, concat(k, 1, 4), 1), "acknowledged merge 2 is missing")
	require.ErrorContains(t, o.CheckMerged(k, s, s, concat(k, 2, 4), 1), "merged onto nothing")
	require.ErrorContains(t, o.CheckMerged(k, s, s, concat(k, 1, 2), 1), "read version 2")
	require.Error(t, o.CheckMerged(k, s, s, concat(k, 1, 2, 4)[:30], 1))
	require.Error(t, o.CheckMerged(k, s, s, concat(k+1, 1, 2, 4), 1))

	write(o, Write{Key: k, Del: true}, true)   // 5 delete
	write(o, Write{Key: k, Merge: true}, true) // 6 merge onto nothing
	s = o.State(k)
	require.NoError(t, o.CheckMerged(k, s, s, concat(k, 6), 1))
	require.ErrorContains(t, o.CheckMerged(k, s, s, concat(k, 4, 6), 1), "kind")
	require.False(t, o.SingleDeleteOK(k))
}

// TestSingleDeleteOK: a single delete is allowed only after exactly one
// acknowledged put since an acknowledged delete (or the start).
func TestSingleDeleteOK(t *testing.T) {
	o := NewOracle(4)
	require.False(t, o.SingleDeleteOK(0)) // never written
	write(o, Write{Key: 0}, true)
	require.True(t, o.SingleDeleteOK(0))
	write(o, Write{Key: 0}, true) // a second put
	require.False(t, o.SingleDeleteOK(0))
	write(o, Write{Key: 0, Del: true, Single: false}, true)
	write(o, Write{Key: 0}, false) // failed put
	require.False(t, o.SingleDeleteOK(0))
	write(o, Write{Key: 0, Del: true}, true)
	write(o, Write{Key: 0}, true)
	require.True(t, o.SingleDeleteOK(0))
	write(o, Write{Key: 0, Del: true, Single: true}, true)
	write(o, Write{Key: 0}, true)
	require.True(t, o.SingleDeleteOK(0))
	write(o, Write{Key: 0, Merge: true}, true)
	require.False(t, o.SingleDeleteOK(0))
}

// TestExpectedLogKeepsKindsAndHistory: the expected-state log round-trips
// write kinds and, through a checkpoint, the history merged reads are
// checked against; an in-flight merge is uncertain after loading.
func TestExpectedLogKeepsKindsAndHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "expected")
	o := NewOracle(3)
	require.NoError(t, o.Persist(path))
	write(o, Write{Key: 2}, true)
	write(o, Write{Key: 2, Merge: true}, true)
	require.NoError(t, o.CloseLog())
	o2, inflight, err := LoadOracle(path, 3)
	require.NoError(t, err)
	require.Empty(t, inflight)
	s := o2.State(2)
	require.NoError(t, o2.CheckMerged(2, s, s, concat(2, 1, 2), 1))
	require.Error(t, o2.CheckMerged(2, s, s, concat(2, 2), 1))

	require.NoError(t, o2.Persist(path)) // a checkpoint with the history
	ws := []Write{{Key: 2, Merge: true}, {Key: 1, Del: true, Single: true}}
	_, err = o2.Begin(ws) // in flight at a "crash"
	require.NoError(t, err)
	require.NoError(t, o2.CloseLog())
	o3, inflight, err := LoadOracle(path, 3)
	require.NoError(t, err)
	require.Len(t, inflight, 1)
	require.True(t, inflight[0].Writes[0].Merge)
	require.True(t, inflight[0].Writes[1].Del && inflight[0].Writes[1].Single)
	s = o3.State(2)
	require.NoError(t, o3.CheckMerged(2, s, s, concat(2, 1, 2), 1))
	require.NoError(t, o3.CheckMerged(2, s, s, concat(2, 1, 2, 3), 1))
	require.Error(t, o3.CheckMerged(2, s, s, concat(2, 1, 3), 1))
}
