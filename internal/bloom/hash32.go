package bloom

import "encoding/binary"

// LegacySeed is the seed RocksDB's legacy Bloom filter passes to Hash32
// (BloomHash in util/hash.h). Do not change: it is part of the file format.
const LegacySeed = 0xbc9f1d34

// Hash32 is RocksDB's legacy 32-bit hash (util/hash.cc Hash, a MurmurHash1
// variant). Legacy Bloom filters use it with LegacySeed and the data-block
// hash index uses it with seed 397.
//
// The 1..3 trailing bytes are sign-extended (as C's signed char) before they
// are added, so bytes ≥ 0x80 hash differently from a zero-extending variant.
// It does not allocate.
func Hash32(b []byte, seed uint32) uint32 {
	const m = 0xc6a4a793
	h := seed ^ (uint32(len(b)) * m)
	for len(b) >= 4 {
		h += binary.LittleEndian.Uint32(b)
		h *= m
		h ^= h >> 16
		b = b[4:]
	}
	switch len(b) {
	case 3:
		h += uint32(int32(int8(b[2]))) << 16
		fallthrough
	case 2:
		h += uint32(int32(int8(b[1]))) << 8
		fallthrough
	case 1:
		h += uint32(int32(int8(b[0])))
		h *= m
		h ^= h >> 24
	}
	return h
}
