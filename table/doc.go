// Package table reads and writes table files in RocksDB 7.8.3's block-based
// table format, so that RocksDB's tools read what we write and we read what
// RocksDB writes.
//
// The format is described once, in the repository's docs: docs/format.md
// (https://github.com/stratadb/strata/blob/main/docs/format.md) says what
// this package writes and reads, which options select what, and how damage
// is reported; docs/rocksdb-format.md is the byte-level reference of
// RocksDB's formats that it cites by section. In short: data blocks of
// internal keys, an optional full or partitioned bloom filter, a plain or
// two-level (partitioned) index, an optional range-deletion block, the
// properties and metaindex blocks, and a 53-byte footer; every block is
// followed by a compression byte and a checksum (XXH3 by default).
//
// The entry points are [NewWriter] and [NewExternalWriter] for writing, and
// [Open] for reading; the Reader's index and filter blocks are pinned for
// the table's lifetime by default, or read through the block cache when the
// caller asks for it (the DB's CacheIndexAndFilterBlocks).
//
// # Why not
//
// We never write the data-block hash index or compression dictionaries:
// both are optional for readers, and the plain forms keep the writer small.
// We read both (the hash index is read past; dictionaries are used).
package table
