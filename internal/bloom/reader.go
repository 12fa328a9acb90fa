package bloom

import "encoding/binary"

// Kind names of filter blocks, as returned by Kind.
const (
	KindEmpty     = "empty"
	KindLegacy    = "legacy"
	KindFastLocal = "fastlocal"
	KindRibbon    = "ribbon"
	KindUnknown   = "unknown"
)

// Kind classifies a full filter block by its metadata, for diagnostics. A
// block that Kind calls "legacy" or "fastlocal" may still have an invalid
// geometry, in which case MayContain answers true.
func Kind(filter []byte) string {
	n := len(filter)
	if n <= metadataLen {
		return KindEmpty
	}
	meta := filter[n-metadataLen:]
	switch m := int8(meta[0]); {
	case m >= 1:
		return KindLegacy
	case meta[0] == fastLocalMeta && meta[1] == 0:
		return KindFastLocal
	case meta[0] == ribbonMeta:
		return KindRibbon
	default:
		return KindUnknown
	}
}

// MayContain reports whether key may have been added to filter. false means
// the key was certainly not added. Filters that cannot be evaluated (Ribbon,
// reserved or malformed metadata) answer true; a block of at most 5 bytes
// answers false, as RocksDB treats it as a filter of zero keys.
func MayContain(filter []byte, key []byte) bool {
	n := len(filter)
	if n <= metadataLen {
		return false
	}
	if filter[n-metadataLen] == fastLocalMeta {
		return MayContainHash(filter, HashKey(key), key)
	}
	return MayContainHash(filter, 0, key)
}

// MayContainHash is MayContain for a caller that already holds h =
// HashKey(key), typically to probe many filters with one key. A
// FastLocalBloom probe uses only h (key is not read) and touches one 64-byte
// line; a legacy filter rehashes key with Hash32. It does not allocate.
func MayContainHash(filter []byte, h uint64, key []byte) bool {
	n := len(filter)
	if n <= metadataLen {
		return false
	}
	bitsLen := n - metadataLen
	m := int8(filter[bitsLen])
	switch {
	case m == -1:
		return fastLocalMayMatch(filter[:bitsLen], filter[bitsLen+1:], h)
	case m >= 1:
		lines := binary.LittleEndian.Uint32(filter[bitsLen+1:])
		return legacyMayMatch(filter[:bitsLen], int(m), lines, Hash32(key, LegacySeed))
	default:
		// Ribbon, 0 probes, or reserved: cannot say "absent".
		return true
	}
}

// fastLocalMayMatch probes FastLocalBloom bits with hash h. rest holds the
// four metadata bytes after 0xFF: sub-implementation, block/probes byte and
// two reserved bytes.
func fastLocalMayMatch(bits []byte, rest []byte, h uint64) bool {
	w := binary.LittleEndian.Uint32(rest)
	// Sub-implementation 0, 64-byte lines (top 3 bits of the probes byte
	// zero) and zero reserved bytes: anything else is for a future writer.
	probes := (w >> 8) & 0xff
	if w&^0xff00 != 0 || probes < 1 || probes > 30 || len(bits) < lineBytes {
		return true
	}
	lines := uint64(len(bits) / lineBytes)
	off := ((uint64(uint32(h)) * lines) >> 32) * lineBytes
	line := (*[lineBytes]byte)(bits[off : off+lineBytes])
	h2 := uint32(h >> 32)
	for i := uint32(0); i < probes; i++ {
		bit := h2 >> 23
		if line[bit>>3]&(1<<(bit&7)) == 0 {
			return false
		}
		h2 *= fastLocalProbe
	}
	return true
}

// legacyMayMatch probes legacy Bloom bits with h = Hash32(key, LegacySeed).
// The line size is len(bits)/numLines and must be a power of two; RocksDB
// writes 64 bytes but reads other sizes written elsewhere.
func legacyMayMatch(bits []byte, probes int, numLines uint32, h uint32) bool {
	if numLines == 0 || len(bits)%int(numLines) != 0 {
		return true
	}
	lineLen := len(bits) / int(numLines)
	if lineLen&(lineLen-1) != 0 || lineLen > 1<<29 {
		return true
	}
	// lineLen*8 bits per line; lineLen ≤ 2^29 keeps the mask within 32 bits.
	mask := uint32(uint64(lineLen)*8 - 1)
	off := uint64(h%numLines) * uint64(lineLen)
	line := bits[off : off+uint64(lineLen)]
	delta := h>>17 | h<<15
	for i := 0; i < probes; i++ {
		bit := h & mask
		if line[bit>>3]&(1<<(bit&7)) == 0 {
			return false
		}
		h += delta
	}
	return true
}
