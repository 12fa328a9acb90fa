package table

import (
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/checksum"
	"github.com/stratadb/strata/prefix"
)

// Defaults of WriterOptions.
const (
	DefaultBlockSize            = 4096
	DefaultBlockRestartInterval = 16
	DefaultFormatVersion        = 5
	// DefaultMetadataBlockSize is RocksDB's metadata_block_size: the
	// target size of index and filter partitions.
	DefaultMetadataBlockSize = 4096
	// DefaultChecksum is XXH3, RocksDB 7.8's default and the fastest of
	// the four on a 4 KiB block (internal/checksum BenchmarkBlock compares
	// them).
	DefaultChecksum = checksum.XXH3
	// blockSizeDeviation is RocksDB's block_size_deviation (percent).
	blockSizeDeviation = 10
)

// Comparer is the engine's form of a key order: the db package builds it
// from a db.Comparer (nil means bytewise wherever one is taken).
type Comparer = base.Comparer

// WriterOptions configure a table Writer. Zero values mean the defaults;
// the db layer builds them from its own options.
type WriterOptions struct {
	// Comparer orders the user keys (nil: bytewise). Its Name is recorded
	// as the rocksdb.comparator property; its Separator and Successor, when
	// set, shorten index keys (bytewise ones use RocksDB's bytewise
	// shortening, other comparers without them keep full keys).
	Comparer *Comparer
	// BlockSize is the target uncompressed size of a data block. Default
	// 4096. Larger blocks compress better but cost more per point read.
	BlockSize int
	// BlockRestartInterval is the number of keys between restart points in
	// data blocks. Default 16.
	BlockRestartInterval int
	// FormatVersion is the footer format_version, 1..5. Default 5. Index
	// keys are user keys from 3 on, index values delta-encoded from 4 on,
	// and the filter uses FastLocalBloom at 5 (legacy Bloom below).
	FormatVersion uint32
	// Checksum is the block checksum type. Default XXH3 (see
	// DefaultChecksum); ChecksumNone is written only if asked for
	// explicitly through NoChecksum.
	Checksum ChecksumType
	// NoChecksum selects ChecksumNone (the zero Checksum means default).
	NoChecksum bool
	// Compression of data and index blocks. Default NoCompression. Blocks
	// that do not shrink by 12.5% are stored uncompressed.
	Compression Compression
	// BloomBitsPerKey enables a full filter with that many bits per key;
	// 0 = no filter.
	BloomBitsPerKey int
	// WholeKeyFiltering adds whole user keys to the filter. When false and
	// no PrefixExtractor is set, no filter is written.
	WholeKeyFiltering bool
	// PrefixExtractor adds the prefixes of in-domain keys to the filter.
	PrefixExtractor prefix.Extractor
	// TwoLevelIndex writes a partitioned index, RocksDB's index_type
	// kTwoLevelIndexSearch: index partitions of about MetadataBlockSize
	// bytes and a top-level index over them, which the footer names.
	TwoLevelIndex bool
	// PartitionFilters cuts the filter into partitions aligned with the
	// index partitions (RocksDB's partition_filters), indexed by a
	// "partitionedfilter." meta block. It needs TwoLevelIndex: without it
	// the option is ignored and a full filter is written, as RocksDB
	// ignores partition_filters for other index types.
	PartitionFilters bool
	// MetadataBlockSize is the target size of an index or filter
	// partition. Default 4096 (DefaultMetadataBlockSize).
	MetadataBlockSize int

	ColumnFamilyName  string // default "default"
	ColumnFamilyID    uint32
	CreationTime      int64 // Unix seconds
	OldestKeyTime     int64 // Unix seconds
	FileCreationTime  int64 // Unix seconds; written only when > 0
	FileNumber        uint64
	DBIdentity        string
	DBSessionID       string
	HostIdentity      string
	MergeOperatorName string // "" = none ("nullptr")
}

func (o WriterOptions) withDefaults() WriterOptions {
	if o.BlockSize <= 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.BlockRestartInterval <= 0 {
		o.BlockRestartInterval = DefaultBlockRestartInterval
	}
	if o.FormatVersion == 0 {
		o.FormatVersion = DefaultFormatVersion
	}
	if o.MetadataBlockSize <= 0 {
		o.MetadataBlockSize = DefaultMetadataBlockSize
	}
	if !o.TwoLevelIndex {
		o.PartitionFilters = false
	}
	if o.NoChecksum {
		o.Checksum = checksum.None
	} else if o.Checksum == checksum.None {
		o.Checksum = DefaultChecksum
	}
	if o.ColumnFamilyName == "" {
		o.ColumnFamilyName = "default"
	}
	return o
}

func (o WriterOptions) validate() error {
	if o.FormatVersion < 1 || o.FormatVersion > maxFormatVersion {
		return base.InvalidArgumentf("table: format_version %d not in 1..5", o.FormatVersion)
	}
	if !o.Checksum.Valid() {
		return base.InvalidArgumentf("table: unknown checksum type %d", o.Checksum)
	}
	if !o.Compression.writable() {
		return base.InvalidArgumentf("table: cannot write compression %s", o.Compression)
	}
	if o.BloomBitsPerKey < 0 {
		return base.InvalidArgumentf("table: negative BloomBitsPerKey")
	}
	return nil
}
