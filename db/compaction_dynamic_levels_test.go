package db_test

import (
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// levelFiles returns the number of files of each level.
func levelFiles(d *db.DB) [7]int {
	var n [7]int
	m := d.Metrics()
	for l := range n {
		n[l] = m.Levels[l].NumFiles
	}
	return n
}

// TestDynamicLevelBytes writes a few MiB with small buffers and
// LevelCompactionDynamicLevelBytes on, checks the contents against a model
// after each phase and that L0 compacts into the base level: with under
// 4 MiB of data and L1 at 64 KiB times 4 per level the base level is L3 or
// below, so L1 and L2 stay empty while the last level holds data. It then
// reopens with the option off (L0 fills L1 again) and on again: the data
// the static shape left in L1 and L2 compacts down and reads back right.
// Under -tags invariants every installed version is checked too.
func TestDynamicLevelBytes(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewSource(seed))
	fs := vfs.NewMem()
	opts := func(dynamic bool) *db.Options {
		return &db.Options{
			CreateIfMissing:                  true,
			FS:                               fs,
			WriteBufferSize:                  64 << 10,
			TargetFileSizeBase:               32 << 10,
			MaxBytesForLevelBase:             64 << 10,
			MaxBytesForLevelMultiplier:       4,
			Level0FileNumCompactionTrigger:   2,
			MaxBackgroundJobs:                4,
			LevelCompactionDynamicLevelBytes: dynamic,
			// The model checks' reads would move files down on their own.
			DisableReadTriggeredCompactions: true,
		}
	}
	d, err := db.Open("/db", opts(true))
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()

	keys := make([][]byte, 12000)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key%08d", rng.Intn(1e8)))
	}
	m := testutil.NewModel()
	phase := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			k := keys[rng.Intn(len(keys))]
			if rng.Intn(10) == 0 {
				require.NoError(t, d.Delete(k, nil))
				m.Delete(k)
				continue
			}
			v := []byte(fmt.Sprintf("%d-%0100d", i, rng.Int63()))
			require.NoError(t, d.Put(k, v, nil))
			m.Put(k, v)
		}
		require.NoError(t, d.Flush())
		require.NoError(t, db.WaitForCompactions(d))
		checkView(t, d, nil, m, keys)
	}

	for p := 0; p < 3; p++ {
		phase(6000)
		n := levelFiles(d)
		require.Zero(t, n[1], "phase %d: L1 above the base level: %v", p, n)
		require.Zero(t, n[2], "phase %d: L2 above the base level: %v", p, n)
		require.NotZero(t, n[6], "phase %d: the last level is empty: %v", p, n)
	}

	// Off: L0 compacts into L1 again.
	require.NoError(t, d.Close())
	d, err = db.Open("/db", opts(false))
	require.NoError(t, err)
	checkView(t, d, nil, m, keys)
	phase(6000)
	n := levelFiles(d)
	require.NotZero(t, n[1], "static targets: L0 compacts into L1: %v\n%s", n, d.Metrics())

	// On again: L1 is the first non-empty level and so the base level;
	// what the static shape left there compacts down correctly.
	require.NoError(t, d.Close())
	d, err = db.Open("/db", opts(true))
	require.NoError(t, err)
	checkView(t, d, nil, m, keys)
	phase(6000)
	require.NoError(t, d.CompactRange(nil, nil))
	require.NoError(t, db.WaitForCompactions(d))
	checkView(t, d, nil, m, keys)
	n = levelFiles(d)
	require.NotZero(t, n[6], "%v", n)
	for l := 0; l < 6; l++ {
		require.Zero(t, n[l], "CompactRange leaves everything in the last level: %v", n)
	}
}

// TestDynamicLevelBytesOptionsFile: the OPTIONS file records the option
// under RocksDB's key, and an Open with the other setting reports the
// difference.
func TestDynamicLevelBytesOptionsFile(t *testing.T) {
	fs := vfs.NewMem()
	o := &db.Options{CreateIfMissing: true, FS: fs, LevelCompactionDynamicLevelBytes: true}
	d, err := db.Open("/db", o)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	names, err := fs.List("/db")
	require.NoError(t, err)
	found := false
	for _, n := range names {
		if strings.HasPrefix(n, "OPTIONS-") {
			f, err := fs.Open("/db/" + n)
			require.NoError(t, err)
			data, err := io.ReadAll(f)
			require.NoError(t, f.Close())
			require.NoError(t, err)
			require.Contains(t, string(data), "level_compaction_dynamic_level_bytes=true")
			found = true
		}
	}
	require.True(t, found)

	o.LevelCompactionDynamicLevelBytes = false
	d, err = db.Open("/db", o)
	require.NoError(t, err)
	report, ok := d.GetProperty(db.PropOptionsFileReport)
	require.True(t, ok)
	require.Contains(t, report, "level_compaction_dynamic_level_bytes=true")
	require.NoError(t, d.Close())
}
