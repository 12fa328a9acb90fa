// Package version keeps the shape of the LSM tree: which table files make up
// each level (Version), the changes between shapes (Edit), and the MANIFEST
// log that records them (VersionSet). It is not covered by the API contract.
//
// # MANIFEST layout
//
// A MANIFEST-NNNNNN file is a log in the format of package internal/record
// (32 KiB blocks, legacy fragment headers). Each logical record is one
// encoded Edit: a sequence of fields, each `varint32 tag ‖ payload`.
// Integers in payloads are varints unless noted; a "varstring" is a varint32
// length followed by that many bytes; keys are encoded internal keys
// (user key ‖ fixed64 little-endian trailer seq<<8|kind). Tags (RocksDB
// 7.8, frozen: do not change):
//
//	1     Comparator          varstring name ("leveldb.BytewiseComparator")
//	2     LogNumber           varint64: WALs below it are obsolete
//	3     NextFileNumber      varint64
//	4     LastSequence        varint64
//	5     CompactCursor       varint32 level ‖ varstring internal key
//	6     DeletedFile         varint32 level ‖ varint64 file number
//	7     NewFile (LevelDB)   level ‖ number ‖ size ‖ varstring smallest ‖ varstring largest
//	8     (retired: LevelDB large-value refs)
//	9     PrevLogNumber       varint64
//	10    MinLogNumberToKeep  varint64
//	100   NewFile2            as 7, then varint64 smallest seq ‖ varint64 largest seq
//	102   NewFile3            level ‖ number ‖ varint32 path id ‖ size ‖ smallest ‖ largest ‖ seqs
//	103   NewFile4            level ‖ number ‖ size ‖ smallest ‖ largest ‖ seqs ‖
//	                          {varint32 custom tag ‖ varstring field}* ‖ varint32 1
//	200   ColumnFamily        varint32 id (written only when not 0)
//	201   ColumnFamilyAdd     varstring name
//	202   ColumnFamilyDrop    (no payload)
//	203   MaxColumnFamily     varint32
//	300   InAtomicGroup       varint32 remaining entries
//	400/401 blob file addition/garbage (unsupported: corruption)
//	8193  DbId                varstring
//	8199  WalAddition2        varstring{ varint64 number ‖ (varint32 2 ‖ varint64 synced size)? ‖ varint32 1 }
//	8200  WalDeletion2        varstring{ varint64 number }
//
// Any other tag with bit 8192 set is a varstring that may be skipped; any
// other unknown tag is corruption.
//
// NewFile4 custom tags: 1 terminates the list (no field); 2 marked for
// compaction (1 byte, 1 = yes); 3 min log number to keep (fixed64); 4 oldest
// blob file (varint64); 5 oldest ancestor time (varint64 seconds); 6 file
// creation time (varint64); 7 file checksum (bytes); 8 checksum function name;
// 9 temperature (1 byte); 10/11 min/max timestamp; 12 unique id (two
// fixed64); 65 path id (1 byte). An unknown custom tag with bit 64 set is
// corruption; others are ignored.
//
// What this package writes: Comparator, LogNumber, PrevLogNumber,
// NextFileNumber, MinLogNumberToKeep, LastSequence, DeletedFile, and
// NewFile4 with custom tags 5, 6, 7 (empty unless known), 8 ("Unknown" unless
// known) and 2 when marked; never tag 12, whose value RocksDB would check
// against one it derives from the table. For column families:
// ColumnFamily, ColumnFamilyAdd (with the comparator and MaxColumnFamily,
// as RocksDB's add edit), ColumnFamilyDrop, and InAtomicGroup on each edit
// of a LogAndApplyGroup.
//
// # Column families
//
// Family 0, "default", exists implicitly. Every edit applies to the family
// its ColumnFamily names; LogNumber is per family (a WAL below it holds
// nothing of that family), the other counters are global. Ids are never
// reused: a new family's id is above MaxColumnFamily, which the MANIFEST
// records. A snapshot (a new MANIFEST) lays the families out as RocksDB's
// WriteCurrentStateToManifest: for each live family by id, an edit naming
// it (ColumnFamily, ColumnFamilyAdd except for the default) with the
// comparator, then an edit with its files and log number; the global
// counters ride on the default family's files edit.
//
// # Files
//
// CURRENT holds the name of the live MANIFEST followed by "\n". It is
// replaced atomically: written to NNNNNN.dbtmp (NNNNNN = the manifest's
// number), synced, renamed over CURRENT, and the directory synced.
//
// A fresh VersionSet writes MANIFEST-000001 with the edits {Comparator} and
// {LogNumber 0, PrevLogNumber 0, NextFileNumber 2, LastSequence 0}. A
// VersionSet loaded from an existing MANIFEST never appends to it: its first
// LogAndApply starts a new MANIFEST with a snapshot of the current state.
package version
