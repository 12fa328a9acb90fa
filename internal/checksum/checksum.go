// Package checksum computes the block checksums of RocksDB's block-based
// table format (RocksDB 7.8.3, docs/rocksdb-format.md §5–6) and the masked
// CRC32C that the table trailers, the WAL and the MANIFEST share.
//
// Every block of a table is followed by a 5-byte trailer:
//
//	compression_type (1 byte) ‖ checksum (fixed32, little-endian)
//
// The checksum covers the stored (possibly compressed) block bytes and the
// compression-type byte. Per checksum type (the byte values reach disk: do
// not change them):
//
//	0 None      0, never checked
//	1 CRC32C    Mask(crc32c(block ‖ type))
//	2 xxHash    XXH32(block ‖ type, seed 0)
//	3 xxHash64  low 32 bits of XXH64(block ‖ type, seed 0)
//	4 XXH3      low32(XXH3_64(block, seed 0)) ^ uint32(type)*0x6b9083d9
//
// XXH3 leaves the type byte out of the hash and folds it in with a multiply,
// so a checksum over a buffer that already ends in the type byte costs no
// copy.
package checksum

import (
	"hash/crc32"

	"github.com/cespare/xxhash/v2"
	"github.com/zeebo/xxh3"
)

// Type is a block checksum type as stored in the footer of a table. The
// values are RocksDB's ChecksumType codes: do not change them.
type Type uint8

const (
	None     Type = 0
	CRC32C   Type = 1
	XXHash   Type = 2 // XXH32
	XXHash64 Type = 3
	XXH3     Type = 4
)

// String returns RocksDB's name for the checksum type.
func (t Type) String() string {
	switch t {
	case None:
		return "kNoChecksum"
	case CRC32C:
		return "kCRC32c"
	case XXHash:
		return "kxxHash"
	case XXHash64:
		return "kxxHash64"
	case XXH3:
		return "kXXH3"
	}
	return "kUnknownChecksum"
}

// Valid reports whether t is a checksum type this package computes.
func (t Type) Valid() bool { return t <= XXH3 }

// xxh3TypeMultiplier folds the compression-type byte into an XXH3 block
// checksum (RocksDB's ChecksumModifierForContext-free trick, §6).
const xxh3TypeMultiplier = 0x6b9083d9

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Block returns the checksum of a block with the given stored bytes and
// compression-type byte, as written into the block trailer. Unknown types
// return 0. Block does not allocate.
func Block(t Type, data []byte, compressionType byte) uint32 {
	switch t {
	case CRC32C:
		c := ^crc32.Update(0, castagnoli, data)
		// One more byte by hand: crc32.Update would make a slice escape.
		c = castagnoli[byte(c)^compressionType] ^ c>>8
		return Mask(^c)
	case XXHash:
		return xxh32WithTail(data, compressionType, 0)
	case XXHash64:
		var d xxhash.Digest
		d.Reset()
		_, _ = d.Write(data)
		tb := [1]byte{compressionType}
		_, _ = d.Write(tb[:])
		return uint32(d.Sum64())
	case XXH3:
		return uint32(xxh3.Hash(data)) ^ uint32(compressionType)*xxh3TypeMultiplier
	}
	return 0
}

const maskDelta = 0xa282ead8

// Mask returns RocksDB's masked form of a CRC, stored so that a CRC of data
// that itself embeds CRCs does not degenerate.
func Mask(crc uint32) uint32 { return (crc>>15 | crc<<17) + maskDelta }

// Unmask inverts Mask.
func Unmask(masked uint32) uint32 {
	r := masked - maskDelta
	return r>>17 | r<<15
}

// CRC returns the plain (unmasked) CRC32C of the concatenation of bs.
func CRC(bs ...[]byte) uint32 {
	var c uint32
	for _, b := range bs {
		c = crc32.Update(c, castagnoli, b)
	}
	return c
}

// MaskedCRC returns Mask(CRC32C(concatenation of bs)), the checksum of WAL
// and MANIFEST records.
func MaskedCRC(bs ...[]byte) uint32 { return Mask(CRC(bs...)) }
