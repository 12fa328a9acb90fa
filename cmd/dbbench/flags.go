package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/stratadb/strata/db"
)

// config holds every flag after parsing and validation. Names and defaults
// are db_bench's (RocksDB 7.8.3) unless marked "ours".
type config struct {
	benchmarks    []string
	db            string // "" = a fresh temporary directory, removed at exit
	num           int64
	reads         int64 // < 0 = num
	writes        int64 // < 0 = num
	deletes       int64 // < 0 = num
	duration      int   // seconds; 0 = counts decide
	threads       int
	keySize       int
	valueSize     int
	compRatio     float64
	compression   string // none|snappy|zstd
	prefixSize    int
	keysPerPrefix int64
	bloomBits     int // < 0 = none, as 0
	seed          int64

	writeBufferSize      int64
	maxWriteBufferNumber int
	cacheSize            int64
	cacheIndexAndFilter  bool    // cache_index_and_filter_blocks
	cacheHighPriRatio    float64 // cache_high_pri_pool_ratio
	partitionIndexFilter bool    // partition_index_and_filters
	partitionIndex       bool    // partition_index
	metadataBlockSize    int     // metadata_block_size
	openFiles            int
	blockSize            int
	useExistingDB        bool
	readOnly             bool
	disableWAL           bool
	sync                 bool
	batchSize            int64
	seekNexts            int
	prefixSameAsStart    bool
	totalOrderSeek       bool

	compactionStyle      int // 0 level, 2 fifo
	fifoMaxTableFilesMB  uint64
	fifoAllowCompaction  bool
	maxBackgroundJobs    int
	subcompactions       int
	targetFileSizeBase   int64
	maxBytesForLevelBase int64
	dynamicLevelBytes    bool
	maxBytesForLevelMult float64

	// Integrated BlobDB (db_bench's names and defaults).
	enableBlobFiles        bool
	minBlobSize            uint64
	blobFileSize           uint64
	blobCompression        string // none|snappy|zstd
	enableBlobGC           bool
	blobGCAgeCutoff        float64
	blobGCForceThreshold   float64
	l0CompactionTrigger    int
	l0SlowdownTrigger      int
	l0StopTrigger          int
	disableAutoCompactions bool

	histogram          bool
	statistics         bool
	progressReports    bool
	opsBetweenChecks   int64
	reportIntervalSecs int64
	reportFile         string
	reportPlot         string // ours: SVG of throughput and p99 over time
	cpuProfile         string // ours: write a Go CPU profile of the run
	memProfile         string // ours: write a Go heap profile at the end
	traceFile          string // ours: write a Go execution trace of the run
	mutexProfile       string // ours: write a Go mutex contention profile at the end
	walWriteSyscalls   bool   // ours: WAL by write(2) instead of a shared mapping
	noReadCompactions  bool   // ours: Options.DisableReadTriggeredCompactions
	concurrentMemWrite bool   // allow_concurrent_memtable_write: !Options.DisableConcurrentMemtableWrites
	mmapRead           bool   // mmap_read: Options.AllowMmapReads
	mergeOperator      string // db_bench's -merge_operator name ("" = none)
	mergeKeys          int64  // < 0 = num
	mergeReadPercent   int

	optimisticTxnDB        bool  // optimistic_transaction_db
	transactionDB          bool  // transaction_db
	transactionSets        int   // transaction_sets
	transactionLockTimeout int64 // transaction_lock_timeout, ms
	transactionSleep       int   // transaction_sleep, µs

	numColumnFamilies    int    // num_column_families
	numHotColumnFamilies int    // num_hot_column_families; 0 = all
	cfDistribution       string // column_family_distribution
	cfProbs              []int  // parsed cfDistribution; nil = uniform
}

// benchmarkNames lists every accepted -benchmarks name.
var benchmarkNames = []string{"fillseq", "fillrandom", "overwrite", "fillsync",
	"fillbatch", "readrandom", "readmissing", "readseq", "readreverse",
	"seekrandom", "multireadrandom", "readwhilewriting", "deleterandom",
	"compact", "flush", "stats", "waitforcompaction", "mergerandom", "readrandommergerandom", "randomtransaction"}

// newFlagSet declares every flag on a fresh FlagSet bound to c.
func newFlagSet(c *config, out io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("dbbench", flag.ContinueOnError)
	fs.SetOutput(out)
	benchmarks := fs.String("benchmarks", "fillseq,fillrandom,overwrite,readrandom,readseq,readreverse,seekrandom,multireadrandom,compact,stats",
		"comma-separated benchmarks: "+strings.Join(benchmarkNames, ","))
	fs.StringVar(&c.db, "db", "", "database directory (default: a fresh temporary directory, removed at exit)")
	fs.Int64Var(&c.num, "num", 1000000, "number of key/values to place in the database")
	fs.Int64Var(&c.reads, "reads", -1, "number of read operations; negative means -num")
	fs.Int64Var(&c.writes, "writes", -1, "number of write operations; negative means -num")
	fs.Int64Var(&c.deletes, "deletes", -1, "number of delete operations; negative means -num")
	fs.IntVar(&c.duration, "duration", 0, "seconds for the random-op benchmarks; 0 = -num/-reads decide")
	fs.IntVar(&c.threads, "threads", 1, "number of concurrent threads")
	fs.IntVar(&c.keySize, "key_size", 16, "size of each key")
	fs.IntVar(&c.valueSize, "value_size", 100, "size of each value")
	fs.Float64Var(&c.compRatio, "compression_ratio", 0.5, "values shrink to this fraction when compressed")
	fs.StringVar(&c.compression, "compression_type", "snappy", "none|snappy|zstd")
	fs.IntVar(&c.prefixSize, "prefix_size", 0, "fixed prefix extractor length; 0 = none")
	fs.Int64Var(&c.keysPerPrefix, "keys_per_prefix", 0, "keys per prefix; 0 = keys are plain integers")
	fs.IntVar(&c.bloomBits, "bloom_bits", -1, "bloom filter bits per key; negative or 0 = no filter")
	fs.Int64Var(&c.seed, "seed", 0, "seed base for the random generators; 0 = from the clock")
	fs.Int64Var(&c.writeBufferSize, "write_buffer_size", 64<<20, "memtable bytes before a flush")
	fs.IntVar(&c.maxWriteBufferNumber, "max_write_buffer_number", 2, "memtables before writes stall")
	fs.Int64Var(&c.cacheSize, "cache_size", 8<<20, "block cache bytes; <= 0 = engine default")
	fs.BoolVar(&c.cacheIndexAndFilter, "cache_index_and_filter_blocks", false, "read filter blocks through the block cache instead of pinning them (Options.CacheIndexAndFilterBlocks)")
	fs.Float64Var(&c.cacheHighPriRatio, "cache_high_pri_pool_ratio", 0, "share of the block cache for high-priority index and filter blocks; > 0 also caches them with high priority, as db_bench (Options.HighPriPoolRatio; 0 = DisableCacheIndexAndFilterBlocksWithHighPriority, though the engine's own default is 0.5)")
	fs.BoolVar(&c.partitionIndexFilter, "partition_index_and_filters", false, "partition index and filter blocks (Options.IndexType=IndexTwoLevelSearch, PartitionFilters)")
	fs.BoolVar(&c.partitionIndex, "partition_index", false, "partition index blocks (Options.IndexType=IndexTwoLevelSearch)")
	fs.IntVar(&c.metadataBlockSize, "metadata_block_size", 4096, "target size of index and filter partitions (Options.MetadataBlockSize)")
	fs.IntVar(&c.openFiles, "open_files", -1, "max open table files; <= 0 = engine default")
	fs.IntVar(&c.blockSize, "block_size", 4096, "table data block bytes")
	fs.BoolVar(&c.useExistingDB, "use_existing_db", false, "do not destroy the existing database")
	fs.BoolVar(&c.readOnly, "readonly", false, "open read-only (implies -use_existing_db)")
	fs.BoolVar(&c.disableWAL, "disable_wal", false, "do not write the WAL")
	fs.BoolVar(&c.sync, "sync", false, "sync every write")
	fs.Int64Var(&c.batchSize, "batch_size", 1, "entries per write batch and per MultiGet")
	fs.IntVar(&c.seekNexts, "seek_nexts", 0, "Next() calls after each Seek in seekrandom")
	fs.BoolVar(&c.prefixSameAsStart, "prefix_same_as_start", false, "iterators stop at the end of the Seek key's prefix")
	fs.BoolVar(&c.totalOrderSeek, "total_order_seek", false, "ignore prefix filters on Seek")
	fs.IntVar(&c.compactionStyle, "compaction_style", 0, "0 = level, 2 = fifo")
	fs.Uint64Var(&c.fifoMaxTableFilesMB, "fifo_compaction_max_table_files_size_mb", 0, "FIFO: total table size limit; 0 = engine default (1 GiB)")
	fs.BoolVar(&c.fifoAllowCompaction, "fifo_compaction_allow_compaction", true, "FIFO: merge small L0 files")
	fs.IntVar(&c.maxBackgroundJobs, "max_background_jobs", 2, "concurrent flushes and compactions")
	fs.IntVar(&c.subcompactions, "subcompactions", 1, "max_subcompactions: goroutines one L0 or manual compaction is split over")
	fs.Int64Var(&c.targetFileSizeBase, "target_file_size_base", 64<<20, "compaction output file size")
	fs.Int64Var(&c.maxBytesForLevelBase, "max_bytes_for_level_base", 256<<20, "target size of L1")
	fs.Float64Var(&c.maxBytesForLevelMult, "max_bytes_for_level_multiplier", 10, "size ratio between levels (a whole number)")
	fs.BoolVar(&c.dynamicLevelBytes, "level_compaction_dynamic_level_bytes", false, "size levels from the largest level up; L0 compacts into the base level")
	fs.BoolVar(&c.enableBlobFiles, "enable_blob_files", false, "[Integrated BlobDB] store values of at least -min_blob_size in blob files")
	fs.Uint64Var(&c.minBlobSize, "min_blob_size", 0, "[Integrated BlobDB] smallest value stored in a blob file")
	fs.Uint64Var(&c.blobFileSize, "blob_file_size", 256<<20, "[Integrated BlobDB] size limit of a blob file")
	fs.StringVar(&c.blobCompression, "blob_compression_type", "none", "[Integrated BlobDB] blob compression: none|snappy|zstd")
	fs.BoolVar(&c.enableBlobGC, "enable_blob_garbage_collection", false, "[Integrated BlobDB] relocate the oldest blob files' values in compactions")
	fs.Float64Var(&c.blobGCAgeCutoff, "blob_garbage_collection_age_cutoff", 0.25, "[Integrated BlobDB] fraction of blob files, oldest first, that garbage collection relocates")
	fs.Float64Var(&c.blobGCForceThreshold, "blob_garbage_collection_force_threshold", 1.0, "[Integrated BlobDB] garbage ratio of the oldest blob files that forces their tables' compaction")
	fs.IntVar(&c.l0CompactionTrigger, "level0_file_num_compaction_trigger", 4, "L0 files that start a compaction")
	fs.IntVar(&c.l0SlowdownTrigger, "level0_slowdown_writes_trigger", 20, "L0 files that slow writes")
	fs.IntVar(&c.l0StopTrigger, "level0_stop_writes_trigger", 36, "L0 files that stop writes")
	fs.BoolVar(&c.disableAutoCompactions, "disable_auto_compactions", false, "no background compactions")
	fs.BoolVar(&c.histogram, "histogram", false, "print latency histograms")
	fs.BoolVar(&c.statistics, "statistics", false, "print engine statistics at the end")
	fs.BoolVar(&c.progressReports, "progress_reports", true, "print '... finished N ops' on stderr when it is a terminal")
	fs.Int64Var(&c.opsBetweenChecks, "ops_between_duration_checks", 1000, "ops between -duration clock checks")
	fs.Int64Var(&c.reportIntervalSecs, "report_interval_seconds", 0, "write -report_file every N seconds; 0 = off")
	fs.StringVar(&c.reportFile, "report_file", "report.csv", "per-interval CSV: secs_elapsed,interval_qps,p99_micros")
	fs.StringVar(&c.reportPlot, "report_plot", "", "ours: draw throughput and p99 latency over time into this SVG")
	fs.StringVar(&c.mergeOperator, "merge_operator", "", "merge operator: uint64add, stringappend, stringappendtest, max, put (or a RocksDB class name)")
	fs.Int64Var(&c.mergeKeys, "merge_keys", -1, "distinct keys mergerandom and readrandommergerandom use; negative means -num")
	fs.IntVar(&c.mergeReadPercent, "mergereadpercent", 70, "readrandommergerandom: percentage of merges (the rest are reads)")
	fs.BoolVar(&c.optimisticTxnDB, "optimistic_transaction_db", false, "randomtransaction: optimistic transactions (RocksDB's OptimisticTransactionDB)")
	fs.BoolVar(&c.transactionDB, "transaction_db", false, "randomtransaction: pessimistic transactions (RocksDB's TransactionDB)")
	fs.IntVar(&c.transactionSets, "transaction_sets", 2, "randomtransaction: keys (one per set) each transaction modifies; max 9999")
	fs.Int64Var(&c.transactionLockTimeout, "transaction_lock_timeout", 100, "with -transaction_db: lock wait timeout in milliseconds before a transaction waiting on a lock fails")
	fs.IntVar(&c.transactionSleep, "transaction_sleep", 0, "randomtransaction: max microseconds to sleep between reading and writing a value (RocksDB 7.8's db_bench ignores it)")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "ours: write a Go CPU profile (go tool pprof) of the whole run to this file")
	fs.StringVar(&c.traceFile, "trace", "", "ours: write a Go execution trace (go tool trace) of the whole run to this file")
	fs.StringVar(&c.mutexProfile, "mutexprofile", "", "ours: sample every mutex contention (runtime.SetMutexProfileFraction(1)) and write the profile (go tool pprof) to this file at the end")
	fs.StringVar(&c.memProfile, "memprofile", "", "ours: write a Go heap profile (go tool pprof; inuse and alloc figures) to this file after the last benchmark, with the database open")
	fs.BoolVar(&c.walWriteSyscalls, "wal_write_syscalls", false, "ours: write the WAL with one write(2) per commit group instead of copying into a shared mapping of it (Options.WALWriteSyscalls)")
	fs.BoolVar(&c.mmapRead, "mmap_read", false, "read table files through memory mappings instead of pread (Options.AllowMmapReads, RocksDB's allow_mmap_reads)")
	fs.BoolVar(&c.concurrentMemWrite, "allow_concurrent_memtable_write", true, "writers that meet in the commit pipeline insert their batches into the memtable concurrently (false: one at a time, Options.DisableConcurrentMemtableWrites)")
	fs.BoolVar(&c.noReadCompactions, "disable_read_triggered_compactions", false, "ours: no read-triggered (seek) compactions, LevelDB's allowed_seeks rule (Options.DisableReadTriggeredCompactions)")
	fs.IntVar(&c.numColumnFamilies, "num_column_families", 1, "number of column families: \"default\", then column_family_name_000001, ...")
	fs.IntVar(&c.numHotColumnFamilies, "num_hot_column_families", 0, "column families taking the operations at a time; write benchmarks create the next set at each of num_column_families/num_hot_column_families stages (0 = all of them, from the start)")
	fs.StringVar(&c.cfDistribution, "column_family_distribution", "", "comma-separated percentages, summing to 100, one per hot column family: the share of keys each takes (default: uniform)")
	return fs, benchmarks
}

// parseFlags parses db_bench-style arguments and validates them. Unknown
// flags, unknown benchmarks and values this engine does not support are
// errors.
func parseFlags(args []string, out io.Writer) (*config, error) {
	c := &config{}
	fs, benchmarks := newFlagSet(c, out)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	for _, name := range strings.Split(*benchmarks, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if !slices.Contains(benchmarkNames, name) {
			return nil, fmt.Errorf("unknown benchmark '%s' (supported: %s)", name, strings.Join(benchmarkNames, ","))
		}
		c.benchmarks = append(c.benchmarks, name)
	}
	if c.readOnly {
		c.useExistingDB = true
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// validate rejects values the engine or the generators cannot honour.
func (c *config) validate() error {
	switch c.compression {
	case "none", "snappy", "zstd":
	default:
		return fmt.Errorf("-compression_type=%s is not supported (none|snappy|zstd)", c.compression)
	}
	switch c.blobCompression {
	case "none", "snappy", "zstd":
	default:
		return fmt.Errorf("-blob_compression_type=%s is not supported (none|snappy|zstd)", c.blobCompression)
	}
	if !(c.blobGCAgeCutoff > 0 && c.blobGCAgeCutoff <= 1) || !(c.blobGCForceThreshold > 0 && c.blobGCForceThreshold <= 1) {
		return fmt.Errorf("-blob_garbage_collection_age_cutoff and -blob_garbage_collection_force_threshold must be in (0, 1]")
	}
	if c.blobFileSize == 0 {
		return fmt.Errorf("-blob_file_size must be positive")
	}
	if c.compactionStyle != 0 && c.compactionStyle != 2 {
		return fmt.Errorf("-compaction_style=%d is not supported (0 = level, 2 = fifo)", c.compactionStyle)
	}
	checks := []struct {
		bad bool
		msg string
	}{
		{c.num < 0, "-num must be >= 0"},
		{c.threads < 1, "-threads must be >= 1"},
		{c.keySize < 1, "-key_size must be >= 1"},
		{c.valueSize < 0, "-value_size must be >= 0"},
		{c.compRatio <= 0 || c.compRatio > 1, "-compression_ratio must be in (0, 1]"},
		{c.prefixSize < 0 || c.prefixSize > c.keySize, "-prefix_size must be in [0, key_size]"},
		{c.keysPerPrefix < 0, "-keys_per_prefix must be >= 0"},
		{c.batchSize < 1, "-batch_size must be >= 1"},
		{c.seekNexts < 0, "-seek_nexts must be >= 0"},
		{c.duration < 0, "-duration must be >= 0"},
		{c.writeBufferSize < 0 || c.writeBufferSize > math.MaxInt32*2, "-write_buffer_size out of range"},
		{c.maxBytesForLevelMult < 1 || c.maxBytesForLevelMult != math.Trunc(c.maxBytesForLevelMult), "-max_bytes_for_level_multiplier must be a whole number >= 1"},
		{c.opsBetweenChecks < 1, "-ops_between_duration_checks must be >= 1"},
		{c.reportIntervalSecs < 0, "-report_interval_seconds must be >= 0"},
		{c.reportPlot != "" && c.reportIntervalSecs == 0, "-report_plot needs -report_interval_seconds > 0"},
		{c.fifoMaxTableFilesMB > math.MaxInt64>>20, "-fifo_compaction_max_table_files_size_mb out of range"},
		{c.mergeOperator != "" && db.MergeOperatorByName(c.mergeOperator) == nil, "-merge_operator=" + c.mergeOperator + " is not a known operator"},
		{c.mergeReadPercent < 0 || c.mergeReadPercent > 100, "-mergereadpercent must be in [0, 100]"},
		{c.transactionSets < 1 || c.transactionSets > 9999, "-transaction_sets must be in [1, 9999]"},
		{c.transactionLockTimeout < 0, "-transaction_lock_timeout must be >= 0"},
		{c.transactionSleep < 0, "-transaction_sleep must be >= 0"},
		{c.optimisticTxnDB && c.transactionDB, "-optimistic_transaction_db and -transaction_db exclude each other"},
		{(c.optimisticTxnDB || c.transactionDB) && c.disableWAL, "-disable_wal is not supported with transactions"},
		{!(c.cacheHighPriRatio >= 0 && c.cacheHighPriRatio <= 1), "-cache_high_pri_pool_ratio must be in [0, 1]"},
	}
	for _, ch := range checks {
		if ch.bad {
			return fmt.Errorf("%s", ch.msg)
		}
	}
	if err := c.parseFamilies(); err != nil {
		return err
	}
	if c.readOnly {
		for _, b := range c.benchmarks {
			if isWriteBenchmark(b) {
				return fmt.Errorf("benchmark %s writes, but -readonly is set", b)
			}
		}
	}
	return nil
}

// isWriteBenchmark reports whether a benchmark modifies the database.
func isWriteBenchmark(name string) bool {
	switch name {
	case "fillseq", "fillrandom", "overwrite", "fillsync", "fillbatch",
		"readwhilewriting", "deleterandom", "compact", "flush",
		"mergerandom", "readrandommergerandom", "randomtransaction":
		return true
	}
	return false
}
