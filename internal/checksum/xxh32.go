package checksum

import (
	"encoding/binary"
	"math/bits"
)

// XXH32, the 32-bit xxHash (Yann Collet's public-domain specification),
// written here because no module in go.mod provides it.

const (
	p32a uint32 = 2654435761
	p32b uint32 = 2246822519
	p32c uint32 = 3266489917
	p32d uint32 = 668265263
	p32e uint32 = 374761393
)

// XXH32 returns the 32-bit xxHash of b with the given seed.
func XXH32(b []byte, seed uint32) uint32 {
	n := len(b) &^ 15
	h := xxh32Stripes(b[:n], seed, len(b) >= 16)
	return xxh32Finish(h, b[n:], uint32(len(b)))
}

// xxh32WithTail returns XXH32(data ‖ tail) without copying data.
func xxh32WithTail(data []byte, tail byte, seed uint32) uint32 {
	total := len(data) + 1
	n := len(data) &^ 15
	var buf [16]byte
	rest := buf[:copy(buf[:], data[n:])]
	rest = append(rest, tail) // at most 16 bytes: stays in buf
	h := xxh32Stripes(data[:n], seed, total >= 16)
	if len(rest) == 16 {
		// The tail completes one more stripe: process it with the state
		// carried over from the stripes before it.
		h = xxh32Continue(h, rest)
		rest = rest[:0]
	}
	return xxh32Finish(h, rest, uint32(total))
}

type xxh32State struct {
	v1, v2, v3, v4 uint32
	long           bool
	seed           uint32
}

func (s xxh32State) merge() uint32 {
	if !s.long {
		return s.seed + p32e
	}
	return bits.RotateLeft32(s.v1, 1) + bits.RotateLeft32(s.v2, 7) +
		bits.RotateLeft32(s.v3, 12) + bits.RotateLeft32(s.v4, 18)
}

func xxh32Round(acc, in uint32) uint32 {
	acc += in * p32b
	return bits.RotateLeft32(acc, 13) * p32a
}

// xxh32Stripes consumes whole 16-byte stripes of b (len(b) % 16 == 0).
// long says whether the complete input is at least 16 bytes.
func xxh32Stripes(b []byte, seed uint32, long bool) xxh32State {
	s := xxh32State{v1: seed + p32a + p32b, v2: seed + p32b, v3: seed, v4: seed - p32a, long: long, seed: seed}
	return xxh32Continue(s, b)
}

func xxh32Continue(s xxh32State, b []byte) xxh32State {
	for ; len(b) >= 16; b = b[16:] {
		s.v1 = xxh32Round(s.v1, binary.LittleEndian.Uint32(b[0:]))
		s.v2 = xxh32Round(s.v2, binary.LittleEndian.Uint32(b[4:]))
		s.v3 = xxh32Round(s.v3, binary.LittleEndian.Uint32(b[8:]))
		s.v4 = xxh32Round(s.v4, binary.LittleEndian.Uint32(b[12:]))
	}
	return s
}

func xxh32Finish(s xxh32State, rest []byte, total uint32) uint32 {
	h := s.merge() + total
	for ; len(rest) >= 4; rest = rest[4:] {
		h += binary.LittleEndian.Uint32(rest) * p32c
		h = bits.RotateLeft32(h, 17) * p32d
	}
	for _, c := range rest {
		h += uint32(c) * p32e
		h = bits.RotateLeft32(h, 11) * p32a
	}
	h ^= h >> 15
	h *= p32b
	h ^= h >> 13
	h *= p32c
	h ^= h >> 16
	return h
}
