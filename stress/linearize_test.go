package stress

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stretchr/testify/require"
)

// linHistories is the number of histories a test checks: a few dozen by
// default, 1,000 with STRATA_LONG.
func linHistories(short int) int {
	if testutil.Long() {
		return 1000
	}
	return short
}

func TestLinearizeHistories(t *testing.T) {
	st, err := RunLinearize(LinConfig{Seed: 11, Histories: linHistories(24), VisualizeDir: t.TempDir()})
	require.NoError(t, err)
	t.Logf("%s", st)
	require.Equal(t, linHistories(24), st.Histories)
	require.Positive(t, st.Background, "background Flush/CompactRange/SetOptions never ran")
	require.Positive(t, st.WithTables, "no history flushed a table")
}

func TestLinearizePointOnlyPartitionsByKey(t *testing.T) {
	cfg := LinConfig{Seed: 12, Histories: linHistories(8), PointOnly: true, Groups: 2, GroupKeys: 4, OpsPerClient: 60}
	st, err := RunLinearize(cfg)
	require.NoError(t, err)
	t.Logf("%s", st)
	// Single-key operations on 8 keys: one partition per key touched.
	require.Greater(t, st.Partitions, 4*st.Histories)
}

// op builds a history entry.
func linOp(client int, call, ret int64, in *linInput, out *linOutput) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

func TestLinearizeCheckerRejectsWrongHistories(t *testing.T) {
	put := func(slot int, v uint32) *linInput { return &linInput{kind: linPut, slot: slot, val: v} }
	get := func(slot int) *linInput { return &linInput{kind: linGet, slot: slot} }
	check := func(h []porcupine.Operation) porcupine.CheckResult {
		res, err := CheckHistory(h, 10*time.Second, "")
		require.NoError(t, err)
		return res
	}

	// A read that returns the older value after the newer write completed.
	stale := []porcupine.Operation{
		linOp(0, 0, 10, put(0, 1), nil),
		linOp(0, 20, 30, put(0, 2), nil),
		linOp(1, 40, 50, get(0), &linOutput{val: 1}),
	}
	require.Equal(t, porcupine.Illegal, check(stale))
	// The same read overlapping the second write is fine.
	concurrent := []porcupine.Operation{
		linOp(0, 0, 10, put(0, 1), nil),
		linOp(0, 20, 45, put(0, 2), nil),
		linOp(1, 40, 50, get(0), &linOutput{val: 1}),
	}
	require.Equal(t, porcupine.Ok, check(concurrent))

	// A value that was never written.
	require.Equal(t, porcupine.Illegal, check([]porcupine.Operation{
		linOp(0, 0, 10, put(0, 1), nil),
		linOp(1, 20, 30, get(0), &linOutput{val: 7}),
	}))

	// A scan that sees half of a batch, even while the batch is in flight:
	// scans are atomic reads and batches atomic writes.
	batch := &linInput{kind: linBatch, batch: []linInput{*put(0, 1), *put(1, 2)}}
	scan := &linInput{kind: linScan, lo: 0, hi: 4, limit: 4}
	require.Equal(t, porcupine.Illegal, check([]porcupine.Operation{
		linOp(0, 0, 100, batch, nil),
		linOp(1, 10, 20, scan, &linOutput{scan: []linKV{{0, 1}}}),
	}))
	require.Equal(t, porcupine.Ok, check([]porcupine.Operation{
		linOp(0, 0, 100, batch, nil),
		linOp(1, 10, 20, scan, &linOutput{scan: []linKV{{0, 1}, {1, 2}}}),
	}))
	// MultiGet is atomic too: it cannot see the second key of the batch
	// without the first.
	mg := &linInput{kind: linMultiGet, slots: []int{0, 1}}
	require.Equal(t, porcupine.Illegal, check([]porcupine.Operation{
		linOp(0, 0, 100, batch, nil),
		linOp(1, 10, 20, mg, &linOutput{vals: []uint32{0, 2}}),
	}))
	// A reverse scan with a limit returns the last keys first; a range
	// delete that completed before it hides them.
	del := &linInput{kind: linDelRange, lo: 1, hi: 3}
	rev := &linInput{kind: linScan, lo: 0, hi: 4, limit: 1, reverse: true}
	require.Equal(t, porcupine.Illegal, check([]porcupine.Operation{
		linOp(0, 0, 10, batch, nil),
		linOp(0, 20, 30, del, nil),
		linOp(1, 40, 50, rev, &linOutput{scan: []linKV{{1, 2}}}),
	}))
	require.Equal(t, porcupine.Ok, check([]porcupine.Operation{
		linOp(0, 0, 10, batch, nil),
		linOp(0, 20, 30, del, nil),
		linOp(1, 40, 50, rev, &linOutput{scan: []linKV{{0, 1}}}),
	}))
}

// staleKV is a database with an injected bug: after a Put, Get sometimes
// returns the value the key had before it.
type staleKV struct {
	*db.DB
	mu   sync.Mutex
	rng  *rand.Rand
	prev map[string][]byte // nil value: the key was absent
}

func (s *staleKV) Put(key, value []byte, wo *db.WriteOptions) error {
	old, err := s.DB.Get(key, nil)
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		return err
	}
	if err := s.DB.Put(key, value, wo); err != nil {
		return err
	}
	s.mu.Lock()
	s.prev[string(key)] = old
	s.mu.Unlock()
	return nil
}

func (s *staleKV) Get(key []byte, ro *db.ReadOptions) ([]byte, error) {
	s.mu.Lock()
	old, ok := s.prev[string(key)]
	stale := ok && s.rng.Intn(2) == 0
	s.mu.Unlock()
	if !stale {
		return s.DB.Get(key, ro)
	}
	if old == nil {
		return nil, errors.Wrapf(db.ErrNotFound, "key %q", key)
	}
	return old, nil
}

func TestLinearizeCatchesInjectedStaleReads(t *testing.T) {
	dir := t.TempDir()
	cfg := LinConfig{
		Seed: 13, Histories: 10, VisualizeDir: dir,
		Wrap: func(d *db.DB) KV {
			return &staleKV{DB: d, rng: rand.New(rand.NewSource(1)), prev: map[string][]byte{}}
		},
	}
	_, err := RunLinearize(cfg)
	require.Error(t, err)
	require.True(t, errors.Is(err, ErrNotLinearizable), "%v", err)
	vis, err2 := filepath.Glob(filepath.Join(dir, "linearize-*.html"))
	require.NoError(t, err2)
	require.Len(t, vis, 1, "%v", err)
	fi, err2 := os.Stat(vis[0])
	require.NoError(t, err2)
	require.Positive(t, fi.Size())
	// The text dump names the rejected partition's operations.
	txt, err2 := os.ReadFile(strings.TrimSuffix(vis[0], ".html") + ".txt")
	require.NoError(t, err2)
	require.Contains(t, string(txt), "is not linearizable")
	require.Contains(t, string(txt), "get(")
}

// TestLinearizeCheckerTransactions: the model treats a transactional
// read-modify-write as one atomic step, so a lost update (two transactions
// in turn both reading the state before the first one's write) is illegal,
// and the same two reading in turn are legal.
func TestLinearizeCheckerTransactions(t *testing.T) {
	first := &linInput{kind: linTxn, slot: 0, wslot: 0, val: 1}
	second := &linInput{kind: linTxn, slot: 0, wslot: 0, val: 2}
	lost := []porcupine.Operation{
		linOp(0, 0, 10, first, &linOutput{val: 0}),
		linOp(1, 20, 30, second, &linOutput{val: 0}),
	}
	res, err := CheckHistory(lost, 10*time.Second, "")
	require.NoError(t, err)
	require.Equal(t, porcupine.Illegal, res)
	ok := []porcupine.Operation{
		linOp(0, 0, 10, first, &linOutput{val: 0}),
		linOp(1, 20, 30, second, &linOutput{val: 1}),
	}
	res, err = CheckHistory(ok, 10*time.Second, "")
	require.NoError(t, err)
	require.Equal(t, porcupine.Ok, res)
}
