package db_test

import (
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// highPriRun reads a partitioned database through a small block cache with
// CacheIndexAndFilterBlocks, high priority on or off: a first pass of
// random Gets warms the cache, a second pass is measured. It returns the
// metrics after each pass.
func highPriRun(t *testing.T, dir string, disable bool) (warm, done *db.Metrics) {
	o := partitionedOpts(false)
	o.BlockCacheSize, o.CacheIndexAndFilterBlocks, o.HighPriPoolRatio = 64<<10, true, 0.75
	o.DisableCacheIndexAndFilterBlocksWithHighPriority = disable
	d, err := db.Open(dir, o)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	rng := rand.New(rand.NewSource(7))
	pass := func() {
		for i := 0; i < 4000; i++ {
			_, err := d.Get(cachedFilterKey(rng.Intn(8000)), nil)
			if err != nil {
				require.ErrorIs(t, err, db.ErrNotFound)
			}
		}
	}
	pass()
	warm = d.Metrics()
	pass()
	return warm, d.Metrics()
}

// With CacheIndexAndFilterBlocks and partitioned filters, the partitions go
// into the block cache's high-priority pool by default, and random reads
// whose data blocks far outnumber the cache no longer evict them: once
// warm, no partition is read again, and the cache misses fewer blocks than
// with DisableCacheIndexAndFilterBlocksWithHighPriority, where data blocks
// push the partitions out.
func TestHighPri_PartitionsSurviveDataChurn(t *testing.T) {
	dir := buildPartitionedDB(t, partitionedOpts(true))
	hw, hd := highPriRun(t, dir, false)
	lw, ld := highPriRun(t, dir, true)

	require.Equal(t, int64(48<<10), hd.BlockCacheHighPri.Capacity)
	require.Positive(t, hw.BlockCacheHighPri.Inserts)
	require.Positive(t, hd.BlockCacheHighPri.Size)
	require.LessOrEqual(t, hd.BlockCacheHighPri.Size, hd.BlockCacheHighPri.Capacity)
	require.Equal(t, hw.BlockCacheHighPri.Inserts, hd.BlockCacheHighPri.Inserts,
		"once warm, no index or filter partition is read again")

	require.Zero(t, ld.BlockCacheHighPri.Inserts)
	require.Zero(t, ld.BlockCacheHighPri.Size)
	hMiss := hd.BlockCache.Misses - hw.BlockCache.Misses
	lMiss := ld.BlockCache.Misses - lw.BlockCache.Misses
	t.Logf("second pass misses: high priority %d, without %d; pool %d/%d inserts %d; hits %d", hMiss, lMiss, hd.BlockCacheHighPri.Size, hd.BlockCacheHighPri.Capacity, hd.BlockCacheHighPri.Inserts, hd.BlockCache.Hits)
	require.Less(t, hMiss, lMiss)
}

// The OPTIONS file records cache_index_and_filter_blocks_with_high_priority
// as RocksDB writes it (true by default).
func TestHighPri_OptionsFile(t *testing.T) {
	for _, disable := range []bool{false, true} {
		dir := t.TempDir()
		d, err := db.Open(dir, &db.Options{CreateIfMissing: true, CacheIndexAndFilterBlocks: true,
			DisableCacheIndexAndFilterBlocksWithHighPriority: disable, HighPriPoolRatio: 0.25})
		require.NoError(t, err)
		require.Equal(t, int64(2<<20), d.Metrics().BlockCacheHighPri.Capacity, "a quarter of 8 MiB")
		require.NoError(t, d.Close())
		b, err := os.ReadFile(newestOptionsFile(t, dir))
		require.NoError(t, err)
		want := "  cache_index_and_filter_blocks_with_high_priority=" + map[bool]string{false: "true", true: "false"}[disable] + "\n"
		require.Contains(t, string(b), want)
		// Reopening checks the file against the options in force: no report.
		d, err = db.Open(dir, &db.Options{CacheIndexAndFilterBlocks: true,
			DisableCacheIndexAndFilterBlocksWithHighPriority: disable})
		require.NoError(t, err)
		rep, _ := d.GetProperty(db.PropOptionsFileReport)
		require.False(t, strings.Contains(rep, "high_priority"), "report: %s", rep)
		require.NoError(t, d.Close())
	}
}

func TestHighPri_RatioDefaultAndValidated(t *testing.T) {
	d, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	require.Equal(t, int64(4<<20), d.Metrics().BlockCacheHighPri.Capacity, "half of the default 8 MiB")
	require.NoError(t, d.Close())
	for _, r := range []float64{-0.5, 1.5} {
		_, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true, HighPriPoolRatio: r})
		require.ErrorIs(t, err, db.ErrInvalidArgument)
		require.Contains(t, err.Error(), "HighPriPoolRatio")
	}
}
