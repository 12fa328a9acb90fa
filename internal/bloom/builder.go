package bloom

import (
	"encoding/binary"
	"sync"
)

// Format selects the filter format a Builder writes.
type Format uint8

const (
	// FastLocal is RocksDB's FastLocalBloom (metadata byte 0xFF), the format
	// of format_version 5 tables. Keys are hashed with HashKey.
	FastLocal Format = iota
	// Legacy is the cache-local Bloom filter written by format_version ≤ 4
	// (and by Pebble). Keys are hashed with Hash32(key, LegacySeed).
	Legacy
)

// String returns "fastlocal" or "legacy".
func (f Format) String() string {
	switch f {
	case FastLocal:
		return "fastlocal"
	case Legacy:
		return "legacy"
	default:
		return "unknown"
	}
}

const (
	metadataLen    = 5
	lineBytes      = 64
	lineBits       = lineBytes * 8
	maxBitsPerKey  = 100
	fastLocalMeta  = 0xFF // int8(-1): newer Bloom
	ribbonMeta     = 0xFE // int8(-2): Ribbon
	fastLocalProbe = 0x9e3779b9
)

// Builder accumulates key hashes and writes one full filter block.
//
// Invariants: the chunks, in order, hold one entry per run of equal
// consecutive key hashes (64-bit XXH3-preview hashes for FastLocal,
// zero-extended 32-bit Hash32 values for Legacy), in insertion order; every
// chunk has capacity chunkLen and all but the last are full; n is the
// number of entries. A Builder is not safe for concurrent use.
type Builder struct {
	format     Format
	bitsPerKey int // clamped to [1, maxBitsPerKey]
	chunks     []*[]uint64
	n          int
}

// chunkLen is the number of hashes per chunk (256 KiB). A table's filter
// keeps one hash per key (and per prefix) until it is finished; fixed
// chunks, pooled across builders, hold exactly that many, where one
// growing slice held up to twice as many and, while it grew, three times.
const chunkLen = 1 << 15

var chunkPool = sync.Pool{New: func() any {
	c := make([]uint64, 0, chunkLen)
	return &c
}}

// NewBuilder returns a Builder writing format at bitsPerKey bits per key.
// bitsPerKey is clamped to [1, 100] (RocksDB clamps at 100 and writes no
// filter below 1; callers decide whether to build a filter at all).
func NewBuilder(bitsPerKey int, format Format) *Builder {
	if bitsPerKey < 1 {
		bitsPerKey = 1
	}
	if bitsPerKey > maxBitsPerKey {
		bitsPerKey = maxBitsPerKey
	}
	if format != Legacy {
		format = FastLocal
	}
	return &Builder{format: format, bitsPerKey: bitsPerKey}
}

// Release hands the builder's hash chunks to later builders. The builder
// is empty afterwards; a filter Finish returned stays valid (it does not
// alias the chunks). A builder that is dropped without Release leaves its
// chunks to the garbage collector.
func (b *Builder) Release() {
	for i, c := range b.chunks {
		*c = (*c)[:0]
		chunkPool.Put(c)
		b.chunks[i] = nil
	}
	b.chunks = b.chunks[:0]
	b.n = 0
}

// each calls f for every hash, in insertion order.
func (b *Builder) each(f func(h uint64)) {
	for _, c := range b.chunks {
		for _, h := range *c {
			f(h)
		}
	}
}

// Format returns the format the builder writes.
func (b *Builder) Format() Format { return b.format }

// AddKey adds key (a user key or a prefix). A key whose hash equals that of
// the previously added key is not added again, matching RocksDB, which
// dedups consecutive duplicate hashes.
func (b *Builder) AddKey(key []byte) {
	var h uint64
	if b.format == Legacy {
		h = uint64(Hash32(key, LegacySeed))
	} else {
		h = HashKey(key)
	}
	var last *[]uint64
	if k := len(b.chunks); k > 0 {
		last = b.chunks[k-1]
		if (*last)[len(*last)-1] == h {
			return
		}
	}
	if last == nil || len(*last) == chunkLen {
		last = chunkPool.Get().(*[]uint64)
		b.chunks = append(b.chunks, last)
	}
	*last = append(*last, h)
	b.n++
}

// NumEntries returns the number of hashes added (after consecutive dedup).
func (b *Builder) NumEntries() int { return b.n }

// Reset forgets all added keys; their chunks go back to the pool.
func (b *Builder) Reset() { b.Release() }

// Size returns the length in bytes that Finish will return for the keys
// added so far, metadata included.
func (b *Builder) Size() int {
	if b.format == Legacy {
		lines := legacyNumLines(b.n, b.bitsPerKey)
		return int(lines)*lineBytes + metadataLen
	}
	return fastLocalLen(b.n, b.bitsPerKey*1000) + metadataLen
}

// Finish returns a newly allocated filter block (bits and the 5 metadata
// bytes) for the keys added since the last Reset. The builder keeps its keys;
// call Reset to start the next filter. With no keys it returns only the
// metadata, a block that matches nothing.
func (b *Builder) Finish() []byte {
	if b.format == Legacy {
		return b.finishLegacy()
	}
	return b.finishFastLocal()
}

// fastLocalLen returns the number of filter-bit bytes RocksDB's
// FastLocalBloomBitsBuilder::CalculateSpace allots to n entries.
func fastLocalLen(n, millibitsPerKey int) int {
	raw := (uint64(n)*uint64(millibitsPerKey) + 7999) / 8000
	if raw > 0xffffffc0 {
		raw = 0xffffffc0
	}
	return int((raw + 63) &^ 63)
}

// chooseNumProbes is FastLocalBloomImpl::ChooseNumProbes: the probe count
// RocksDB measured best for each bits/key.
func chooseNumProbes(millibitsPerKey int) int {
	limits := [...]struct{ max, probes int }{
		{2080, 1}, {3580, 2}, {5100, 3}, {6640, 4}, {8300, 5}, {10070, 6},
		{11720, 7}, {14001, 8}, {16050, 9}, {18300, 10}, {22001, 11}, {25501, 12},
	}
	for _, l := range limits {
		if millibitsPerKey <= l.max {
			return l.probes
		}
	}
	if millibitsPerKey > 50000 {
		return 24
	}
	return (millibitsPerKey-1)/2000 - 1
}

func (b *Builder) finishFastLocal() []byte {
	millibits := b.bitsPerKey * 1000
	n := fastLocalLen(b.n, millibits)
	probes := chooseNumProbes(millibits)
	out := make([]byte, n+metadataLen)
	if n > 0 {
		lines := uint64(n / lineBytes)
		b.each(func(h uint64) {
			line := (uint64(uint32(h)) * lines) >> 32
			data := out[line*lineBytes : line*lineBytes+lineBytes]
			h2 := uint32(h >> 32)
			for i := 0; i < probes; i++ {
				bit := h2 >> 23
				data[bit>>3] |= 1 << (bit & 7)
				h2 *= fastLocalProbe
			}
		})
	}
	out[n] = fastLocalMeta
	out[n+1] = 0 // sub-implementation: FastLocalBloom
	out[n+2] = byte(probes)
	return out
}

// legacyNumLines returns the number of 64-byte lines RocksDB's
// LegacyBloomBitsBuilder::CalculateSpace allots to n entries: enough for
// n*bitsPerKey bits, made odd so that more hash bits select the line.
func legacyNumLines(n, bitsPerKey int) uint32 {
	if n == 0 {
		return 0
	}
	totalBits := uint64(n) * uint64(bitsPerKey)
	if totalBits > 0xffff0000 {
		totalBits = 0xffff0000
	}
	lines := uint32((totalBits + lineBits - 1) / lineBits)
	if lines%2 == 0 {
		lines++
	}
	return lines
}

// legacyNumProbes is LegacyNoLocalityBloomImpl::ChooseNumProbes.
func legacyNumProbes(bitsPerKey int) int {
	p := int(float64(bitsPerKey) * 0.69) // as RocksDB computes it
	if p < 1 {
		p = 1
	}
	if p > 30 {
		p = 30
	}
	return p
}

func (b *Builder) finishLegacy() []byte {
	lines := legacyNumLines(b.n, b.bitsPerKey)
	probes := legacyNumProbes(b.bitsPerKey)
	n := int(lines) * lineBytes
	out := make([]byte, n+metadataLen)
	b.each(func(h64 uint64) {
		h := uint32(h64)
		line := uint64(h%lines) * lineBytes
		data := out[line : line+lineBytes]
		delta := h>>17 | h<<15
		for i := 0; i < probes; i++ {
			bit := h & (lineBits - 1)
			data[bit>>3] |= 1 << (bit & 7)
			h += delta
		}
	})
	out[n] = byte(probes)
	binary.LittleEndian.PutUint32(out[n+1:], lines)
	return out
}

// ApproximateNumEntries returns how many keys a filter of at most bytes
// bytes (metadata included) holds at the builder's bits per key, as
// RocksDB's FilterBitsBuilder::ApproximateNumEntries computes it: the
// number of keys a partitioned filter puts in one partition before it asks
// for a cut. It may be 0 when bytes is below the smallest filter.
func (b *Builder) ApproximateNumEntries(bytes int) int {
	if b.format == Legacy {
		if bytes <= 0 {
			return 0
		}
		bits := uint64(bytes) * 8
		if bits > 0xffff0000 {
			bits = 0xffff0000
		}
		n := int(uint32(bits)/uint32(b.bitsPerKey)) + 1
		for ; n >= 1; n-- {
			if int(legacyNumLines(n, b.bitsPerKey))*lineBytes+metadataLen <= bytes {
				break
			}
		}
		return n
	}
	noMeta := 0
	if bytes >= metadataLen {
		rv := uint64(bytes - metadataLen)
		if rv > 0xffffffc0 {
			rv = 0xffffffc0
		}
		noMeta = int(rv &^ 63)
	}
	return int(uint64(8000) * uint64(noMeta) / uint64(b.bitsPerKey*1000))
}
