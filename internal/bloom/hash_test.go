package bloom

import (
	"bufio"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zeebo/xxh3"
)

// readTSV returns the non-comment, non-header rows of a tab-separated file.
func readTSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rows = append(rows, strings.Split(line, "\t"))
	}
	require.NoError(t, sc.Err())
	return rows
}

// vectorInput is the input pattern of xxph3_64_seed0.tsv.
func vectorInput(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return b
}

func TestHashKey_Vectors(t *testing.T) {
	rows := readTSV(t, "testdata/xxph3_64_seed0.tsv")
	checked := 0
	for _, r := range rows {
		if r[0] == "len" {
			continue
		}
		require.Len(t, r, 2)
		n, err := strconv.Atoi(r[0])
		require.NoError(t, err)
		want, err := strconv.ParseUint(r[1], 16, 64)
		require.NoError(t, err)
		in := vectorInput(n)
		got := HashKey(in)
		require.Equalf(t, want, got, "len %d: got %016x want %016x", n, got, want)
		// The preview differs from final XXH3; guard against a regression
		// to the wrong algorithm.
		require.NotEqualf(t, xxh3.Hash(in), got, "len %d equals final XXH3", n)
		checked++
	}
	require.Greater(t, checked, 300)
}

func TestHash32_Vectors(t *testing.T) {
	checked := 0
	for _, r := range readTSV(t, "testdata/misc.tsv") {
		if r[0] != "murmur32" {
			continue // CRC32C and block-trailer rows belong to other packages
		}
		require.Len(t, r, 4)
		in, err := hex.DecodeString(r[1])
		require.NoError(t, err)
		var seed uint32
		switch {
		case strings.HasPrefix(r[2], "seed=0xbc9f1d34"):
			seed = LegacySeed
		case strings.HasPrefix(r[2], "seed=397"):
			seed = 397
		default:
			t.Fatalf("unknown seed %q", r[2])
		}
		want, err := strconv.ParseUint(r[3], 16, 32)
		require.NoError(t, err)
		require.Equalf(t, uint32(want), Hash32(in, seed), "input %s %s", r[1], r[2])
		checked++
	}
	require.Equal(t, 18, checked)
}

func TestHashKey_NoAllocs(t *testing.T) {
	for _, n := range []int{0, 3, 8, 16, 100, 200, 2000} {
		in := vectorInput(n)
		allocs := testing.AllocsPerRun(100, func() { _ = HashKey(in) })
		require.Zero(t, allocs, "len %d", n)
	}
}

var sinkU64 uint64
var sinkU32 uint32

func BenchmarkHash(b *testing.B) {
	key := []byte("\x00\x00\x00\x00\x00\x00\x01\x2300000000") // db_bench key
	b.Run("xxph3-16B", func(b *testing.B) {
		b.SetBytes(int64(len(key)))
		for i := 0; i < b.N; i++ {
			sinkU64 += HashKey(key)
		}
	})
	b.Run("hash32-16B", func(b *testing.B) {
		b.SetBytes(int64(len(key)))
		for i := 0; i < b.N; i++ {
			sinkU32 += Hash32(key, LegacySeed)
		}
	})
	long := vectorInput(4096)
	b.Run("xxph3-4KiB", func(b *testing.B) {
		b.SetBytes(int64(len(long)))
		for i := 0; i < b.N; i++ {
			sinkU64 += HashKey(long)
		}
	})
}
