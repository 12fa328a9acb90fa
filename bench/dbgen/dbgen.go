// Package dbgen generates the keys, values and random key sequence of
// RocksDB's db_bench (tools/db_bench_tool.cc, v7.8.3), bit for bit, so that
// one command line gives the same workload on RocksDB, on Strata's
// cmd/dbbench and on the peer harness in bench/peers (Pebble, goleveldb,
// Badger). It is shared by those tools and is not covered by the API
// contract.
package dbgen

// Key and value generators that reproduce the byte streams of RocksDB's
// db_bench (tools/db_bench_tool.cc, v7.8.3), so one command line gives the
// same workload here and there:
//
//   - MT64 is std::mt19937_64, db_bench's per-thread Random64; every random
//     key is one Next() taken modulo -num.
//   - ParkMiller is RocksDB's util/random.h Random (Park-Miller, 16807 mod
//     2^31-1); db_bench seeds one with 301 to build its value buffer.
//   - ValueGen is db_bench's RandomGenerator for fixed-size values.
//   - KeyGen is Benchmark::GenerateKeyFromInt.

// MT64 is the 64-bit Mersenne Twister. Its output is bit-exact with the C++
// standard's std::mt19937_64 for the same seed.
type MT64 struct {
	state [mtN]uint64
	idx   int // next state word to temper; mtN means "regenerate first"
}

const (
	mtN         = 312
	mtM         = 156
	mtMatrixA   = 0xB5026F5AA96619E9
	mtUpperMask = 0xFFFFFFFF80000000
	mtLowerMask = 0x000000007FFFFFFF
	mtInitMult  = 6364136223846793005
)

func NewMT64(seed uint64) *MT64 {
	m := &MT64{idx: mtN}
	m.state[0] = seed
	for i := 1; i < mtN; i++ {
		p := m.state[i-1]
		m.state[i] = mtInitMult*(p^(p>>62)) + uint64(i)
	}
	return m
}

// twist regenerates the whole state block.
func (m *MT64) twist() {
	for i := 0; i < mtN; i++ {
		y := m.state[i]&mtUpperMask | m.state[(i+1)%mtN]&mtLowerMask
		v := m.state[(i+mtM)%mtN] ^ y>>1
		if y&1 == 1 {
			v ^= mtMatrixA
		}
		m.state[i] = v
	}
	m.idx = 0
}

// Next returns the next output, as std::mt19937_64::operator().
func (m *MT64) Next() uint64 {
	if m.idx >= mtN {
		m.twist()
	}
	x := m.state[m.idx]
	m.idx++
	x ^= (x >> 29) & 0x5555555555555555
	x ^= (x << 17) & 0x71D67FFFEDA60000
	x ^= (x << 37) & 0xFFF7EEE000000000
	x ^= x >> 43
	return x
}

// ParkMiller is RocksDB's Random: seed' = seed*16807 mod (2^31-1), computed
// without division. Its seed is always in [1, 2^31-2].
type ParkMiller struct{ seed uint32 }

func NewParkMiller(s uint32) *ParkMiller {
	const m = 1<<31 - 1
	s &= m
	if s == 0 || s == m {
		s = 1
	}
	return &ParkMiller{seed: s}
}

func (r *ParkMiller) Next() uint32 {
	const m = 1<<31 - 1
	p := uint64(r.seed) * 16807
	// (p >> 31) + (p & m) is p mod m, up to one subtraction.
	s := uint32((p >> 31) + (p & m))
	if s > m {
		s -= m
	}
	r.seed = s
	return s
}

func (r *ParkMiller) Uniform(n uint32) uint32 { return r.Next() % n }

// ValueGen hands out values from a fixed buffer of at least 1 MiB made of
// 100-byte pieces; each piece repeats int(100*ratio) random printable bytes,
// so a value compresses to about ratio of its size. Values are taken
// sequentially and wrap to the start when one would overrun the buffer.
// Each benchmark thread owns one ValueGen.
type ValueGen struct {
	data []byte
	pos  int
}

const valueBufferMin = 1 << 20

func NewValueGen(ratio float64, valueSize int) *ValueGen {
	rnd := NewParkMiller(301)
	limit := max(valueBufferMin, valueSize)
	raw := max(int(100*ratio), 1)
	data := make([]byte, 0, limit+100)
	rawData := make([]byte, raw)
	for len(data) < limit {
		for i := range rawData {
			rawData[i] = byte(' ' + rnd.Uniform(95))
		}
		piece := 0
		for piece < 100 {
			n := min(raw, 100-piece)
			data = append(data, rawData[:n]...)
			piece += n
		}
	}
	return &ValueGen{data: data}
}

// Generate returns the next n bytes; the slice aliases the shared buffer
// and must not be modified.
func (g *ValueGen) Generate(n int) []byte {
	if g.pos+n > len(g.data) {
		g.pos = 0
	}
	g.pos += n
	return g.data[g.pos-n : g.pos]
}

// KeyGen builds db_bench keys from integers.
//
// The key size is the length of the destination buffer. Layout with
// keysPerPrefix == 0:
//
//	| low min(8,keySize) bytes of v, big-endian | '0' padding |
//
// With keysPerPrefix > 0 the key starts with a prefixSize-byte prefix
// holding p = v % (numKeys/keysPerPrefix):
//
//	| low min(8,prefixSize) bytes of p, big-endian | '0' x (prefixSize-8) |
//	| low min(8,keySize-prefixSize) bytes of v, big-endian | '0' padding |
type KeyGen struct {
	PrefixSize    int
	KeysPerPrefix int64
}

// Fill writes the key for v into dst; len(dst) >= prefixSize.
func (kg *KeyGen) Fill(dst []byte, v uint64, numKeys int64) {
	pos := 0
	if kg.KeysPerPrefix > 0 {
		numPrefix := max(numKeys/kg.KeysPerPrefix, 1)
		putBigEndian(dst[:min(kg.PrefixSize, 8)], v%uint64(numPrefix))
		for i := 8; i < kg.PrefixSize; i++ {
			dst[i] = '0'
		}
		pos = kg.PrefixSize
	}
	n := min(len(dst)-pos, 8)
	putBigEndian(dst[pos:pos+n], v)
	for i := pos + n; i < len(dst); i++ {
		dst[i] = '0'
	}
}

// putBigEndian stores the low len(dst) bytes of v, most significant first.
func putBigEndian(dst []byte, v uint64) {
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = byte(v)
		v >>= 8
	}
}
