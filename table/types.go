package table

import (
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stratadb/strata/internal/checksum"
)

// The types of the key format, the block checksum and the block cache that
// the table API uses, re-exported so that code outside this module can name
// them. They are aliases: the same types the engine uses.
type (
	// InternalKey is a user key with its trailer: sequence number << 8 |
	// kind, the way RocksDB orders and stores entries.
	InternalKey = base.InternalKey
	// SeqNum is an entry's sequence number (56 bits).
	SeqNum = base.SeqNum
	// Kind is an entry's type: KindSet, KindDelete, ...
	Kind = base.Kind
	// Tombstone is a range deletion of [Start, End) at sequence number Seq.
	Tombstone = base.Tombstone
	// ChecksumType is a block checksum type, as RocksDB codes it.
	ChecksumType = checksum.Type
	// Cache is a block cache that readers may share (see NewCache).
	Cache = cache.Cache
	// CacheStats are a Cache's counters.
	CacheStats = cache.Stats
)

// Entry kinds, with RocksDB's codes.
const (
	KindDelete       = base.KindDelete
	KindSet          = base.KindSet
	KindMerge        = base.KindMerge
	KindSingleDelete = base.KindSingleDelete
	KindRangeDelete  = base.KindRangeDelete
)

// MaxSeqNum is the largest sequence number; reading at it sees every entry.
const MaxSeqNum = base.MaxSeqNum

// Block checksum types, with RocksDB's codes.
const (
	ChecksumNone     = checksum.None
	ChecksumCRC32C   = checksum.CRC32C
	ChecksumXXHash   = checksum.XXHash
	ChecksumXXHash64 = checksum.XXHash64
	ChecksumXXH3     = checksum.XXH3
)

// MakeInternalKey returns the internal key of userKey at seq with kind.
func MakeInternalKey(userKey []byte, seq SeqNum, kind Kind) InternalKey {
	return base.MakeInternalKey(userKey, seq, kind)
}

// NewCache returns a block cache of about capacityBytes.
func NewCache(capacityBytes int64) *Cache { return cache.New(capacityBytes) }

// NewCacheWithHighPriPool returns a block cache of about capacityBytes
// whose shards keep up to highPriPoolRatio of their capacity for the index
// and filter blocks of readers opened with
// CacheIndexAndFilterBlocksWithHighPriority (RocksDB's
// high_pri_pool_ratio).
func NewCacheWithHighPriPool(capacityBytes int64, highPriPoolRatio float64) *Cache {
	return cache.NewWithHighPriPool(capacityBytes, highPriPoolRatio)
}
