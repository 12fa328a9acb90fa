package bloom

import (
	"encoding/binary"
	"math/bits"
)

// This file holds a Go port of the 64-bit XXH3 *preview* hash of xxHash
// v0.7.2, seed 0, as vendored by RocksDB (util/xxph3.h, XXPH3_64bits; RocksDB
// calls it Hash64/GetSliceHash64). FastLocalBloom and Ribbon filters hash keys
// with it. It is not the final XXH3 (xxHash ≥ 0.8, github.com/zeebo/xxh3):
//
//   - the long-input accumulator adds each input lane to its own accumulator
//     (final XXH3 adds it to the neighbouring lane);
//   - the 4..8 and 9..16 byte paths mix differently;
//   - RocksDB changed the empty input to hash the secret instead of
//     returning 0.
//
// Results are identical on every platform: all reads are little-endian.

const (
	prime32_1 = 0x9E3779B1
	prime32_2 = 0x85EBCA77
	prime32_3 = 0xC2B2AE3D

	prime64_1 = 0x9E3779B185EBCA87
	prime64_2 = 0xC2B2AE3D27D4EB4F
	prime64_3 = 0x165667B19E3779F9
	prime64_4 = 0x85EBCA77C2B2AE63
	prime64_5 = 0x27D4EB2F165667C5

	stripeLen      = 64  // bytes consumed per accumulate step
	secretSize     = 192 // len(xxSecret)
	secretSizeMin  = 136 // XXH3_SECRET_SIZE_MIN
	consumeRate    = 8   // secret bytes advanced per stripe
	roundsPerBlock = (secretSize - stripeLen) / consumeRate
	blockLen       = stripeLen * roundsPerBlock // 1024
	midSizeMax     = 240
)

// xxSecret is the default 192-byte secret of xxHash v0.7.2.
var xxSecret = [secretSize]byte{
	0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
	0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
	0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
	0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
	0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
	0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
	0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
	0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
	0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
	0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
	0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
	0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
}

// Secret words used by the short-input paths, read once.
var (
	secret32At0 = uint64(binary.LittleEndian.Uint32(xxSecret[0:]))
	secret64At0 = binary.LittleEndian.Uint64(xxSecret[0:])
	secret64At8 = binary.LittleEndian.Uint64(xxSecret[8:])
)

// HashKey returns the XXH3-preview 64-bit hash (seed 0) of key, the hash that
// RocksDB's FastLocalBloom and Ribbon filters use. It does not allocate.
func HashKey(key []byte) uint64 {
	n := len(key)
	switch {
	case n <= 16:
		return xxph3Len0To16(key)
	case n <= 128:
		return xxph3Len17To128(key)
	case n <= midSizeMax:
		return xxph3Len129To240(key)
	default:
		return xxph3Long(key)
	}
}

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func secret64(off int) uint64 { return binary.LittleEndian.Uint64(xxSecret[off:]) }

func xxAvalanche(h uint64) uint64 {
	h ^= h >> 37
	h *= prime64_3
	h ^= h >> 32
	return h
}

func mul128Fold64(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func xxph3Len0To16(p []byte) uint64 {
	n := len(p)
	switch {
	case n > 8:
		lo := le64(p) ^ secret64At0
		hi := le64(p[n-8:]) ^ secret64At8
		acc := uint64(n) + (lo + hi) + mul128Fold64(lo, hi)
		return xxAvalanche(acc)
	case n >= 4:
		inLo := uint64(binary.LittleEndian.Uint32(p))
		inHi := uint64(binary.LittleEndian.Uint32(p[n-4:]))
		keyed := (inLo | inHi<<32) ^ secret64At0
		mix := uint64(n) + (keyed^(keyed>>51))*prime32_1
		return xxAvalanche((mix ^ (mix >> 47)) * prime64_2)
	case n > 0:
		c1, c2, c3 := uint32(p[0]), uint32(p[n>>1]), uint32(p[n-1])
		combined := c1 | c2<<8 | c3<<16 | uint32(n)<<24
		keyed := uint64(combined) ^ secret32At0
		return xxAvalanche(keyed * prime64_1)
	default:
		// RocksDB's change to the preview: hash the (zero) seed with the
		// secret rather than return 0.
		return mul128Fold64(secret64At0, prime64_2)
	}
}

// mix16 folds 16 input bytes at p with 16 secret bytes at secret[off:].
func mix16(p []byte, off int) uint64 {
	return mul128Fold64(le64(p)^secret64(off), le64(p[8:])^secret64(off+8))
}

func xxph3Len17To128(p []byte) uint64 {
	n := len(p)
	acc := uint64(n) * prime64_1
	if n > 32 {
		if n > 64 {
			if n > 96 {
				acc += mix16(p[48:], 96)
				acc += mix16(p[n-64:], 112)
			}
			acc += mix16(p[32:], 64)
			acc += mix16(p[n-48:], 80)
		}
		acc += mix16(p[16:], 32)
		acc += mix16(p[n-32:], 48)
	}
	acc += mix16(p, 0)
	acc += mix16(p[n-16:], 16)
	return xxAvalanche(acc)
}

func xxph3Len129To240(p []byte) uint64 {
	const startOffset, lastOffset = 3, 17
	n := len(p)
	acc := uint64(n) * prime64_1
	for i := 0; i < 8; i++ {
		acc += mix16(p[16*i:], 16*i)
	}
	acc = xxAvalanche(acc)
	rounds := n / 16
	for i := 8; i < rounds; i++ {
		acc += mix16(p[16*i:], 16*(i-8)+startOffset)
	}
	acc += mix16(p[n-16:], secretSizeMin-lastOffset)
	return xxAvalanche(acc)
}

// accumulate512 mixes one 64-byte stripe into acc (the preview's 64-bit
// accumulator form: each lane adds its own input word).
func accumulate512(acc *[8]uint64, stripe []byte, secret []byte) {
	stripe = stripe[:stripeLen]
	secret = secret[:stripeLen]
	for i := 0; i < 8; i++ {
		v := le64(stripe[8*i:])
		k := v ^ le64(secret[8*i:])
		acc[i] += v + (k&0xFFFFFFFF)*(k>>32)
	}
}

func scrambleAcc(acc *[8]uint64) {
	secret := xxSecret[secretSize-stripeLen:]
	for i := 0; i < 8; i++ {
		a := acc[i]
		a ^= a >> 47
		a ^= le64(secret[8*i:])
		a *= prime32_1
		acc[i] = a
	}
}

func xxph3Long(p []byte) uint64 {
	const lastAccStart, mergeAccsStart = 7, 11
	n := len(p)
	acc := [8]uint64{prime32_3, prime64_1, prime64_2, prime64_3, prime64_4, prime32_2, prime64_5, prime32_1}
	blocks := n / blockLen
	for b := 0; b < blocks; b++ {
		in := p[b*blockLen:]
		for s := 0; s < roundsPerBlock; s++ {
			accumulate512(&acc, in[s*stripeLen:], xxSecret[s*consumeRate:])
		}
		scrambleAcc(&acc)
	}
	tail := p[blocks*blockLen:]
	stripes := len(tail) / stripeLen
	for s := 0; s < stripes; s++ {
		accumulate512(&acc, tail[s*stripeLen:], xxSecret[s*consumeRate:])
	}
	if n&(stripeLen-1) != 0 {
		accumulate512(&acc, p[n-stripeLen:], xxSecret[secretSize-stripeLen-lastAccStart:])
	}
	result := uint64(n) * prime64_1
	for i := 0; i < 4; i++ {
		off := mergeAccsStart + 16*i
		result += mul128Fold64(acc[2*i]^secret64(off), acc[2*i+1]^secret64(off+8))
	}
	return xxAvalanche(result)
}
