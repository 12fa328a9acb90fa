package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

func TestDBOptions_Mapping(t *testing.T) {
	c := parse(t, "-use_existing_db", "-readonly", "-write_buffer_size=1000",
		"-max_write_buffer_number=3", "-bloom_bits=10", "-prefix_size=12",
		"-compression_type=zstd", "-compaction_style=2",
		"-fifo_compaction_max_table_files_size_mb=5", "-fifo_compaction_allow_compaction=false",
		"-disable_auto_compactions", "-cache_size=2000", "-open_files=50", "-block_size=8192",
		"-level0_file_num_compaction_trigger=2", "-level0_slowdown_writes_trigger=3",
		"-level0_stop_writes_trigger=4", "-target_file_size_base=5000",
		"-max_bytes_for_level_base=6000", "-max_bytes_for_level_multiplier=7",
		"-max_background_jobs=8", "-subcompactions=3", "-wal_write_syscalls", "-benchmarks=readrandom",
		"-level_compaction_dynamic_level_bytes", "-enable_blob_files", "-min_blob_size=512",
		"-blob_file_size=9000", "-blob_compression_type=zstd", "-enable_blob_garbage_collection",
		"-blob_garbage_collection_age_cutoff=0.5", "-blob_garbage_collection_force_threshold=0.8")
	o := dbOptions(c)
	require.NotNil(t, o.PrefixExtractor)
	require.Equal(t, "rocksdb.FixedPrefix.12", o.PrefixExtractor.Name())
	o.PrefixExtractor = nil
	require.Equal(t, db.Options{
		CreateIfMissing: false, ReadOnly: true, WriteBufferSize: 1000,
		MaxWriteBufferNumber: 3, BloomBitsPerKey: 10, Compression: db.ZstdCompression,
		EnableBlobFiles: true, MinBlobSize: 512, BlobFileSize: 9000, BlobCompressionType: db.ZstdCompression,
		EnableBlobGarbageCollection: true, BlobGarbageCollectionAgeCutoff: 0.5, BlobGarbageCollectionForceThreshold: 0.8,
		CompactionStyle: db.FIFOCompaction, FIFOMaxTableFilesSize: 5 << 20,
		FIFOAllowCompaction: false, DisableAutoCompactions: true, BlockCacheSize: 2000,
		MaxOpenFiles: 50, BlockSize: 8192, Level0FileNumCompactionTrigger: 2,
		Level0SlowdownWritesTrigger: 3, Level0StopWritesTrigger: 4,
		TargetFileSizeBase: 5000, MaxBytesForLevelBase: 6000,
		MaxBytesForLevelMultiplier: 7, MaxBackgroundJobs: 8, MaxSubcompactions: 3, WALWriteSyscalls: true,
		LevelCompactionDynamicLevelBytes:                 true,
		DisableCacheIndexAndFilterBlocksWithHighPriority: true, // -cache_high_pri_pool_ratio=0
	}, *o)

	d := dbOptions(parse(t))
	require.True(t, d.CreateIfMissing)
	require.Equal(t, db.SnappyCompression, d.Compression)
	require.Equal(t, db.LevelCompaction, d.CompactionStyle)
	require.Zero(t, d.BloomBitsPerKey) // -bloom_bits=-1: no filter
	require.Zero(t, d.MaxOpenFiles)    // -open_files=-1: engine default
	require.Nil(t, d.PrefixExtractor)
	require.False(t, d.WALWriteSyscalls) // the WAL is mapped by default
	require.Equal(t, db.NoCompression, dbOptions(parse(t, "-compression_type=none")).Compression)

	p := dbOptions(parse(t, "-partition_index_and_filters", "-metadata_block_size=512"))
	require.Equal(t, db.IndexTwoLevelSearch, p.IndexType)
	require.True(t, p.PartitionFilters)
	require.Equal(t, 512, p.MetadataBlockSize)
	p = dbOptions(parse(t, "-partition_index"))
	require.Equal(t, db.IndexTwoLevelSearch, p.IndexType)
	require.False(t, p.PartitionFilters)
	require.Equal(t, 4096, p.MetadataBlockSize)
	require.Equal(t, db.IndexBinarySearch, d.IndexType)
	require.False(t, d.PartitionFilters)

	// As db_bench, a high-priority pool turns on high priority.
	require.True(t, d.DisableCacheIndexAndFilterBlocksWithHighPriority)
	h := dbOptions(parse(t, "-cache_index_and_filter_blocks", "-cache_high_pri_pool_ratio=0.5"))
	require.False(t, h.DisableCacheIndexAndFilterBlocksWithHighPriority)
	require.Equal(t, 0.5, h.HighPriPoolRatio)
}

// Every benchmark runs against the real engine and prints a result line. The
// 64 KiB write buffer is smaller than fillbatch's 116 KB batches: each gets a
// memtable sized for it (this once hung), and the run flushes many times.
func TestStrata_EveryBenchmark(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	all := "fillseq,fillbatch,fillrandom,overwrite,readrandom,readmissing,readseq,readreverse,seekrandom,multireadrandom,readwhilewriting,deleterandom,compact,flush,stats,fillsync"
	out := runBench(t, "-db="+dir, "-benchmarks="+all, "-num=2000", "-batch_size=3",
		"-write_buffer_size=65536", "-compression_type=snappy", "-bloom_bits=10")
	r := results(out)
	for _, name := range strings.Split(all, ",") {
		if name != "stats" && name != "flush" {
			require.Contains(t, r, name, out)
		}
	}
	require.True(t, strings.HasSuffix(r["readmissing"][3], "(0 of 2000 found)"), r["readmissing"][3])
	require.Equal(t, "1998", r["fillseq"][2]) // whole batches of 3 only, as db_bench
}

// A database filled by one run is read by later runs with -use_existing_db
// and with -readonly; the same seed replays fillrandom's keys, so every
// read finds its key.
func TestStrata_ReuseExistingDB(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	args := []string{"-db=" + dir, "-num=1000", "-prefix_size=8", "-keys_per_prefix=4", "-compression_type=none"}
	runBench(t, append(args, "-benchmarks=fillrandom")...)
	out := runBench(t, append(args, "-use_existing_db", "-benchmarks=fillseq,readrandom,seekrandom")...)
	r := results(out)
	require.Contains(t, out, "fillseq      : skipped (--use_existing_db is true)")
	require.True(t, strings.HasSuffix(r["readrandom"][3], "(1000 of 1000 found)"), r["readrandom"][3])
	out = runBench(t, append(args, "-readonly", "-benchmarks=readrandom,readseq", "-seek_nexts=2")...)
	r = results(out)
	require.True(t, strings.HasSuffix(r["readrandom"][3], "(1000 of 1000 found)"), r["readrandom"][3])
	require.NotEqual(t, "0", r["readseq"][2])
	// The database survived the read-only run untouched.
	out = runBench(t, append(args, "-use_existing_db", "-benchmarks=readrandom")...)
	require.True(t, strings.HasSuffix(results(out)["readrandom"][3], "(1000 of 1000 found)"))
}

// waitforcompaction returns only once nothing is running or due, and the
// write counters behind the write-amp line are db.Metrics' (flushes and
// compactions over user batch bytes).
func TestStrata_WaitForCompactions(t *testing.T) {
	c := parse(t, "-db="+filepath.Join(t.TempDir(), "db"), "-write_buffer_size=262144", "-compression_type=none",
		"-level0_file_num_compaction_trigger=2", "-max_bytes_for_level_base=524288")
	e, err := openStrata(c)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	val := make([]byte, 100)
	for i := range 20000 {
		key := []byte(fmt.Sprintf("%016d", (i*7919)%20000))
		require.NoError(t, e.Write([][]byte{key}, [][]byte{val}, writeOpts{}))
	}
	se := e.(*strataEngine)
	require.NoError(t, se.WaitForCompactions())
	m := se.d.Metrics()
	require.Zero(t, m.Compact.InProgress)
	require.Zero(t, m.Compact.PendingBytes)
	require.LessOrEqual(t, m.MemTables.Count, 1)
	for level, l := range m.Levels {
		require.Less(t, l.Score, 1.0, "L%d\n%s", level, m)
	}
	require.NotZero(t, m.Compact.Count, "the test should compact:\n%s", m)

	wc := se.WriteCounts()
	require.Equal(t, writeCounts{user: m.Writes.Bytes, wal: m.WAL.Bytes, flush: m.Flush.Bytes,
		compact: m.Compact.WrittenBytes}, wc)
	// One Put batch: 12-byte header, tag, two one-byte varints, key, value.
	require.Equal(t, uint64(20000*(12+1+1+16+1+100)), wc.user)
	require.InDelta(t, m.WriteAmp(), wc.writeAmp(), 1e-9) // no ingestions
	require.Greater(t, wc.writeAmp(), 1.0)
}

var writeAmpLine = regexp.MustCompile(`(?m)^strata\.stats: write_amp=(\d+\.\d{3}) user_bytes=(\d+) wal_bytes=(\d+) flush_bytes=(\d+) compact_bytes=(\d+)$`)

// The stats benchmark (and -statistics) end with the one-line write-amp
// summary that scripts/scale.sh greps, after waitforcompaction.
func TestStrata_StatsWriteAmpLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	out := runBench(t, "-db="+dir, "-benchmarks=fillrandom,waitforcompaction,stats", "-num=20000",
		"-write_buffer_size=262144", "-compression_type=none", "-statistics")
	m := writeAmpLine.FindAllStringSubmatch(out, -1)
	require.Len(t, m, 2, out) // stats, then -statistics
	var f [5]float64
	for i := range f {
		v, err := strconv.ParseFloat(m[0][i+1], 64)
		require.NoError(t, err)
		f[i] = v
	}
	require.Equal(t, float64(20000*131), f[1], out)
	require.Equal(t, f[1], f[2], out) // the WAL counts batch bytes too
	require.Positive(t, f[3], out)
	require.InDelta(t, (f[3]+f[4])/f[1], f[0], 0.001, out)
	require.Contains(t, results(out), "fillrandom")
	// The fake engine counts nothing: no line.
	useFake(t)
	out = runBench(t, "-benchmarks=fillseq,waitforcompaction,stats", "-num=100")
	require.NotContains(t, out, "write_amp=")
	require.Contains(t, out, "fake stats")
}
