package stress

import (
	"io"
	"time"

	"github.com/stratadb/strata/db"
)

// Config is one stress run. The zero value of a field means its default
// (see Defaults); the CLI maps db_stress-style flags onto it.
type Config struct {
	Seed          int64
	Threads       int
	OpsPerThread  int           // per thread; 0 with Duration 0 = verify only
	Duration      time.Duration // stop after this long (0 = no limit)
	MaxKey        int
	ValueSizeMult int

	Dir string
	FS  db.FS // nil = the operating system's (db.FS is vfs.FS re-exported)

	Reopen      int // close and reopen every N operations (all threads together); 0 = never
	Compression db.Compression
	BloomBits   int
	// CacheIndexAndFilterBlocks sets the option of that name: filters
	// are read through the block cache.
	CacheIndexAndFilterBlocks bool
	// DisableCacheIndexAndFilterBlocksWithHighPriority and
	// HighPriPoolRatio set the options of those names (0: the engine's
	// default ratio); BlockCacheSize sets the block cache's size (0: the
	// engine's default), small to make index, filter and data blocks
	// evict each other.
	DisableCacheIndexAndFilterBlocksWithHighPriority bool
	HighPriPoolRatio                                 float64
	BlockCacheSize                                   int64
	// PartitionIndexAndFilters writes two-level indexes and partitioned
	// filters (Options.IndexType and PartitionFilters) with small
	// partitions, so that even small tables have several.
	PartitionIndexAndFilters bool
	PrefixSize               int // initial extractor fixed:N; 0 = none
	WriteBufferSize          int
	FIFO                     bool
	// DynamicLevelBytes sets Options.LevelCompactionDynamicLevelBytes.
	DynamicLevelBytes bool
	// AllowMmapReads sets the option of that name: tables are read through
	// mappings (on disk only).
	AllowMmapReads bool
	// DisableConcurrentMemtableWrites sets the option of that name:
	// writers insert one at a time.
	DisableConcurrentMemtableWrites bool
	// MaxBytesForLevelBase sets Options.MaxBytesForLevelBase (0 = default).
	MaxBytesForLevelBase int64
	// BlobFiles turns blob files on for every family (EnableBlobFiles)
	// with MinBlobSize, 16 KiB blob files and garbage collection (age
	// cutoff 0.5, force threshold 0.5), so that flushes, compactions and
	// their garbage accounting run under the oracle; SetOptions then also
	// toggles enable_blob_files and the garbage collection options.
	BlobFiles   bool
	MinBlobSize uint64
	// Subcompactions sets Options.MaxSubcompactions (0 = default, 1); with
	// more than 1, SetOptions operations also change max_subcompactions
	// between 1 and it, and the target file size is 32 KiB, so that the
	// small database's L0 and manual compactions split.
	Subcompactions int
	Sync           bool
	DisableWAL     bool
	// RecycleLogFileNum sets Options.RecycleLogFileNum: obsolete WALs are
	// kept and overwritten by later ones, so crashes and power losses
	// meet WALs holding an older log's records past their end.
	RecycleLogFileNum int

	// Filter runs every family with the stress Filter (in flushes too for
	// odd seeds), which removes and changes values by their version, and
	// TTL (whole seconds, 0 = none) runs them under TTL on a clock of the
	// oracle's (Options.Clock), which ClockStepOneIn moves by 1-3 seconds
	// with probability 1/N per operation (0 = the default, 50). The oracle
	// allows for what either may have done (see filter.go). Merges and
	// ingestion are off with either: the filter's and TTL's effect on
	// merged values is not modelled, and ingested values carry no write
	// time.
	Filter         bool
	TTL            time.Duration
	ClockStepOneIn int

	// Compare is the order of keys the DB sorts by (its comparator), nil =
	// bytes.Compare: every range the oracle checks (iterator bounds and
	// order, range deletions, compaction and ingestion ranges) is a run of
	// key indexes in that order (see keyOrder). Not carried to a crash
	// child's JSON config: the child's comparator comes from its flags.
	Compare func(a, b []byte) int `json:"-"`
	// Comparator names the DB's comparator, carried to crash children:
	// "" or "bytewise" (the default), or "reverse"
	// (db.ReverseBytewiseComparer, which also sets Compare). Ingested
	// files are built with the same comparer.
	Comparator string

	// Operation mix, in percent; they should add up to 100.
	ReadPercent, PrefixPercent, WritePercent, DelPercent, DelRangePercent,
	IterPercent, BatchPercent, MultiGetPercent int
	// Background-style operations, each with probability 1/N per operation
	// (0 = never).
	FlushOneIn, CompactRangeOneIn, SnapshotOneIn, SetOptionsOneIn, SwapExtractorOneIn int

	// Operations added with merge, single delete, ingestion and
	// checkpoints, each with probability 1/N per operation; 0 = the
	// default rate (see WithDefaults), < 0 = never. Merge, SingleDelete and
	// Ingest are off with FIFO or DisableWAL (which lose writes, so merged
	// values cannot be checked exactly). IterRefreshOneIn is per iterator
	// operation: SetBounds then Refresh (or SetBounds alone) and check
	// again.
	MergeOneIn, SingleDeleteOneIn, IngestOneIn, CheckpointOneIn, IterRefreshOneIn int

	// ColumnFamilies is the number of column families (0 or 1: only the
	// default one, as before). With N > 1 the DB has "default" and
	// "cf1".."cf{N-1}": every operation picks one, the oracle keeps one
	// model per family (key index f*MaxKey+k is key k of family f, and
	// values carry that index, so a record routed to the wrong family is
	// caught), batches span 2-3 families.
	ColumnFamilies int
	// CFChurnOneIn, with ColumnFamilies > 1, drops a non-default family
	// and creates a new one in its place with probability 1/N per
	// operation (0 = never). Off in crash and power-loss mode, whose
	// oracles assume a fixed family list.
	CFChurnOneIn int

	// ExpectedLog, when set, persists the oracle (crash mode's child): it is
	// loaded and verified at start, then every write's intent and outcome is
	// appended to it.
	ExpectedLog string

	// FaultOneIn, when > 0, runs the DB on errorfs failing each read,
	// write, sync, rename or remove with probability 1/FaultOneIn (fault
	// injection mode).
	FaultOneIn int

	// CrashImageOneIn, when > 0 (power-loss mode, with FS a *vfs.MemFS),
	// takes a crash image with probability 1/N per operation and verifies
	// it.
	CrashImageOneIn int

	Log io.Writer // progress and failures; nil = discard
}

// comparer is the DB comparator Comparator names (nil: bytewise).
func (c Config) comparer() db.Comparer {
	if c.Comparator == "reverse" {
		return db.ReverseBytewiseComparer()
	}
	return nil
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Threads, 4)
	def(&c.MaxKey, 1000)
	def(&c.ColumnFamilies, 1)
	if c.ColumnFamilies == 1 || c.ExpectedLog != "" || c.CrashImageOneIn > 0 {
		c.CFChurnOneIn = 0
	}
	def(&c.ValueSizeMult, 1)
	if c.ReadPercent+c.PrefixPercent+c.WritePercent+c.DelPercent+c.DelRangePercent+
		c.IterPercent+c.BatchPercent+c.MultiGetPercent == 0 {
		c.ReadPercent, c.PrefixPercent, c.WritePercent, c.DelPercent = 25, 10, 25, 8
		c.DelRangePercent, c.IterPercent, c.BatchPercent, c.MultiGetPercent = 2, 10, 12, 8
	}
	def(&c.MergeOneIn, 8)
	def(&c.SingleDeleteOneIn, 40)
	def(&c.IngestOneIn, 400)
	def(&c.CheckpointOneIn, 3000)
	def(&c.IterRefreshOneIn, 3)
	if c.FIFO || c.DisableWAL {
		c.MergeOneIn, c.SingleDeleteOneIn, c.IngestOneIn = -1, -1, -1
	}
	if c.Filter || c.TTL > 0 {
		c.MergeOneIn, c.IngestOneIn = -1, -1
	}
	if c.Comparator == "reverse" {
		if c.Compare == nil {
			c.Compare = db.ReverseBytewiseComparer().Compare
		}
	}
	if c.TTL > 0 {
		def(&c.ClockStepOneIn, 50)
	} else {
		c.ClockStepOneIn = 0
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c
}
