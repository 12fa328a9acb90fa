package db_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

func propUint(t *testing.T, d *db.DB, name string) uint64 {
	t.Helper()
	s, ok := d.GetProperty(name)
	require.True(t, ok, name)
	n, err := strconv.ParseUint(s, 10, 64)
	require.NoError(t, err, name)
	return n
}

// TestMetrics checks the Metrics snapshot against what the test did
// (writes, syncs, flushes, compactions, an ingestion, reads), against the
// events of the same work and against GetProperty, which reads the same
// counters.
func TestMetrics(t *testing.T) {
	var mu sync.Mutex
	var flushBytes, compactions, ingestBytes uint64
	var flushes int
	l := &db.EventListener{
		FlushEnd: func(i db.FlushInfo) {
			mu.Lock()
			defer mu.Unlock()
			for _, o := range i.Output {
				flushes++
				flushBytes += o.Size
			}
		},
		CompactionEnd: func(i db.CompactionInfo) {
			mu.Lock()
			defer mu.Unlock()
			if i.Err == nil {
				compactions++
			}
		},
		TableIngested: func(i db.TableIngestInfo) {
			mu.Lock()
			defer mu.Unlock()
			for _, tb := range i.Tables {
				ingestBytes += tb.Size
			}
		},
	}
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, WriteBufferSize: 64 << 10, BloomBitsPerKey: 10,
		DisableAutoCompactions: true, EventListener: l})
	require.NoError(t, err)
	val := make([]byte, 100)
	const n = 2000
	syncs := 0
	for i := 0; i < n; i++ {
		wo := &db.WriteOptions{Sync: i%100 == 0}
		if wo.Sync {
			syncs++
		}
		require.NoError(t, d.Put([]byte(fmt.Sprintf("k%05d", i)), val, wo))
		if i == n/2 {
			require.NoError(t, d.Flush())
		}
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.CompactRange(nil, nil))
	for i := 0; i < n; i += 10 {
		_, err := d.Get([]byte(fmt.Sprintf("k%05d", i)), nil)
		require.NoError(t, err)
		_, err = d.Get([]byte(fmt.Sprintf("k%05d-missing", i)), nil)
		require.ErrorIs(t, err, db.ErrNotFound)
	}
	ext := filepath.Join(t.TempDir(), "ext.sst")
	writeExtFile(t, vfs.Default, ext, []extOp{{key: "z1", value: "a"}})
	require.NoError(t, d.Ingest([]string{ext}, nil))

	m := d.Metrics()
	require.Equal(t, uint64(n), m.Writes.Batches)
	require.Equal(t, uint64(n), m.Writes.Keys)
	require.Equal(t, m.Writes.Bytes, m.WAL.Bytes, "every write went to the WAL")
	require.Equal(t, uint64(syncs), m.WAL.Syncs)
	require.Equal(t, uint64(1), m.Ingest.Count)
	var total uint64
	for level, lm := range m.Levels {
		require.Equal(t, propUint(t, d, fmt.Sprintf("%s%d", db.PropNumFilesAtLevelPrefix, level)), uint64(lm.NumFiles), "L%d", level)
		total += lm.Size
	}
	require.Equal(t, propUint(t, d, db.PropTotalSSTFilesSize), total)
	require.Equal(t, propUint(t, d, db.PropBlockCacheHits), m.BlockCache.Hits)
	require.Equal(t, propUint(t, d, db.PropBlockCacheMisses), m.BlockCache.Misses)
	require.Equal(t, propUint(t, d, db.PropFilterChecks), m.Filter.Checks)
	require.Equal(t, propUint(t, d, db.PropFilterUseful), m.Filter.Useful)
	require.NotZero(t, m.Filter.Useful, "missing keys were filtered")
	require.Equal(t, propUint(t, d, db.PropStallMicros), uint64(m.WriteStall.Duration.Microseconds()))
	require.NotZero(t, m.TableCache.Hits)
	require.NotZero(t, m.TableCache.Misses)
	require.Equal(t, 1+int(propUint(t, d, db.PropNumImmutableMemTable)), m.MemTables.Count)
	require.GreaterOrEqual(t, m.MemTables.Size, propUint(t, d, db.PropCurSizeActiveMemTable))
	require.Equal(t, 1, m.WAL.Files)
	// After the manual compaction L0 is empty (the ingested file goes
	// below it): a read probes one table per non-empty level.
	require.Zero(t, m.Levels[0].NumFiles)
	nonEmpty := 0
	for _, lm := range m.Levels {
		if lm.NumFiles > 0 {
			nonEmpty++
		}
	}
	require.NotZero(t, nonEmpty)
	require.Equal(t, nonEmpty, m.ReadAmp())
	require.Greater(t, m.WriteAmp(), 0.0)

	s := m.String()
	t.Logf("metrics:\n%s", s)
	require.NoError(t, d.Close()) // delivers every event
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, uint64(flushes), m.Flush.Count)
	require.Equal(t, flushBytes, m.Flush.Bytes)
	require.Equal(t, compactions, m.Compact.Count)
	require.Equal(t, ingestBytes, m.Ingest.Bytes)
	require.NotZero(t, m.Compact.ReadBytes)
	require.NotZero(t, m.Compact.WrittenBytes)
	for _, want := range []string{"  L0  |", "  L6  |", "total |", fmt.Sprintf("flush: %d,", m.Flush.Count),
		fmt.Sprintf("WAL: 1 files, "), fmt.Sprintf("%d syncs", syncs), "block cache: ", "table cache: "} {
		require.True(t, strings.Contains(s, want), "%q not in\n%s", want, s)
	}
	// A closed database gives empty metrics.
	require.Zero(t, d.Metrics().Writes.Batches)
}
