package db

import (
	"fmt"
	"math"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/memtable"
	"github.com/stratadb/strata/prefix"
	"github.com/stratadb/strata/vfs"
)

// Compression selects how table blocks are compressed.
type Compression int

const (
	NoCompression Compression = iota
	SnappyCompression
	ZstdCompression
)

func (c Compression) String() string {
	switch c {
	case NoCompression:
		return "none"
	case SnappyCompression:
		return "snappy"
	case ZstdCompression:
		return "zstd"
	}
	return "unknown"
}

// CompactionStyle selects how table files are merged over time.
type CompactionStyle int

const (
	// LevelCompaction keeps L1 and below sorted and non-overlapping, each
	// level about ten times the size of the one above (RocksDB's default).
	LevelCompaction CompactionStyle = iota
	// FIFOCompaction keeps every file in L0 and deletes the oldest once the
	// total size passes FIFOMaxTableFilesSize: for data with a lifetime.
	FIFOCompaction
)

// IndexType selects the index of the tables the database writes (RocksDB's
// BlockBasedTableOptions index_type). Tables record their own index type,
// so a database reads tables of either type whatever the option says.
type IndexType int

const (
	// IndexBinarySearch writes one index block per table, pinned in
	// memory while the table is open (RocksDB's kBinarySearch, the
	// default).
	IndexBinarySearch IndexType = iota
	// IndexTwoLevelSearch writes a partitioned index: index partitions of
	// about MetadataBlockSize bytes and a small top-level index over them
	// (RocksDB's kTwoLevelIndexSearch). With CacheIndexAndFilterBlocks only
	// the top-level index stays pinned and the partitions are read through
	// the block cache; it is also what PartitionFilters needs.
	IndexTwoLevelSearch
)

// String returns RocksDB's name for the index type.
func (t IndexType) String() string {
	switch t {
	case IndexBinarySearch:
		return "kBinarySearch"
	case IndexTwoLevelSearch:
		return "kTwoLevelIndexSearch"
	}
	return "unknown"
}

// FS is the file-system interface every file access of a DB goes through:
// vfs.FS, whose package has the contract an implementation keeps, the OS's
// (vfs.Default), an in-memory one for tests (vfs.NewMem) and what a wrapper
// must forward.
type FS = vfs.FS

// Options configure a DB at Open. The zero value of each field means its
// default.
type Options struct {
	// CreateIfMissing creates the database when the directory holds none.
	CreateIfMissing bool
	// ErrorIfExists makes Open fail if a database already exists.
	ErrorIfExists bool
	// ReadOnly opens without writes, background work or new files. Data
	// that lives only in the WAL is visible.
	ReadOnly bool
	// WriteBufferSize is the memtable size in bytes before it is flushed.
	// Default: 64 MiB. Larger buffers mean fewer, larger L0 files and more
	// memory. Values below 256 bytes (at which nearly every write would
	// flush) are refused; RocksDB raises anything below 64 KiB silently.
	WriteBufferSize int
	// MaxWriteBufferNumber is the number of memtables (the mutable one and
	// those waiting for flush) before writes stall. Default: 2.
	MaxWriteBufferNumber int
	// BloomBitsPerKey is the filter size per key; 0 writes no filters.
	// 10 gives about 1% false positives.
	BloomBitsPerKey int
	// PrefixExtractor, when set, adds each key's prefix to the table filters
	// and enables prefix seeks. Default: none.
	PrefixExtractor prefix.Extractor
	// Compression of table blocks. Default: none.
	Compression Compression
	// CompactionStyle. Default: LevelCompaction.
	CompactionStyle CompactionStyle
	// FIFOMaxTableFilesSize: with FIFO, drop the oldest files once the total
	// is above this. Default: 1 GiB.
	FIFOMaxTableFilesSize int64
	// FIFOAllowCompaction lets FIFO merge small L0 files (db_bench's
	// -fifo_compaction_allow_compaction). Default: false.
	FIFOAllowCompaction bool
	// DisableAutoCompactions stops background compactions; CompactRange
	// still works.
	DisableAutoCompactions bool
	// DisableReadTriggeredCompactions turns off read-triggered ("seek")
	// compactions, which are on by default with leveled compaction. Each
	// table gets an in-memory budget of max(100, size/16 KiB) wasted seeks:
	// a Get that reads data blocks of two or more tables charges the first
	// table it read without finding the key (a table its filter excluded
	// read nothing and is not charged). When a table's budget is spent and
	// no size-triggered compaction is due, the background compactor
	// compacts it into the next level, so later reads of its key range
	// touch one table fewer. This is LevelDB's allowed_seeks rule; Pebble
	// samples iterator reads instead (read-triggered compactions), and
	// RocksDB has neither. The budgets are not persisted: they start afresh
	// when the DB opens. FIFO compaction, DisableAutoCompactions and
	// ReadOnly databases never run them.
	DisableReadTriggeredCompactions bool
	// DisableConcurrentMemtableWrites makes writers insert into the
	// memtable one at a time. By default (as RocksDB's
	// allow_concurrent_memtable_write) a writer that finds others in the
	// commit pipeline inserts its batch into the lock-free memtable at the
	// same time as they do, after appending its WAL record in turn; a
	// writer alone, and any batch with a range deletion, inserts one at a
	// time. Either way a write's sequence numbers become visible only after
	// every earlier write's.
	DisableConcurrentMemtableWrites bool
	// AllowMmapReads reads table files through read-only shared mappings
	// instead of pread(2), as RocksDB's allow_mmap_reads (default false
	// there too). A block read that misses the block cache is then a copy
	// from the page cache without a system call, which makes random reads
	// that miss a small block cache much faster (docs/benchmarks.md has the
	// figure). The cost is in how memory is
	// counted: the table pages a process touches count in its resident
	// set (as file pages the kernel can reclaim), where pread leaves them
	// to the page cache alone. A page that cannot be read faults the copy,
	// which is returned as an I/O error. Only 64-bit Linux maps; elsewhere,
	// and on file systems that cannot map, tables are read as before.
	AllowMmapReads bool
	// BlockCacheSize bounds the data-block cache in bytes. Index and filter
	// blocks are pinned by each open table, outside this budget, as in
	// RocksDB's default, unless CacheIndexAndFilterBlocks. Default: 8 MiB.
	BlockCacheSize int64
	// CacheIndexAndFilterBlocks reads each table's filter block through the
	// block cache, charged against BlockCacheSize, instead of pinning it
	// for as long as the table is open: RocksDB's BlockBasedTableOptions
	// cache_index_and_filter_blocks. Memory then stays bounded by the cache
	// however many tables are open (filters are the bulk of a table's
	// metadata: BloomBitsPerKey/8 bytes per key), at the cost of a cache
	// lookup per filter probe, filter reads from the file when the cache is
	// too small to keep them, and filters competing with data blocks for
	// the cache. A filter larger than the cache can hold (a cache shard,
	// BlockCacheSize/16 from 8 MiB up) is not read: lookups skip it and
	// read the table's data block instead, as cheaper than reading the
	// filter each time. A corrupt filter fails the read that probes it
	// with ErrCorruption. Single-level index blocks stay pinned. With
	// PartitionFilters and IndexTwoLevelSearch, only each table's two small
	// top-level indexes stay pinned: the filter and index partitions (about
	// MetadataBlockSize each, small enough for any cache) are read through
	// the cache, so a large table's filter is used without the whole of it
	// having to fit in a cache shard. Default: false.
	CacheIndexAndFilterBlocks bool
	// DisableCacheIndexAndFilterBlocksWithHighPriority caches the blocks
	// CacheIndexAndFilterBlocks reads through the block cache (filters,
	// filter and index partitions) with the same priority as data blocks.
	// By default, as RocksDB's cache_index_and_filter_blocks_with_high_priority
	// (true there too), they are cached with high priority: into a pool of
	// up to HighPriPoolRatio of the block cache that data blocks cannot
	// evict them from, so that reads touching many data blocks do not push
	// out the partitions every read needs (the pool is a bound, not a
	// reservation: data blocks use the whole cache when it holds no index
	// or filter blocks). Index and filter blocks beyond the pool's share
	// compete with data blocks as they would without the pool. No effect
	// without CacheIndexAndFilterBlocks.
	DisableCacheIndexAndFilterBlocksWithHighPriority bool
	// HighPriPoolRatio is the share of the block cache, in [0, 1], that
	// high-priority index and filter blocks may hold (RocksDB's
	// LRUCacheOptions high_pri_pool_ratio, 0.5 by default in RocksDB 7).
	// Each cache shard keeps its own pool of that share of its capacity.
	// 0 means the default: for no pool, set
	// DisableCacheIndexAndFilterBlocksWithHighPriority. Default: 0.5.
	HighPriPoolRatio float64
	// IndexType of the tables written. Default: IndexBinarySearch.
	IndexType IndexType
	// PartitionFilters cuts each table's filter into partitions of about
	// MetadataBlockSize bytes, aligned with the index partitions, under a
	// small index of partitions (RocksDB's partition_filters). A lookup
	// then probes one partition; with CacheIndexAndFilterBlocks it reads
	// only that partition through the block cache. It takes effect only
	// with IndexType IndexTwoLevelSearch: otherwise full filters are
	// written, as RocksDB silently ignores partition_filters for other
	// index types. Default: false.
	PartitionFilters bool
	// MetadataBlockSize is the target size in bytes of index and filter
	// partitions (RocksDB's metadata_block_size). Default: 4096.
	MetadataBlockSize int
	// MaxOpenFiles bounds the table readers kept open. Default: 10000.
	MaxOpenFiles int
	// BlockSize is the uncompressed size of table data blocks. Default: 4 KiB.
	BlockSize int
	// Level0FileNumCompactionTrigger starts an L0 compaction. Default: 4.
	Level0FileNumCompactionTrigger int
	// Level0SlowdownWritesTrigger slows writes down. Default: 20.
	Level0SlowdownWritesTrigger int
	// Level0StopWritesTrigger stops writes until compaction catches up.
	// Default: 36.
	Level0StopWritesTrigger int
	// TargetFileSizeBase is the size of compaction output files. Default:
	// 64 MiB.
	TargetFileSizeBase int64
	// MaxBytesForLevelBase is the target size of L1; each lower level is
	// MaxBytesForLevelMultiplier times larger. Default: 256 MiB.
	MaxBytesForLevelBase int64
	// MaxBytesForLevelMultiplier. Default: 10.
	MaxBytesForLevelMultiplier int
	// LevelCompactionDynamicLevelBytes sizes the levels of leveled
	// compaction from the largest level up instead of from L1 down
	// (RocksDB's level_compaction_dynamic_level_bytes): the largest level
	// keeps its size as the last level's target, each level above it is
	// MaxBytesForLevelMultiplier times smaller, and L0 compacts straight
	// into the base level, the first level whose target is no more than
	// MaxBytesForLevelBase; the levels above it stay empty. While the
	// database is small all its data sits in the last level, and the
	// last level holds most of the data at any size, which bounds space
	// amplification near 1.11 and saves rewriting data through levels
	// that the fixed targets keep too small or too large. Levels that
	// already hold data (a database written with the option off) are never
	// skipped: the base level is at most the first non-empty level, so such
	// data compacts down as before. Default: false, as in RocksDB 7.8.
	LevelCompactionDynamicLevelBytes bool
	// MaxBackgroundJobs bounds concurrent flushes and compactions. Default: 2.
	MaxBackgroundJobs int
	// MaxSubcompactions is RocksDB's max_subcompactions: the number of
	// goroutines one compaction from L0 into the base level, or one
	// manual (CompactRange) compaction, may be split over. The inputs are
	// cut at user keys sampled from their index blocks into ranges of
	// about equal input bytes, each merged into its own output files, and
	// the outputs of all the ranges are installed in one MANIFEST edit, so
	// the result reads as one compaction's would. A compaction is split
	// into at most one range per 80% of the target file size of input (as
	// RocksDB does), so small compactions run on one goroutine. Other
	// compactions (level to level, FIFO) are never split: only the L0
	// compaction can fall behind the writes, and it alone blocks them.
	// It is a database option, mutable through DB.SetOptions
	// ("max_subcompactions"), and the OPTIONS file records it in
	// DBOptions. 0 means the default, 1 (no splitting); at most 1024.
	MaxSubcompactions int
	// SoftPendingCompactionBytesLimit slows writes down once the estimated
	// bytes compaction is behind by reach it. Default: 64 GiB.
	SoftPendingCompactionBytesLimit int64
	// HardPendingCompactionBytesLimit stops writes (they wait) once the
	// estimated pending compaction bytes reach it. Default: 256 GiB.
	HardPendingCompactionBytesLimit int64

	// Blob files (RocksDB's integrated BlobDB; docs/blob-files.md). All
	// are per family and mutable through SetOptions under RocksDB's names.
	//
	// EnableBlobFiles (enable_blob_files): flushes and compactions write
	// values of at least MinBlobSize bytes to blob files, leaving a blob
	// index in the table. Default: false. Blob files already written are
	// read whatever its value.
	EnableBlobFiles bool
	// MinBlobSize (min_blob_size): the smallest value that goes to a blob
	// file. Default: 0, every value.
	MinBlobSize uint64
	// BlobFileSize (blob_file_size): a blob file is closed, and the next
	// one started, once it reaches this size. Default: 256 MiB.
	BlobFileSize uint64
	// BlobCompressionType (blob_compression_type): how each blob is
	// compressed. Default: none.
	BlobCompressionType Compression
	// EnableBlobGarbageCollection (enable_blob_garbage_collection):
	// compactions rewrite the values that are in the oldest blob files
	// (BlobGarbageCollectionAgeCutoff of them) to new ones, so that the
	// old files, left with garbage only, are deleted. Default: false.
	EnableBlobGarbageCollection bool
	// BlobGarbageCollectionAgeCutoff
	// (blob_garbage_collection_age_cutoff): the fraction of the blob
	// files, oldest first, whose values garbage collection relocates, in
	// (0, 1]. Default (0): 0.25, RocksDB's.
	BlobGarbageCollectionAgeCutoff float64
	// BlobGarbageCollectionForceThreshold
	// (blob_garbage_collection_force_threshold): when the garbage ratio of
	// the oldest files under the cutoff reaches it, their tables are
	// marked for compaction, in (0, 1]. Default (0): 1.0, RocksDB's.
	BlobGarbageCollectionForceThreshold float64
	// WALWriteSyscalls makes the WAL take one write(2) per write instead
	// of the default, copying each record into a shared memory
	// mapping of the preallocated WAL file (RocksDB's allow_mmap_writes,
	// for the WAL only; a write of 12 KiB or more goes in by pwrite, its
	// headers after its payload, since a large copy would fault). Both keep the promise that an acknowledged write
	// survives the process being killed: the mapped bytes are in the page
	// cache once the copy is done. Sync writes fdatasync the file either
	// way. The mapping is used only where the file system supports it
	// (Linux with fallocate(2), FS the operating system's or an errorfs
	// over it); elsewhere this option changes nothing. See docs/wal.md.
	WALWriteSyscalls bool
	// WALRecoveryMode chooses what Open does with damaged WALs. Default:
	// WALRecoveryTolerateCorruptedTail (see WALRecoveryMode).
	WALRecoveryMode WALRecoveryMode
	// RecycleLogFileNum (recycle_log_file_num) keeps up to this many
	// obsolete WAL files instead of deleting them, and starts a new WAL by
	// renaming a kept file and overwriting it from offset 0 (vfs.Reuser):
	// a synced write then rewrites blocks the file already has, which
	// costs the file system less than allocating new ones. Every WAL is
	// then written with RocksDB's recyclable record types, whose header
	// carries the log number, so that the old file's records past the new
	// log's end are not replayed; and with write(2), as WALWriteSyscalls
	// (a mapping would read the old pages in only to overwrite them, and
	// its crash guarantee assumes a zero-filled file). The kept files
	// live for one Open: the next Open deletes them. It is fixed for an
	// Open (RocksDB's is immutable). Unlike RocksDB 7.8, which turns it
	// off under every WALRecoveryMode but kSkipAnyCorruptedRecords,
	// Strata keeps it in every mode (see docs/wal.md: Strata syncs a WAL
	// before it starts the next one, and its reader tells a recycled
	// log's end from damage in it); Strata has no WAL archive
	// (WAL_ttl_seconds, WAL_size_limit_MB), under which RocksDB also turns
	// it off. An FS without vfs.Reuser gets new files. Default: 0, off.
	RecycleLogFileNum int
	// EventListener, when set, is told of flushes, compactions, file
	// creations and deletions, write stalls, ingestions and background
	// errors, outside the DB's mutex (see EventListener). Default: none.
	EventListener *EventListener
	// Logger receives the info log (see Logger). Default: a LOG file in
	// the database directory (none when ReadOnly).
	Logger Logger
	// KeepLogFileNum bounds the info log files the default Logger keeps,
	// the live LOG included (RocksDB's keep_log_file_num): when Open rotates
	// LOG, it deletes the oldest LOG.old.<timestamp> files beyond
	// KeepLogFileNum-1. It has no effect with Options.Logger set or when
	// ReadOnly. Default: 1000.
	KeepLogFileNum int
	// FS is the file system every file of the database is read and
	// written through (see package vfs): vfs.NewMem for a database in
	// memory, or a wrapper. Default: vfs.Default, the operating system's.
	FS FS
	// MergeOperator combines the operands written with DB.Merge (see
	// merge_builtin.go for the built-ins under RocksDB's names). Default: none, and
	// reading a key with merge operands fails with an error naming the
	// operator the OPTIONS file asks for.
	MergeOperator MergeOperator
	// CompactionFilter is asked, in every compaction (and in flushes when
	// it opts in), what becomes of each value no snapshot sees: keep,
	// remove, change, or remove a run of keys (see CompactionFilter). Its
	// Name is recorded in the OPTIONS file. Default: none.
	CompactionFilter CompactionFilter
	// Comparer orders the keys (see Comparer). Default (nil):
	// BytewiseComparer. It is fixed when the family is created: reopening
	// with another fails with ErrInvalidArgument.
	Comparer Comparer
	// TTL, when > 0, stores values in RocksDB's DBWithTTL format (a 4-byte
	// write-time suffix, readable by `ldb --ttl`): reads never return a
	// value written more than TTL ago (unless ReadOptions.IncludeExpired),
	// compactions drop such values, and with FIFO compaction whole tables
	// older than TTL are dropped (RocksDB's FIFO ttl). Whole seconds, at
	// most 2^31-1; a database must keep its TTL setting on (values written
	// without the suffix read as ErrCorruption). Default: 0, off.
	TTL time.Duration
	// Clock, when set, is the time TTL stamps on the values written and
	// compares their write times against, in reads and compactions:
	// RocksDB's Env/SystemClock, which its tests replace. It must not go
	// backwards (a compaction keeps the time it started with) and is
	// called concurrently. One per DB: every family with a TTL reads it.
	// Default: nil, time.Now.
	Clock func() time.Time
	// ColumnFamilies gives the options of named column families at Open
	// (see ColumnFamilyOptions). A family of the database that is not named
	// gets the options its section of the newest OPTIONS file records; an
	// entry for "default" wins over the per-family fields of Options.
	ColumnFamilies map[string]*ColumnFamilyOptions
	// CreateMissingColumnFamilies creates, at Open, the families
	// ColumnFamilies names that the database lacks; without it such a name
	// fails Open with ErrInvalidArgument.
	CreateMissingColumnFamilies bool
	// MaxTotalWALSize bounds the bytes of live WALs once a database has
	// several column families (RocksDB's max_total_wal_size): past it, the
	// families with writes in the oldest WAL are flushed so that it can go,
	// and a family that receives few writes does not keep every WAL since
	// its last flush. Default: four times the write buffers of all
	// families (WriteBufferSize x MaxWriteBufferNumber, summed), as
	// RocksDB's 0 means.
	MaxTotalWALSize int64
}

// Defaults, as constants so nothing can change them at run time.
const (
	defaultWriteBufferSize      = 64 << 20
	defaultMaxWriteBufferNumber = 2
	defaultFIFOMaxSize          = 1 << 30
	defaultBlockCacheSize       = 8 << 20
	defaultHighPriPoolRatio     = 0.5
	defaultMaxOpenFiles         = 10000
	defaultKeepLogFileNum       = 1000
	defaultBlockSize            = 4 << 10
	defaultMetadataBlockSize    = 4096
	defaultL0Trigger            = 4
	defaultL0Slowdown           = 20
	defaultL0Stop               = 36
	defaultTargetFileSize       = 64 << 20
	defaultMaxBytesForBase      = 256 << 20
	defaultLevelMultiplier      = 10
	defaultMaxBackgroundJobs    = 2
	defaultMaxSubcompactions    = 1
	maxMaxSubcompactions        = 1024
	defaultSoftPendingBytes     = 64 << 30
	defaultHardPendingBytes     = 256 << 30
	defaultBlobFileSize         = 256 << 20
	defaultBlobGCAgeCutoff      = 0.25
	defaultBlobGCForceThreshold = 1.0
)

// withDefaults returns a copy of o (nil meaning all defaults) with every zero
// field set to its default.
func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	setDefault(&r.WriteBufferSize, defaultWriteBufferSize)
	setDefault(&r.MaxWriteBufferNumber, defaultMaxWriteBufferNumber)
	setDefault(&r.FIFOMaxTableFilesSize, defaultFIFOMaxSize)
	setDefault(&r.BlockCacheSize, defaultBlockCacheSize)
	if r.HighPriPoolRatio == 0 {
		r.HighPriPoolRatio = defaultHighPriPoolRatio
	}
	setDefault(&r.MaxOpenFiles, defaultMaxOpenFiles)
	setDefault(&r.KeepLogFileNum, defaultKeepLogFileNum)
	setDefault(&r.BlockSize, defaultBlockSize)
	setDefault(&r.MetadataBlockSize, defaultMetadataBlockSize)
	setDefault(&r.Level0FileNumCompactionTrigger, defaultL0Trigger)
	setDefault(&r.Level0SlowdownWritesTrigger, defaultL0Slowdown)
	setDefault(&r.Level0StopWritesTrigger, defaultL0Stop)
	setDefault(&r.TargetFileSizeBase, defaultTargetFileSize)
	setDefault(&r.MaxBytesForLevelBase, defaultMaxBytesForBase)
	setDefault(&r.MaxBytesForLevelMultiplier, defaultLevelMultiplier)
	setDefault(&r.MaxBackgroundJobs, defaultMaxBackgroundJobs)
	setDefault(&r.MaxSubcompactions, defaultMaxSubcompactions)
	setDefault(&r.SoftPendingCompactionBytesLimit, defaultSoftPendingBytes)
	setDefault(&r.HardPendingCompactionBytesLimit, defaultHardPendingBytes)
	setDefault(&r.BlobFileSize, defaultBlobFileSize)
	if r.BlobGarbageCollectionAgeCutoff == 0 {
		r.BlobGarbageCollectionAgeCutoff = defaultBlobGCAgeCutoff
	}
	if r.BlobGarbageCollectionForceThreshold == 0 {
		r.BlobGarbageCollectionForceThreshold = defaultBlobGCForceThreshold
	}
	if r.FS == nil {
		r.FS = vfs.Default
	}
	return r
}

func setDefault[T int | int64 | uint64](p *T, d T) {
	if *p == 0 {
		*p = d
	}
}

// ReadOptions control one read.
type ReadOptions struct {
	// Snapshot to read at; nil reads the latest state.
	Snapshot *Snapshot
	// LowerBound is the inclusive lower bound of iteration; nil for none.
	LowerBound []byte
	// UpperBound is the exclusive upper bound of iteration; nil for none.
	UpperBound []byte
	// PrefixSameAsStart stops iteration when the key's prefix differs from
	// the prefix of the key given to the last Seek/SeekForPrev. The prefix
	// is the Options.PrefixExtractor's: without an extractor (or for a Seek
	// key outside its domain) it has no effect, and iteration is over the
	// whole key order. To walk the keys with a given byte prefix without an
	// extractor, set LowerBound to the prefix and UpperBound to
	// PrefixUpperBound(prefix).
	PrefixSameAsStart bool
	// TotalOrderSeek never uses prefix filters.
	TotalOrderSeek bool
	// IncludeExpired, in a family with a TTL, returns values older than the
	// TTL that no compaction has dropped yet (what RocksDB's DBWithTTL
	// reads return); by default they read as absent.
	IncludeExpired bool
}

// WriteOptions control one write.
type WriteOptions struct {
	// Sync fsyncs the WAL before the write returns: the write survives
	// power loss. Without it a write survives a process crash.
	Sync bool
	// DisableWAL skips the WAL: the write lives only in the memtable until
	// a flush and may be lost in a crash.
	DisableWAL bool
}

// Upper bounds of options, shared with SetOptions.
const (
	// minWriteBufferSize is the smallest memtable accepted: below it
	// (write_buffer_size=1) nearly every write flushes. RocksDB raises
	// anything below 64 KiB to 64 KiB silently; Strata refuses instead,
	// with a lower floor, because tiny memtables (512 bytes in the stress
	// tool's linearizability mode) are how tests keep flushes and
	// compactions constant.
	minWriteBufferSize = 256
	// maxWriteBufferSize: a memtable is one arena addressed by uint32
	// offsets.
	maxWriteBufferSize = memtable.MaxArenaSize
	// maxBlockSize: block offsets and sizes are 32-bit in the table format
	// (RocksDB refuses a block_size of 4 GiB or more too).
	maxBlockSize = math.MaxUint32
	// maxTargetFileSize keeps the compaction limits derived from it (ten
	// times it bounds a compaction's overlap with the next level) from
	// overflowing.
	maxTargetFileSize = math.MaxInt64 / 10
	// maxLevelMultiplier is SetOptions' bound on
	// max_bytes_for_level_multiplier.
	maxLevelMultiplier = 1000
)

// validate checks an Options after withDefaults.
func (o *Options) validate() error {
	bad := func(name string, v any, why string) error {
		return errors.Wrapf(ErrInvalidArgument, "strata: option %s=%v: %s", name, v, why)
	}
	switch {
	case o.WriteBufferSize < 0:
		return bad("WriteBufferSize", o.WriteBufferSize, "must not be negative")
	case o.WriteBufferSize < minWriteBufferSize:
		return bad("WriteBufferSize", o.WriteBufferSize, fmt.Sprintf("below the minimum of %d bytes (0 is the default)", minWriteBufferSize))
	case int64(o.WriteBufferSize) > maxWriteBufferSize:
		return bad("WriteBufferSize", o.WriteBufferSize, fmt.Sprintf("above the memtable limit of %d bytes", int64(maxWriteBufferSize)))
	case o.BloomBitsPerKey < 0:
		return bad("BloomBitsPerKey", o.BloomBitsPerKey, "must not be negative")
	case o.Comparer != nil && o.Comparer.Name() == "":
		// The name is how the database records its order.
		return bad("Comparer", fmt.Sprintf("%T", o.Comparer), "its Name is empty")
	case o.Compression < NoCompression || o.Compression > ZstdCompression:
		return bad("Compression", int(o.Compression), "unknown compression")
	case o.CompactionStyle != LevelCompaction && o.CompactionStyle != FIFOCompaction:
		return bad("CompactionStyle", int(o.CompactionStyle), "unknown compaction style")
	case o.TTL < 0 || o.TTL > maxTTL:
		return bad("TTL", o.TTL, "must be in [0, 2^31-1 seconds]")
	case o.TTL%time.Second != 0:
		return bad("TTL", o.TTL, "must be a whole number of seconds (RocksDB keeps it in seconds)")
	case o.FIFOMaxTableFilesSize < 0:
		return bad("FIFOMaxTableFilesSize", o.FIFOMaxTableFilesSize, "must not be negative")
	case o.BlockCacheSize < 0:
		return bad("BlockCacheSize", o.BlockCacheSize, "must not be negative")
	case !(o.HighPriPoolRatio >= 0 && o.HighPriPoolRatio <= 1): // NaN too
		return bad("HighPriPoolRatio", o.HighPriPoolRatio, "must be in [0, 1]")
	case o.MaxOpenFiles < 0:
		return bad("MaxOpenFiles", o.MaxOpenFiles, "must not be negative")
	case o.KeepLogFileNum < 0:
		return bad("KeepLogFileNum", o.KeepLogFileNum, "must not be negative")
	case o.BlockSize < 0:
		return bad("BlockSize", o.BlockSize, "must not be negative")
	case o.IndexType != IndexBinarySearch && o.IndexType != IndexTwoLevelSearch:
		return bad("IndexType", int(o.IndexType), "unknown index type")
	case o.MetadataBlockSize < 0:
		return bad("MetadataBlockSize", o.MetadataBlockSize, "must not be negative")
	case int64(o.MetadataBlockSize) > maxBlockSize:
		return bad("MetadataBlockSize", o.MetadataBlockSize, fmt.Sprintf("above the limit of %d bytes", int64(maxBlockSize)))
	case o.RecycleLogFileNum < 0:
		return bad("RecycleLogFileNum", o.RecycleLogFileNum, "must not be negative")
	case !o.WALRecoveryMode.valid():
		return bad("WALRecoveryMode", int(o.WALRecoveryMode), "unknown WAL recovery mode")
	case int64(o.BlockSize) > maxBlockSize:
		return bad("BlockSize", o.BlockSize, fmt.Sprintf("above the limit of %d bytes", int64(maxBlockSize)))
	case o.MaxWriteBufferNumber < 2:
		return bad("MaxWriteBufferNumber", o.MaxWriteBufferNumber, "must be at least 2")
	case o.Level0FileNumCompactionTrigger < 0:
		return bad("Level0FileNumCompactionTrigger", o.Level0FileNumCompactionTrigger, "must not be negative")
	case o.Level0SlowdownWritesTrigger < 0:
		return bad("Level0SlowdownWritesTrigger", o.Level0SlowdownWritesTrigger, "must not be negative")
	case o.Level0StopWritesTrigger < 0:
		return bad("Level0StopWritesTrigger", o.Level0StopWritesTrigger, "must not be negative")
	case o.Level0SlowdownWritesTrigger < o.Level0FileNumCompactionTrigger:
		return bad("Level0SlowdownWritesTrigger", o.Level0SlowdownWritesTrigger, "must be at least Level0FileNumCompactionTrigger")
	case o.Level0StopWritesTrigger < o.Level0SlowdownWritesTrigger:
		return bad("Level0StopWritesTrigger", o.Level0StopWritesTrigger, "must be at least Level0SlowdownWritesTrigger")
	case o.TargetFileSizeBase < 0:
		return bad("TargetFileSizeBase", o.TargetFileSizeBase, "must not be negative")
	case o.TargetFileSizeBase > maxTargetFileSize:
		return bad("TargetFileSizeBase", o.TargetFileSizeBase, fmt.Sprintf("above the limit of %d bytes", int64(maxTargetFileSize)))
	case o.MaxBytesForLevelBase < 0:
		return bad("MaxBytesForLevelBase", o.MaxBytesForLevelBase, "must not be negative")
	case o.MaxBytesForLevelMultiplier < 0 || o.MaxBytesForLevelMultiplier > maxLevelMultiplier:
		return bad("MaxBytesForLevelMultiplier", o.MaxBytesForLevelMultiplier, fmt.Sprintf("must be in [1, %d]", maxLevelMultiplier))
	case o.SoftPendingCompactionBytesLimit < 0:
		return bad("SoftPendingCompactionBytesLimit", o.SoftPendingCompactionBytesLimit, "must not be negative")
	case o.HardPendingCompactionBytesLimit < 0:
		return bad("HardPendingCompactionBytesLimit", o.HardPendingCompactionBytesLimit, "must not be negative")
	case o.MaxBackgroundJobs < 0:
		return bad("MaxBackgroundJobs", o.MaxBackgroundJobs, "must not be negative")
	case o.MaxSubcompactions < 0 || o.MaxSubcompactions > maxMaxSubcompactions:
		return bad("MaxSubcompactions", o.MaxSubcompactions, fmt.Sprintf("must be in [0, %d]", maxMaxSubcompactions))
	case o.BlobCompressionType < NoCompression || o.BlobCompressionType > ZstdCompression:
		return bad("BlobCompressionType", o.BlobCompressionType, "unknown compression")
	case !(o.BlobGarbageCollectionAgeCutoff > 0 && o.BlobGarbageCollectionAgeCutoff <= 1):
		return bad("BlobGarbageCollectionAgeCutoff", o.BlobGarbageCollectionAgeCutoff, "must be in (0, 1]")
	case !(o.BlobGarbageCollectionForceThreshold > 0 && o.BlobGarbageCollectionForceThreshold <= 1):
		return bad("BlobGarbageCollectionForceThreshold", o.BlobGarbageCollectionForceThreshold, "must be in (0, 1]")
	}
	return nil
}

// WALRecoveryMode chooses what Open does with damaged write-ahead logs.
// The values and their numbers are RocksDB's WALRecoveryMode; the OPTIONS
// file records the mode as wal_recovery_mode, under RocksDB's name.
//
// Damage is a fragment whose checksum, length or type is wrong, fragments
// out of order, a batch that does not decode, a zero-filled region with
// records after it, or a torn tail: a log that ends inside a record (what a
// crash during a write leaves).
type WALRecoveryMode int

const (
	// WALRecoveryTolerateCorruptedTail (RocksDB's
	// kTolerateCorruptedTailRecords) is the default: a torn tail of the
	// newest WAL is dropped (those writes were never acknowledged); any
	// other damage fails Open with ErrCorruption naming the file and
	// offset. Unlike RocksDB, a torn tail in an older WAL is damage too
	// (Strata syncs a WAL before it starts the next one). A zero-filled
	// header ends the newest WAL even if records follow it (a power loss
	// can leave unsynced blocks as zeroes); in an older WAL, records after
	// zeroes are damage: applying the newer WALs would leave a hole in the
	// history.
	WALRecoveryTolerateCorruptedTail WALRecoveryMode = iota
	// WALRecoveryAbsoluteConsistency (kAbsoluteConsistency): any damage,
	// a torn tail of the newest WAL included, fails Open with
	// ErrCorruption. For databases that were shut down cleanly.
	WALRecoveryAbsoluteConsistency
	// WALRecoveryPointInTime (kPointInTimeRecovery, RocksDB's default):
	// replay stops at the first damage; Open succeeds with every record
	// before it and none after it, in that WAL or in any newer one. The
	// database is then a consistent prefix of its history.
	WALRecoveryPointInTime
	// WALRecoverySkipAnyCorrupted (kSkipAnyCorruptedRecords): damaged
	// records are skipped and replay goes on with the next readable one.
	// Open succeeds, possibly with holes in the history; for salvage.
	WALRecoverySkipAnyCorrupted
)

var walRecoveryModeNames = [...]string{
	"kTolerateCorruptedTailRecords",
	"kAbsoluteConsistency",
	"kPointInTimeRecovery",
	"kSkipAnyCorruptedRecords",
}

// String returns RocksDB's name of the mode, as the OPTIONS file writes it.
func (m WALRecoveryMode) String() string {
	if m < 0 || int(m) >= len(walRecoveryModeNames) {
		return fmt.Sprintf("WALRecoveryMode(%d)", int(m))
	}
	return walRecoveryModeNames[m]
}

func (m WALRecoveryMode) valid() bool { return m >= 0 && int(m) < len(walRecoveryModeNames) }
