package dbgen

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The C++ standard fixes the 10000th output of std::mt19937_64 seeded with
// its default 5489 at 9981545732273789042.
func TestMT64_MatchesStdMT19937_64(t *testing.T) {
	m := NewMT64(5489)
	var v uint64
	for range 10000 {
		v = m.Next()
	}
	require.Equal(t, uint64(9981545732273789042), v)
}

func TestParkMiller_Sequence(t *testing.T) {
	// 16807^n mod (2^31-1) from seed 1: the minimal standard's known values.
	r := NewParkMiller(1)
	require.Equal(t, uint32(16807), r.Next())
	require.Equal(t, uint32(282475249), r.Next())
	require.Equal(t, uint32(1622650073), r.Next())
	// Seeds 0 and 2^31-1 are fixed points; RocksDB maps them to 1.
	require.Equal(t, uint32(16807), NewParkMiller(0).Next())
	require.Equal(t, uint32(16807), NewParkMiller(1<<31-1).Next())
}

func fillHex(kg KeyGen, size int, v uint64, num int64) string {
	dst := make([]byte, size)
	kg.Fill(dst, v, num)
	return hex.EncodeToString(dst)
}

func zeros(n int) string { return hex.EncodeToString([]byte(strings.Repeat("0", n))) }

func TestKeyGen_Layout(t *testing.T) {
	cases := []struct {
		name string
		kg   KeyGen
		size int
		v    uint64
		num  int64
		want string
	}{
		{"plain16", KeyGen{}, 16, 1, 1000, "0000000000000001" + zeros(8)},
		{"short", KeyGen{}, 4, 0x0102030405, 1000, "02030405"},
		{"exact8", KeyGen{}, 8, 0x1122334455667788, 1000, "1122334455667788"},
		// readmissing: one byte longer, so an extra '0' at the end.
		{"missing", KeyGen{}, 17, 1, 1000, "0000000000000001" + zeros(9)},
		// prefix_size=12 keys_per_prefix=10, num=1000: 100 prefixes,
		// prefix = 123 % 100 = 23 = 0x17.
		{"prefix12", KeyGen{PrefixSize: 12, KeysPerPrefix: 10}, 24, 123, 1000,
			"0000000000000017" + zeros(4) + "000000000000007b" + zeros(4)},
		// Prefix shorter than 8: only its low bytes, no padding.
		{"prefix4", KeyGen{PrefixSize: 4, KeysPerPrefix: 2}, 16, 0x0105, 1000,
			"00000105" + "0000000000000105" + zeros(4)},
		// Key space too small for the prefix: the value is cut to the key.
		{"prefixFull", KeyGen{PrefixSize: 12, KeysPerPrefix: 1}, 16, 7, 100,
			"0000000000000007" + zeros(4) + "00000007"},
		// prefix_size without keys_per_prefix changes nothing.
		{"prefixOnly", KeyGen{PrefixSize: 12}, 16, 5, 1000, "0000000000000005" + zeros(8)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, fillHex(c.kg, c.size, c.v, c.num))
		})
	}
}

// First value of db_bench's RandomGenerator (Random(301), ratio 0.5), as
// RocksDB 7.8.3 wrote it with -benchmarks=fillseq -num=1
// -compression_type=none: 50 printable bytes repeated to 100.
func TestValueGen_FirstValue(t *testing.T) {
	const half = "5e7b56687a22212f25774d5a3b276120462f52455a4a34547740254e587879323f2e417256435a3242365b6a6e5564293420"
	g := NewValueGen(0.5, 100)
	require.Equal(t, half+half, hex.EncodeToString(g.Generate(100)))
	require.GreaterOrEqual(t, len(g.data), 1<<20)
	require.Zero(t, len(g.data)%100)
	for _, c := range g.data {
		require.True(t, c >= ' ' && c <= '~')
	}
}

func TestValueGen_WrapsAndRatio(t *testing.T) {
	g := NewValueGen(0.25, 100)
	first := string(g.Generate(100))
	require.Equal(t, first[:25], first[25:50]) // 25 random bytes repeated
	n := len(g.data) / 100
	for range n - 1 {
		g.Generate(100)
	}
	require.Equal(t, first, string(g.Generate(100)), "wraps to the start")
	big := NewValueGen(1, 2<<20)
	require.Len(t, big.Generate(2<<20), 2<<20)
}
