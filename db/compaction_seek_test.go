package db_test

import (
	"fmt"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/invariants"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// Read-triggered (seek) compactions: see Options.DisableReadTriggeredCompactions.

const seekKeys = 2000

func seekKey(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }

func seekVal(i, gen int) string { return fmt.Sprintf("value-%d-%d", i, gen) }

// openSeekDB builds a DB whose L1 holds keys [0, seekKeys) and whose one
// L0 file, small (its seek budget is the minimum, 100), holds new values of
// the first and the last key: every Get of another key reads the L0 file's
// data (unless a filter excludes it), misses, then reads L1.
func openSeekDB(t *testing.T, o db.Options) *db.DB {
	t.Helper()
	o.FS = vfs.NewMem()
	o.CreateIfMissing = true
	d, err := db.Open("/db", &o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	for i := 0; i < seekKeys; i++ {
		require.NoError(t, d.Put(seekKey(i), []byte(seekVal(i, 1)), nil))
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.CompactRange(nil, nil))
	require.NoError(t, d.Put(seekKey(0), []byte(seekVal(0, 2)), nil))
	require.NoError(t, d.Put(seekKey(seekKeys-1), []byte(seekVal(seekKeys-1, 2)), nil))
	require.NoError(t, d.Flush())
	require.NoError(t, db.WaitForCompactions(d))
	m := d.Metrics()
	require.Equal(t, 1, m.Levels[0].NumFiles)
	require.Positive(t, m.Levels[1].NumFiles)
	return d
}

// getSeek reads key i and checks the answer.
func getSeek(t *testing.T, d *db.DB, i int) {
	t.Helper()
	want := seekVal(i, 1)
	if i == 0 || i == seekKeys-1 {
		want = seekVal(i, 2)
	}
	v, err := d.Get(seekKey(i), nil)
	require.NoError(t, err, "key %d", i)
	require.Equal(t, want, string(v), "key %d", i)
}

// getsThroughL0 reads n keys that are in L1 only, each through the L0 file.
func getsThroughL0(t *testing.T, d *db.DB, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		getSeek(t, d, 1+i%(seekKeys-2))
	}
}

func TestSeekCompaction_CompactsL0AfterBudget(t *testing.T) {
	d := openSeekDB(t, db.Options{})
	// Gets the L0 file answers itself, and reads of missing keys past its
	// range, cost it nothing.
	for i := 0; i < 300; i++ {
		getSeek(t, d, 0)
		_, err := d.Get([]byte("zzz"), nil)
		require.ErrorIs(t, err, db.ErrNotFound)
	}
	// 99 wasted seeks: the budget (100) is not spent.
	getsThroughL0(t, d, 0, 99)
	require.NoError(t, db.WaitForCompactions(d))
	m := d.Metrics()
	require.Equal(t, 1, m.Levels[0].NumFiles)
	require.Zero(t, m.Compact.ReadTriggered)

	// The 100th spends it: the L0 file is compacted into L1.
	getsThroughL0(t, d, 99, 1)
	require.NoError(t, db.WaitForCompactions(d))
	m = d.Metrics()
	require.Zero(t, m.Levels[0].NumFiles)
	require.Equal(t, uint64(1), m.Compact.ReadTriggered)

	// Every answer is still right, and L1 answers alone: no more charges.
	for i := 0; i < seekKeys; i++ {
		getSeek(t, d, i)
	}
	require.NoError(t, db.WaitForCompactions(d))
	require.Equal(t, uint64(1), d.Metrics().Compact.ReadTriggered)
}

func TestSeekCompaction_Disabled(t *testing.T) {
	d := openSeekDB(t, db.Options{DisableReadTriggeredCompactions: true})
	getsThroughL0(t, d, 0, 1000)
	require.NoError(t, db.WaitForCompactions(d))
	m := d.Metrics()
	require.Equal(t, 1, m.Levels[0].NumFiles)
	require.Zero(t, m.Compact.ReadTriggered)
	require.Equal(t, uint64(1), m.Compact.Count, "only the CompactRange of the setup")
}

func TestSeekCompaction_NotWithAutoCompactionsDisabled(t *testing.T) {
	d := openSeekDB(t, db.Options{DisableAutoCompactions: true})
	getsThroughL0(t, d, 0, 1000)
	require.NoError(t, db.WaitForCompactions(d))
	m := d.Metrics()
	require.Equal(t, 1, m.Levels[0].NumFiles)
	require.Zero(t, m.Compact.ReadTriggered)

	// The spent budget is remembered: turning automatic compactions back
	// on runs the read-triggered compaction.
	require.NoError(t, d.SetOptions(map[string]string{"disable_auto_compactions": "false"}))
	require.NoError(t, db.WaitForCompactions(d))
	m = d.Metrics()
	require.Zero(t, m.Levels[0].NumFiles)
	require.Equal(t, uint64(1), m.Compact.ReadTriggered)
	getsThroughL0(t, d, 0, seekKeys)
}

func TestSeekCompaction_FilterExcludedTablesNotCharged(t *testing.T) {
	d := openSeekDB(t, db.Options{BloomBitsPerKey: 10})
	// The L0 file's filter holds two keys: at about 1% false positives,
	// fewer than 100 of these Gets read its data.
	getsThroughL0(t, d, 0, 2000)
	require.NoError(t, db.WaitForCompactions(d))
	m := d.Metrics()
	require.Equal(t, 1, m.Levels[0].NumFiles)
	require.Zero(t, m.Compact.ReadTriggered)
	require.GreaterOrEqual(t, m.Filter.Useful, uint64(1900))
}

func TestSeekCompaction_GetAllocatesOnlyItsResult(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	if invariants.Enabled {
		t.Skip("block-cache handles are tracked, an allocation each")
	}
	d := openSeekDB(t, db.Options{})
	k := seekKey(5)
	// 51 charges (a warm-up run and 50): within the L0 file's budget of 100.
	allocs := testing.AllocsPerRun(50, func() {
		v, err := d.Get(k, nil)
		if err != nil || len(v) == 0 {
			panic(fmt.Sprintf("Get: %q %v", v, err))
		}
	})
	require.Equal(t, 1.0, allocs)
	require.Zero(t, d.Metrics().Compact.ReadTriggered)
}

// Concurrent Gets spend the budget together: the file is recorded and
// compacted once, while every answer stays right. Run it with -race.
func TestSeekCompaction_ConcurrentGets(t *testing.T) {
	d := openSeekDB(t, db.Options{})
	const readers, perReader = 4, 300
	errs := make(chan error, readers)
	for r := 0; r < readers; r++ {
		go func(r int) {
			for n := 0; n < perReader; n++ {
				i := 1 + (r*perReader+n)%(seekKeys-2)
				v, err := d.Get(seekKey(i), nil)
				if err == nil && string(v) != seekVal(i, 1) {
					err = fmt.Errorf("key %d: got %q", i, v)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}(r)
	}
	for r := 0; r < readers; r++ {
		require.NoError(t, <-errs)
	}
	require.NoError(t, db.WaitForCompactions(d))
	m := d.Metrics()
	require.Zero(t, m.Levels[0].NumFiles)
	require.Equal(t, uint64(1), m.Compact.ReadTriggered)
	getsThroughL0(t, d, 0, seekKeys)
}

// A size-triggered compaction goes before a read-triggered one; the
// candidate it compacts away is then forgotten.
func TestSeekCompaction_SizeTriggeredFirst(t *testing.T) {
	d := openSeekDB(t, db.Options{DisableAutoCompactions: true})
	getsThroughL0(t, d, 0, 200)
	require.NoError(t, d.SetOptions(map[string]string{
		"level0_file_num_compaction_trigger": "1", "disable_auto_compactions": "false"}))
	require.NoError(t, db.WaitForCompactions(d))
	m := d.Metrics()
	require.Zero(t, m.Levels[0].NumFiles)
	require.Zero(t, m.Compact.ReadTriggered)
	require.Equal(t, uint64(2), m.Compact.Count, "setup's CompactRange and the L0 compaction")
	getsThroughL0(t, d, 0, seekKeys)
}
