// Command stress is Strata's crash-test and stress tool, in the spirit of
// RocksDB's db_stress and db_crashtest.py: many goroutines drive the public
// API while an expected-state oracle checks every answer. Modes:
//
//	stress [flags]                  a stress run (on disk, or -mem)
//	stress -crash [flags]           crash cycles: run a child, SIGKILL it, verify
//	stress -powerloss [flags]       crash images of the in-memory FS, verified
//	stress -fault_one_in N [flags]  random I/O errors from errorfs
//	stress -mode=linearize [flags]  concurrent histories checked by porcupine
//	stress -mode=metamorphic [flags] one op sequence under many configurations
//	stress -mode=compact [flags]     constant compactions, snapshots checked exactly
//	stress -mode=bank [flags]        transfers in transactions, total and anomalies checked
//	stress -mode=bank -crash [flags] bank children SIGKILLed, verified after every reopen
//
// See docs/reliability.md. A wrong answer prints the seed, the operation,
// the key, what was expected and what was read, and exits with status 1.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/stress"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("stress", flag.ContinueOnError)
	var c stress.Config
	var compression, style, dir string
	var crash, powerloss, mem, verbose bool
	var crashCycles, killOneIn int
	var crashChild, crashMaxWait time.Duration
	var mode, visualize string
	var histories, linOps, metaOps, metaSeeds int
	fs.StringVar(&mode, "mode", "stress", "stress, linearize, metamorphic, compact or bank")
	var bc stress.BankConfig
	fs.IntVar(&bc.Accounts, "accounts", 100, "bank mode: accounts")
	fs.IntVar(&bc.Readers, "readers", 2, "bank mode: goroutines checking the total in View")
	fs.IntVar(&bc.Transfers, "transfers", 0, "bank mode: committed transfers per worker (0 = until -duration)")
	fs.DurationVar(&bc.PowerLossEvery, "power_loss_every", 0, "bank mode with -mem: verify a crash image (synced data only) this often (0 = never)")
	fs.IntVar(&histories, "histories", 1000, "linearize mode: histories to record and check")
	fs.IntVar(&linOps, "lin_ops_per_client", 100, "linearize mode: tracked operations per client (-threads clients)")
	fs.StringVar(&visualize, "visualize_dir", ".", "linearize mode: where porcupine's visualization of a failing history goes")
	fs.IntVar(&metaOps, "ops", 2000, "metamorphic and compact modes: operations in each sequence")
	fs.IntVar(&metaSeeds, "seeds", 1, "metamorphic and compact modes: seeds to run, from -seed on")
	fs.Int64Var(&c.Seed, "seed", 0, "random seed (0 = from the clock; printed)")
	fs.IntVar(&c.Threads, "threads", 4, "goroutines issuing operations")
	fs.IntVar(&c.OpsPerThread, "ops_per_thread", 2000, "operations per thread (0 = until -duration)")
	fs.DurationVar(&c.Duration, "duration", 0, "stop after this long (0 = no limit)")
	fs.IntVar(&c.MaxKey, "max_key", 1000, "size of the key space")
	fs.IntVar(&c.ValueSizeMult, "value_size_mult", 1, "value length multiplier")
	fs.StringVar(&dir, "db", "", "database directory (default: a new temporary directory)")
	fs.BoolVar(&mem, "mem", false, "run on the in-memory file system")
	fs.IntVar(&c.Reopen, "reopen", 0, "close and reopen (and verify) every N operations; 0 = never")
	fs.StringVar(&compression, "compression", "snappy", "none, snappy or zstd")
	fs.IntVar(&c.BloomBits, "bloom_bits", 10, "bloom filter bits per key (0 = none)")
	fs.BoolVar(&c.CacheIndexAndFilterBlocks, "cache_index_and_filter_blocks", false, "read filter blocks through the block cache (Options.CacheIndexAndFilterBlocks)")
	var highPri bool
	fs.BoolVar(&highPri, "cache_index_and_filter_blocks_with_high_priority", true, "cache index and filter blocks in the block cache's high-priority pool (false: Options.DisableCacheIndexAndFilterBlocksWithHighPriority)")
	fs.Float64Var(&c.HighPriPoolRatio, "cache_high_pri_pool_ratio", 0, "share of the block cache for high-priority blocks (Options.HighPriPoolRatio; 0 = engine default)")
	fs.Int64Var(&c.BlockCacheSize, "cache_size", 0, "block cache bytes (Options.BlockCacheSize; 0 = engine default)")
	fs.BoolVar(&c.PartitionIndexAndFilters, "partition_index_and_filters", false, "write partitioned indexes and filters (256-byte partitions)")
	fs.IntVar(&c.PrefixSize, "prefix_size", 7, "initial extractor fixed:N (0 = none); keys are 8 bytes (see -key_shape)")
	keyShape := fs.String("key_shape", "decimal", "keys: decimal (8 ASCII digits) or binary (8 bytes big-endian, leading zero bytes as in db_bench's keys; -mode stress only)")
	fs.IntVar(&c.WriteBufferSize, "write_buffer_size", 64<<10, "memtable size in bytes")
	fs.StringVar(&style, "compaction_style", "level", "level or fifo (fifo drops files: absent keys are allowed)")
	fs.BoolVar(&c.DynamicLevelBytes, "level_compaction_dynamic_level_bytes", false, "size levels from the largest up (L0 compacts into the base level)")
	fs.BoolVar(&c.AllowMmapReads, "mmap_read", false, "read table files through memory mappings (Options.AllowMmapReads; on disk only)")
	allowConcurrent := fs.Bool("allow_concurrent_memtable_write", true, "writers that meet insert into the memtable concurrently (false: Options.DisableConcurrentMemtableWrites)")
	fs.Int64Var(&c.MaxBytesForLevelBase, "max_bytes_for_level_base", 0, "target size of L1 (dynamic: the base level's bound); 0 = default")
	fs.BoolVar(&c.BlobFiles, "enable_blob_files", false, "store values of at least -min_blob_size in blob files (16 KiB files, garbage collection on; SetOptions toggles them)")
	fs.Uint64Var(&c.MinBlobSize, "min_blob_size", 16, "with -enable_blob_files, the smallest value stored in a blob file")
	fs.IntVar(&c.Subcompactions, "subcompactions", 1, "Options.MaxSubcompactions: split L0 and manual compactions over N goroutines (with N > 1, SetOptions ops also change max_subcompactions; -mode stress and compact)")
	fs.StringVar(&c.Comparator, "comparator", "", "the DB's comparator: bytewise (default) or reverse (rocksdb.ReverseBytewiseComparator; the oracle checks in that order; ingestion off)")
	fs.BoolVar(&c.Filter, "compaction_filter", false, "run every family with the stress compaction filter (removes values of versions 0 mod 5, changes those 1 mod 5; in flushes too for odd seeds); merges and ingestion off")
	ttlSeconds := fs.Int("ttl_seconds", 0, "Options.TTL in seconds (0 = none), on a clock the tool moves by 1-3 s with -clock_step_one_in; merges and ingestion off")
	fs.IntVar(&c.ClockStepOneIn, "clock_step_one_in", 50, "with -ttl_seconds: move the clock 1/N per op")
	fs.BoolVar(&c.Sync, "sync", false, "sync every write")
	fs.BoolVar(&c.DisableWAL, "disable_wal", false, "write without the WAL (crash checks become structural only)")
	fs.IntVar(&c.RecycleLogFileNum, "recycle_log_file_num", 0, "keep up to N obsolete WALs and overwrite them with new ones (Options.RecycleLogFileNum; -mode stress and bank)")
	fs.IntVar(&c.ReadPercent, "readpercent", 25, "percent of Get")
	fs.IntVar(&c.PrefixPercent, "prefixpercent", 10, "percent of PrefixSameAsStart scans")
	fs.IntVar(&c.WritePercent, "writepercent", 25, "percent of Put")
	fs.IntVar(&c.DelPercent, "delpercent", 8, "percent of Delete")
	fs.IntVar(&c.DelRangePercent, "delrangepercent", 2, "percent of DeleteRange")
	fs.IntVar(&c.IterPercent, "iterpercent", 10, "percent of iterations")
	fs.IntVar(&c.BatchPercent, "batchpercent", 12, "percent of atomic multi-key batches")
	fs.IntVar(&c.MultiGetPercent, "multigetpercent", 8, "percent of MultiGet")
	fs.IntVar(&c.FlushOneIn, "flush_one_in", 500, "Flush with probability 1/N per op")
	fs.IntVar(&c.CompactRangeOneIn, "compact_range_one_in", 1000, "CompactRange with probability 1/N per op")
	fs.IntVar(&c.SnapshotOneIn, "snapshot_one_in", 100, "take a snapshot (checked later) with probability 1/N per op")
	fs.IntVar(&c.SetOptionsOneIn, "set_options_one_in", 500, "SetOptions (write_buffer_size, disable_auto_compactions) 1/N per op")
	fs.IntVar(&c.SwapExtractorOneIn, "swap_extractor_one_in", 300, "change prefix_extractor (SetOptions or reopen) 1/N per op")
	fs.IntVar(&c.MergeOneIn, "merge_one_in", 8, "Merge (ConcatMergeOperator) with probability 1/N per op; -1 = never (batches merge only when on)")
	fs.IntVar(&c.SingleDeleteOneIn, "single_delete_one_in", 40, "SingleDelete of a key written once since its last delete, 1/N per op; -1 = never")
	fs.IntVar(&c.IngestOneIn, "ingest_external_file_one_in", 400, "write an external file over a locked key range and Ingest it, 1/N per op; -1 = never")
	fs.IntVar(&c.CheckpointOneIn, "checkpoint_one_in", 3000, "Checkpoint, open and verify it, 1/N per op; -1 = never")
	fs.IntVar(&c.IterRefreshOneIn, "iter_refresh_one_in", 3, "per iterator op: SetBounds and Refresh and check again, 1/N; -1 = never")
	fs.IntVar(&c.ColumnFamilies, "column_families", 1, "column families: default and cf1..cf{N-1}; each op picks one, batches span 2-3")
	fs.IntVar(&c.CFChurnOneIn, "cf_churn", 0, "with -column_families > 1: drop a non-default family and create a new one 1/N per op (0 = never; off with -crash and -powerloss)")
	fs.IntVar(&c.FaultOneIn, "fault_one_in", 0, "fault injection: fail each read/write/sync/rename/remove with probability 1/N")
	fs.BoolVar(&powerloss, "powerloss", false, "power-loss mode: in-memory FS, Sync writes, verified crash images")
	fs.IntVar(&c.CrashImageOneIn, "crash_image_one_in", 300, "power-loss mode: take a crash image 1/N per op")
	fs.BoolVar(&crash, "crash", false, "crash-test driver: run the child, SIGKILL it, verify, repeat")
	fs.IntVar(&crashCycles, "crash_cycles", 10, "crash mode: number of kill cycles")
	fs.DurationVar(&crashMaxWait, "crash_max_wait", 2*time.Second, "crash mode: longest time before a kill")
	fs.IntVar(&killOneIn, "kill_one_in", 0, "crash mode: each named kill point kills the child with probability 1/N (builds the child with -tags stress_kill)")
	fs.StringVar(&c.ExpectedLog, "expected_log", "", "persist the oracle in this file (the crash child)")
	fs.DurationVar(&crashChild, "crash_child_ops_duration", 0, "internal")
	fs.BoolVar(&verbose, "v", false, "print progress")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "stress: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *keyShape == "binary" && mode != "stress" {
		// Their models group keys by decimal prefixes (ten keys to a
		// fixed:7 prefix); the stress runner asks the extractor.
		fmt.Fprintf(os.Stderr, "stress: -key_shape binary is for -mode stress, not %s\n", mode)
		return 2
	}
	if *keyShape == "binary" && c.MaxKey > stress.MaxBinaryKeys {
		fmt.Fprintf(os.Stderr, "stress: -max_key %d: binary keys allow at most %d\n", c.MaxKey, stress.MaxBinaryKeys)
		return 2
	}
	if err := stress.SetKeyShape(*keyShape); err != nil {
		fmt.Fprintln(os.Stderr, "stress:", err)
		return 2
	}
	if *ttlSeconds < 0 {
		fmt.Fprintf(os.Stderr, "stress: -ttl_seconds %d: want >= 0\n", *ttlSeconds)
		return 2
	}
	c.TTL = time.Duration(*ttlSeconds) * time.Second
	switch c.Comparator {
	case "", "bytewise", "reverse":
	default:
		fmt.Fprintf(os.Stderr, "stress: -comparator %q: want bytewise or reverse\n", c.Comparator)
		return 2
	}
	c.DisableConcurrentMemtableWrites = !*allowConcurrent
	c.DisableCacheIndexAndFilterBlocksWithHighPriority = !highPri
	if c.Seed == 0 {
		c.Seed = time.Now().UnixNano() % 1000000007
	}
	switch mode {
	case "stress":
	case "linearize":
		return runLinearize(c, histories, linOps, visualize, verbose)
	case "metamorphic":
		return runMetamorphic(c.Seed, metaSeeds, metaOps, verbose)
	case "compact":
		return runCompact(c.Seed, metaSeeds, metaOps, c.Subcompactions, verbose)
	case "bank":
	default:
		fmt.Fprintf(os.Stderr, "stress: -mode %q: want stress, linearize, metamorphic, compact or bank\n", mode)
		return 2
	}
	switch compression {
	case "none":
		c.Compression = db.NoCompression
	case "snappy":
		c.Compression = db.SnappyCompression
	case "zstd":
		c.Compression = db.ZstdCompression
	default:
		fmt.Fprintf(os.Stderr, "stress: -compression %q: want none, snappy or zstd\n", compression)
		return 2
	}
	switch style {
	case "level":
	case "fifo":
		c.FIFO = true
	default:
		fmt.Fprintf(os.Stderr, "stress: -compaction_style %q: want level or fifo\n", style)
		return 2
	}
	if !powerloss {
		c.CrashImageOneIn = 0
	}
	if mem || powerloss {
		c.FS = vfs.NewMem()
		if dir == "" {
			dir = "/db"
		}
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "strata-stress-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "stress:", err)
			return 2
		}
		defer os.RemoveAll(d)
		dir = d + "/db"
	}
	c.Dir = dir
	c.Log = os.Stderr
	if mode == "bank" {
		bc.Seed, bc.Workers, bc.Duration, bc.Dir, bc.FS, bc.Sync, bc.Log = c.Seed, c.Threads, c.Duration, c.Dir, c.FS, c.Sync, os.Stderr
		bc.RecycleLogFileNum = c.RecycleLogFileNum
		if crash {
			return runBankCrash(bc, args, crashCycles, crashMaxWait, verbose)
		}
		bc.AckLog = c.ExpectedLog
		return runBank(bc)
	}
	if crash {
		return runCrash(c, args, crashCycles, crashMaxWait, killOneIn, verbose)
	}
	fmt.Fprintf(os.Stderr, "stress: seed %d, db %s\n", c.Seed, c.Dir)
	r := stress.NewRunner(c)
	err := r.Run()
	fmt.Fprintf(os.Stderr, "stress: %s\n", &r.Stats)
	if err != nil {
		fmt.Fprintf(os.Stderr, "stress: FAILED (seed %d): %v\n", c.Seed, err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "stress: OK")
	return 0
}
