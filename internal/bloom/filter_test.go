package bloom

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// dbBenchKey is the 16-byte db_bench key for counter v.
func dbBenchKey(v uint64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, v)
	copy(k[8:], "00000000")
	return k
}

func randomKeys(rng *rand.Rand, n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		k := make([]byte, 8+rng.Intn(24))
		rng.Read(k)
		keys[i] = k
	}
	return keys
}

func buildFilter(bpk int, f Format, keys [][]byte) []byte {
	b := NewBuilder(bpk, f)
	for _, k := range keys {
		b.AddKey(k)
	}
	return b.Finish()
}

func TestBuilder_RoundTripNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, f := range []Format{FastLocal, Legacy} {
		for _, bpk := range []int{1, 5, 10, 16, 23} {
			for _, n := range []int{1, 2, 10, 333, 5000} {
				keys := randomKeys(rng, n)
				filter := buildFilter(bpk, f, keys)
				require.Equal(t, f.String(), Kind(filter))
				for _, k := range keys {
					require.Truef(t, MayContain(filter, k), "%v bpk=%d n=%d key %x", f, bpk, n, k)
					require.True(t, MayContainHash(filter, HashKey(k), k))
				}
			}
		}
	}
}

// expectedFPRate is the false-positive rate of a Bloom filter whose n keys
// fall into lines of 512 bits (Poisson distributed), each key setting
// probes random bits of its line.
func expectedFPRate(bitsPerKey float64, probes int) float64 {
	lambda := lineBits / bitsPerKey // mean keys per line
	rate := 0.0
	p := math.Exp(-lambda) // Poisson P(j=0)
	for j := 0; j < 400; j++ {
		setFrac := 1 - math.Pow(1-1.0/lineBits, float64(probes*j))
		rate += p * math.Pow(setFrac, float64(probes))
		p *= lambda / float64(j+1)
	}
	return rate
}

func TestBuilder_FalsePositiveRate(t *testing.T) {
	const n, queries = 20000, 200000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = dbBenchKey(uint64(i))
	}
	for _, tc := range []struct {
		f   Format
		bpk int
	}{{FastLocal, 10}, {FastLocal, 16}, {Legacy, 10}, {Legacy, 16}} {
		t.Run(fmt.Sprintf("%v-%d", tc.f, tc.bpk), func(t *testing.T) {
			filter := buildFilter(tc.bpk, tc.f, keys)
			fp := 0
			for i := 0; i < queries; i++ {
				if MayContain(filter, dbBenchKey(uint64(n+i))) {
					fp++
				}
			}
			probes := chooseNumProbes(tc.bpk * 1000)
			if tc.f == Legacy {
				probes = legacyNumProbes(tc.bpk)
			}
			// Actual bits per key after rounding the size up.
			bitsPerKey := float64(len(filter)-metadataLen) * 8 / n
			want := expectedFPRate(bitsPerKey, probes)
			got := float64(fp) / queries
			t.Logf("%v bpk=%d probes=%d: fp rate %.5f, theory %.5f", tc.f, tc.bpk, probes, got, want)
			if tc.f == Legacy {
				// The legacy probes are an arithmetic progression (h += delta)
				// within the line, correlated with the line choice, so the
				// rate exceeds the independent-probe figure, notably at high
				// bits/key (RocksDB's motivation for FastLocalBloom). Bound
				// it by the rates this implementation is known to reach.
				bound := map[int]float64{10: 0.0135, 16: 0.0045}[tc.bpk]
				require.Greater(t, got, want*0.5)
				require.Less(t, got, bound)
				return
			}
			require.InDelta(t, want, got, want*0.5+0.0002)
		})
	}
}

func TestBuilder_SizesAndMetadata(t *testing.T) {
	keys := make([][]byte, 2200)
	for i := range keys {
		keys[i] = dbBenchKey(uint64(i))
	}
	for _, tc := range []struct {
		f    Format
		bpk  int
		n    int
		size int
		meta []byte
	}{
		{FastLocal, 10, 2000, 2565, []byte{0xff, 0x00, 0x06, 0x00, 0x00}},
		{FastLocal, 10, 2200, 2757, []byte{0xff, 0x00, 0x06, 0x00, 0x00}},
		{FastLocal, 16, 2000, 4037, []byte{0xff, 0x00, 0x09, 0x00, 0x00}},
		{FastLocal, 10, 0, 5, []byte{0xff, 0x00, 0x06, 0x00, 0x00}},
		{FastLocal, 10, 1, 69, []byte{0xff, 0x00, 0x06, 0x00, 0x00}},
		{Legacy, 10, 2000, 2629, []byte{0x06, 0x29, 0x00, 0x00, 0x00}},
		{Legacy, 16, 2000, 4037, []byte{0x0b, 0x3f, 0x00, 0x00, 0x00}},
		{Legacy, 10, 0, 5, []byte{0x06, 0x00, 0x00, 0x00, 0x00}},
		{Legacy, 10, 1, 69, []byte{0x06, 0x01, 0x00, 0x00, 0x00}},
	} {
		b := NewBuilder(tc.bpk, tc.f)
		for _, k := range keys[:tc.n] {
			b.AddKey(k)
			b.AddKey(k) // consecutive duplicate: not counted
		}
		require.Equal(t, tc.n, b.NumEntries())
		require.Equal(t, tc.size, b.Size())
		filter := b.Finish()
		require.Lenf(t, filter, tc.size, "%v bpk=%d n=%d", tc.f, tc.bpk, tc.n)
		require.Equal(t, tc.meta, filter[len(filter)-5:])
		b.Reset()
		require.Zero(t, b.NumEntries())
	}
}

func TestBuilder_DedupOnlyConsecutive(t *testing.T) {
	b := NewBuilder(10, FastLocal)
	for _, k := range []string{"a", "a", "b", "a", "b", "b"} {
		b.AddKey([]byte(k))
	}
	require.Equal(t, 4, b.NumEntries())
}

func TestChooseNumProbes(t *testing.T) {
	for _, tc := range []struct{ milli, probes int }{
		{1000, 1}, {2080, 1}, {2081, 2}, {10000, 6}, {10070, 6}, {10071, 7},
		{16000, 9}, {25501, 12}, {28000, 12}, {28001, 13}, {50000, 23}, {50001, 24},
		{100000, 24},
	} {
		require.Equal(t, tc.probes, chooseNumProbes(tc.milli), "millibits %d", tc.milli)
	}
	require.Equal(t, 6, legacyNumProbes(10))
	require.Equal(t, 1, legacyNumProbes(1))
	require.Equal(t, 30, legacyNumProbes(100))
}

func TestMayContain_SpecialBlocks(t *testing.T) {
	key := []byte("key")
	for _, f := range [][]byte{nil, {}, {0xff, 0, 6, 0, 0}, {1, 2, 3}} {
		require.False(t, MayContain(f, key))
		require.Equal(t, KindEmpty, Kind(f))
	}
	bits := make([]byte, 64) // all zero: a valid filter would say "absent"
	withMeta := func(meta ...byte) []byte { return append(append([]byte{}, bits...), meta...) }

	require.False(t, MayContain(withMeta(0xff, 0, 6, 0, 0), key))
	require.False(t, MayContain(withMeta(6, 1, 0, 0, 0), key))
	for _, tc := range []struct {
		meta []byte
		kind string
	}{
		{[]byte{0xff, 1, 6, 0, 0}, KindUnknown},      // unknown sub-implementation
		{[]byte{0xff, 0, 6, 0, 1}, KindFastLocal},    // reserved bytes set
		{[]byte{0xff, 0, 0x26, 0, 0}, KindFastLocal}, // 128-byte lines
		{[]byte{0xff, 0, 0, 0, 0}, KindFastLocal},    // zero probes
		{[]byte{0xff, 0, 31, 0, 0}, KindFastLocal},   // 31 probes reserved
		{[]byte{0xfe, 0x19, 8, 0, 0}, KindRibbon},
		{[]byte{0, 1, 0, 0, 0}, KindUnknown},    // zero probes
		{[]byte{0x80, 1, 0, 0, 0}, KindUnknown}, // reserved negative
		{[]byte{6, 0, 0, 0, 0}, KindLegacy},     // zero lines
		{[]byte{6, 3, 0, 0, 0}, KindLegacy},     // 64 bytes not divisible by 3
		{[]byte{6, 2, 0, 0, 0}, KindLegacy},     // 32-byte lines: valid, all zero
	} {
		f := withMeta(tc.meta...)
		require.Equal(t, tc.kind, Kind(f), "meta %x", tc.meta)
		want := !(tc.meta[0] == 6 && tc.meta[1] == 2)
		require.Equal(t, want, MayContain(f, key), "meta %x", tc.meta)
	}
	// FastLocal metadata over fewer than 64 bit bytes cannot be probed.
	require.True(t, MayContain([]byte{0, 0, 0xff, 0, 6, 0, 0}, key))
	// 96-byte legacy lines are not a power of two.
	require.True(t, MayContain(append(make([]byte, 96), 6, 1, 0, 0, 0), key))
}

func TestMayContain_NoAllocs(t *testing.T) {
	keys := randomKeys(rand.New(rand.NewSource(2)), 100)
	for _, f := range []Format{FastLocal, Legacy} {
		filter := buildFilter(10, f, keys)
		probe := []byte("absent-key-0001")
		h := HashKey(probe)
		require.Zero(t, testing.AllocsPerRun(100, func() {
			_ = MayContain(filter, probe)
			_ = MayContainHash(filter, h, probe)
			_ = Kind(filter)
		}))
	}
}

func FuzzMayContain(f *testing.F) {
	f.Add([]byte{0xff, 0, 6, 0, 0}, []byte("k"))
	f.Add(append(make([]byte, 64), 6, 1, 0, 0, 0), []byte("k"))
	f.Add(append(make([]byte, 128), 0xff, 0, 6, 0, 0), []byte("key"))
	// Random filters, a third of them with a FastLocalBloom-looking
	// trailer (0xff marker, then a zero byte) so decoding gets past it.
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 1000; i++ {
		filter := make([]byte, rng.Intn(300))
		rng.Read(filter)
		if len(filter) > 5 && i%3 == 0 {
			filter[len(filter)-5] = 0xff
			filter[len(filter)-4] = 0
		}
		f.Add(filter, []byte("some key"))
	}
	f.Fuzz(func(t *testing.T, filter, key []byte) {
		_ = MayContain(filter, key)
		_ = Kind(filter)
	})
}

var sinkBool bool

func BenchmarkMayContain(b *testing.B) {
	const n = 100000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = dbBenchKey(uint64(i) * 2)
	}
	for _, f := range []Format{FastLocal, Legacy} {
		filter := buildFilter(10, f, keys)
		b.Run(f.String()+"-hit", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				sinkBool = MayContain(filter, keys[i%n])
			}
		})
		b.Run(f.String()+"-miss", func(b *testing.B) {
			probe := dbBenchKey(1)
			for i := 0; i < b.N; i++ {
				binary.BigEndian.PutUint64(probe, uint64(i)*2+1)
				sinkBool = MayContain(filter, probe)
			}
		})
	}
	filter := buildFilter(10, FastLocal, keys)
	b.Run("fastlocal-prehashed", func(b *testing.B) {
		h := HashKey(keys[7])
		for i := 0; i < b.N; i++ {
			sinkBool = MayContainHash(filter, h+uint64(i), nil)
		}
	})
}

// TestBuilder_Chunks: hashes span several chunks. Duplicates are dropped
// across a chunk boundary too, every key matches, and a builder made after
// Release, over the released chunks, writes the same filter for the same
// keys as a fresh one (pooled chunks start empty).
func TestBuilder_Chunks(t *testing.T) {
	for _, f := range []Format{FastLocal, Legacy} {
		n := 2*chunkLen + chunkLen/2
		b := NewBuilder(10, f)
		for i := 0; i < n; i++ {
			b.AddKey(dbBenchKey(uint64(i)))
			if i == chunkLen-1 {
				b.AddKey(dbBenchKey(uint64(i))) // the last of a full chunk, again
			}
		}
		require.Equal(t, n, b.NumEntries(), f.String())
		first := b.Finish()
		for i := 0; i < n; i++ {
			require.True(t, MayContain(first, dbBenchKey(uint64(i))), "%v key %d", f, i)
		}
		b.Release()
		require.Zero(t, b.NumEntries())

		again := NewBuilder(10, f)
		for i := 0; i < n; i++ {
			again.AddKey(dbBenchKey(uint64(i)))
		}
		require.Equal(t, first, again.Finish(), f.String())
		again.Release()
	}
}
