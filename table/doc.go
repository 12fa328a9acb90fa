// Package table reads and writes table files in RocksDB 7.8.3's block-based
// table format (docs/rocksdb-format.md §3–§13), so that RocksDB's tools read
// what we write and we read what RocksDB writes.
//
// # File layout (what we write)
//
//	[data block]*                 internal keys, restart interval 16, ~BlockSize
//	[filter block]                optional full filter (§11), never compressed
//	[index block]                 one entry per data block, restart interval 1
//	[range deletion block]        optional (§13), never compressed
//	[properties block]            sorted names, one restart, never compressed
//	[metaindex block]             name -> handle, restart interval 1
//	[footer]                      53 bytes
//
// Every block is followed by a 5-byte trailer: compression type (1 byte)
// ‖ checksum (fixed32) over the stored bytes and the type byte
// (internal/checksum). A BlockHandle is varint64 offset ‖ varint64 size
// (size excludes the trailer).
//
// Block: entry* ‖ fixed32 restart_offset × n ‖ fixed32 n, where
// entry = varint32 shared ‖ varint32 non_shared ‖ varint32 value_len ‖
// key_delta ‖ value and a restart entry has shared = 0. Bit 31 of the last
// word flags RocksDB's data-block hash index (buckets ‖ fixed16 count before
// the word), which we read past but never write.
//
// Data block keys are internal keys (user key ‖ fixed64 seq<<8|kind); values
// are user values (empty for deletions).
//
// Index: key = a separator S with last_key(block i) <= S < first_key(block
// i+1) (shortened with FindShortestSeparator; the last entry is the table's
// last key). From format_version 3 the keys are user keys unless a user key
// spans two blocks (then internal keys, and property
// rocksdb.index.key.is.user.key = 0). The value is the block's handle;
// from format_version 4 entries omit value_len (delta-encoded form: with
// restart interval 1 every value is a full handle).
//
// Filter: RocksDB's full filter under metaindex name
// "fullfilter.rocksdb.BuiltinBloomFilter"; FastLocalBloom at
// format_version 5, legacy Bloom below (internal/bloom). It holds the whole
// user keys (WholeKeyFiltering) and the prefixes of in-domain keys (with a
// PrefixExtractor) in one filter; consecutive duplicates are added once.
//
// Range deletions: key = internal key (start, seq, RangeDelete), value =
// end key, sorted by internal key.
//
// Properties: the ones RocksDB writes (properties.go), integers as
// varint64, index type fixed32, filtering flags as "0"/"1".
//
// Footer (format_version >= 1): checksum type (1) ‖ metaindex handle ‖
// index handle ‖ zero padding to 41 bytes ‖ fixed32 format_version ‖
// fixed64 magic 0x88e241b785f4cff7. We write format_version 1..5
// (default 5) and checksum XXH3 by default, like RocksDB 7.8.
//
// # What we read
//
// Everything RocksDB 7.8.3 writes for the bytewise comparator: the legacy
// 48-byte footer (format_version 0, magic 0xdb4775248b80fb57), checksum
// types none/CRC32C/xxHash/xxHash64/XXH3, compression snappy, zlib (raw
// deflate), bzip2, LZ4, LZ4HC and ZSTD (with a rocksdb.compression_dict
// dictionary) with the format-dependent size prefixes, index types binary
// search, hash search (read as binary; the hash meta blocks are ignored),
// two-level (partitions pinned at Open) and binary search with first key,
// full and partitioned filters (a partitioned filter is probed for whole
// keys only; prefix probes answer "may match"). Ribbon filters answer "may
// match" (internal/bloom).
//
// # Why not
//
// We never write the data-block hash index, partitioned indexes or filters,
// or compression dictionaries: they are optional for readers and the plain
// forms keep the writer small. Index and filter blocks are pinned in the
// Reader rather than cached, so a point read costs at most one block-cache
// lookup.
package table
