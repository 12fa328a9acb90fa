package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, args ...string) *config {
	t.Helper()
	c, err := parseFlags(args, io.Discard)
	require.NoError(t, err)
	return c
}

func TestParseFlags_Defaults(t *testing.T) {
	c := parse(t)
	require.Equal(t, int64(1000000), c.num)
	require.Equal(t, int64(-1), c.reads)
	require.Equal(t, 16, c.keySize)
	require.Equal(t, 100, c.valueSize)
	require.Equal(t, 0.5, c.compRatio)
	require.Equal(t, "snappy", c.compression)
	require.Equal(t, -1, c.bloomBits)
	require.Equal(t, int64(64<<20), c.writeBufferSize)
	require.Equal(t, int64(8<<20), c.cacheSize)
	require.False(t, c.cacheIndexAndFilter)
	require.Equal(t, int64(1), c.batchSize)
	require.Equal(t, 1, c.threads)
	require.True(t, c.fifoAllowCompaction)
	require.True(t, c.concurrentMemWrite)
	require.False(t, c.mmapRead)
	require.Equal(t, "report.csv", c.reportFile)
	require.Equal(t, "", c.db)
	require.NotEmpty(t, c.benchmarks)
}

// Every flag must land in its config field.
func TestParseFlags_EveryFlag(t *testing.T) {
	c := parse(t,
		"-benchmarks=fillseq, readrandom,,stats", "-db=/x", "-num=7", "-reads=8",
		"-writes=9", "-deletes=10", "-duration=11", "-threads=3", "-key_size=20",
		"-value_size=50", "-compression_ratio=0.25", "-compression_type=zstd",
		"-prefix_size=12", "-keys_per_prefix=4", "-bloom_bits=10", "-seed=42",
		"-write_buffer_size=1000", "-max_write_buffer_number=4", "-cache_size=2000",
		"-open_files=100", "-block_size=8192", "-use_existing_db", "-disable_wal",
		"-sync", "-batch_size=5", "-seek_nexts=6", "-prefix_same_as_start",
		"-total_order_seek", "-compaction_style=2",
		"-fifo_compaction_max_table_files_size_mb=100",
		"-fifo_compaction_allow_compaction=false", "-max_background_jobs=5", "-subcompactions=4",
		"-target_file_size_base=3000", "-max_bytes_for_level_base=4000",
		"-max_bytes_for_level_multiplier=8", "-level0_file_num_compaction_trigger=2",
		"-level0_slowdown_writes_trigger=30", "-level0_stop_writes_trigger=40",
		"-disable_auto_compactions", "-histogram", "-statistics",
		"-progress_reports=false", "-ops_between_duration_checks=10",
		"-report_interval_seconds=2", "-report_file=/r.csv", "-report_plot=/p.svg",
		"-merge_operator=max", "-merge_keys=12", "-mergereadpercent=30",
		"-transaction_db=false", "-optimistic_transaction_db=false", "-transaction_sets=7", "-transaction_lock_timeout=250", "-transaction_sleep=9",
		"-allow_concurrent_memtable_write=false", "-cache_index_and_filter_blocks", "-mmap_read",
		"-partition_index_and_filters", "-partition_index", "-metadata_block_size=1024",
		"-cache_high_pri_pool_ratio=0.25", "-num_column_families=3",
		"-num_hot_column_families=1", "-column_family_distribution=100",
		"-enable_blob_files", "-min_blob_size=1024", "-blob_file_size=4096", "-blob_compression_type=snappy",
		"-enable_blob_garbage_collection", "-blob_garbage_collection_age_cutoff=0.5",
		"-blob_garbage_collection_force_threshold=0.75")
	want := config{
		benchmarks: []string{"fillseq", "readrandom", "stats"}, db: "/x", num: 7,
		reads: 8, writes: 9, deletes: 10, duration: 11, threads: 3, keySize: 20,
		valueSize: 50, compRatio: 0.25, compression: "zstd", prefixSize: 12,
		keysPerPrefix: 4, bloomBits: 10, seed: 42, writeBufferSize: 1000,
		maxWriteBufferNumber: 4, cacheSize: 2000, cacheIndexAndFilter: true, openFiles: 100, blockSize: 8192,
		useExistingDB: true, disableWAL: true, sync: true, batchSize: 5,
		seekNexts: 6, prefixSameAsStart: true, totalOrderSeek: true,
		compactionStyle: 2, fifoMaxTableFilesMB: 100, fifoAllowCompaction: false,
		maxBackgroundJobs: 5, subcompactions: 4, targetFileSizeBase: 3000, maxBytesForLevelBase: 4000,
		maxBytesForLevelMult: 8, l0CompactionTrigger: 2, l0SlowdownTrigger: 30,
		l0StopTrigger: 40, disableAutoCompactions: true, histogram: true,
		statistics: true, progressReports: false, opsBetweenChecks: 10,
		reportIntervalSecs: 2, reportFile: "/r.csv", reportPlot: "/p.svg",
		mergeOperator: "max", mergeKeys: 12, mergeReadPercent: 30, mmapRead: true,
		transactionSets: 7, transactionLockTimeout: 250, transactionSleep: 9,
		partitionIndexFilter: true, partitionIndex: true, metadataBlockSize: 1024,
		cacheHighPriRatio: 0.25, numColumnFamilies: 3, numHotColumnFamilies: 1,
		cfDistribution: "100", cfProbs: []int{100},
		enableBlobFiles: true, minBlobSize: 1024, blobFileSize: 4096, blobCompression: "snappy",
		enableBlobGC: true, blobGCAgeCutoff: 0.5, blobGCForceThreshold: 0.75,
	}
	require.Equal(t, want, *c)
}

func TestParseFlags_ReadonlyImpliesUseExisting(t *testing.T) {
	c := parse(t, "-readonly", "-benchmarks=readrandom")
	require.True(t, c.readOnly)
	require.True(t, c.useExistingDB)
}

func TestParseFlags_Errors(t *testing.T) {
	cases := map[string][]string{
		"flag provided but not defined": {"-no_such_flag=1"},
		"unknown benchmark 'fillfoo'":   {"-benchmarks=fillseq,fillfoo"},
		"-compression_type=lz4":         {"-compression_type=lz4"},
		"-compaction_style=1":           {"-compaction_style=1"},
		"-compaction_style=3":           {"-compaction_style=3"},
		"invalid value":                 {"-num=abc"},
		"unexpected arguments":          {"extra"},
		"-prefix_size must be":          {"-prefix_size=20", "-key_size=16"},
		"-batch_size must be":           {"-batch_size=0"},
		"-threads must be":              {"-threads=0"},
		"-compression_ratio must be":    {"-compression_ratio=0"},
		"-report_plot needs":            {"-report_plot=x.svg"},
		"whole number":                  {"-max_bytes_for_level_multiplier=1.5"},
		"writes, but -readonly":         {"-readonly", "-benchmarks=fillrandom"},
		"-cache_high_pri_pool_ratio":    {"-cache_high_pri_pool_ratio=1.5"},
		"-blob_compression_type=lz4":    {"-blob_compression_type=lz4"},
		"must be in (0, 1]":             {"-blob_garbage_collection_age_cutoff=0"},
		"-blob_file_size must be":       {"-blob_file_size=0"},
	}
	for want, args := range cases {
		t.Run(want, func(t *testing.T) {
			_, err := parseFlags(args, io.Discard)
			require.ErrorContains(t, err, want)
		})
	}
}
