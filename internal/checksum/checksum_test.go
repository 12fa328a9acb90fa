package checksum

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const miscVectors = "testdata/misc.tsv"

// TestChecksum_Vectors checks CRC32C (plain and masked) and every block
// trailer checksum against values computed independently of RocksDB.
func TestChecksum_Vectors(t *testing.T) {
	f, err := os.Open(miscVectors)
	require.NoError(t, err)
	defer f.Close()
	types := map[string]Type{"crc32c(1)": CRC32C, "xxhash32(2)": XXHash, "xxhash64(3)": XXHash64, "xxh3(4)": XXH3}
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		fs := strings.Split(line, "\t")
		require.Len(t, fs, 4, line)
		in, err := hex.DecodeString(fs[1])
		require.NoError(t, err)
		want, err := strconv.ParseUint(fs[3], 16, 32)
		require.NoError(t, err)
		switch fs[0] {
		case "crc32c_unmasked":
			require.Equal(t, uint32(want), CRC(in), line)
		case "crc32c_masked":
			require.Equal(t, uint32(want), MaskedCRC(in), line)
			require.Equal(t, CRC(in), Unmask(uint32(want)))
		case "block_trailer_checksum":
			var name string
			var ct int
			_, err := fmt.Sscanf(fs[2], "checksum=%s compression_type_byte=%d", &name, &ct)
			require.NoError(t, err, line)
			typ, ok := types[name]
			require.True(t, ok, line)
			require.Equal(t, uint32(want), Block(typ, in, byte(ct)), line)
		default:
			continue
		}
		n++
	}
	require.NoError(t, sc.Err())
	require.Greater(t, n, 100)
}

// TestXXH32_Known checks XXH32 against published vectors and against the
// split (data ‖ tail byte) form for every length around the stripe size.
func TestXXH32_Known(t *testing.T) {
	require.Equal(t, uint32(0x02cc5d05), XXH32(nil, 0))
	require.Equal(t, uint32(0x550d7456), XXH32([]byte("a"), 0))
	require.Equal(t, uint32(0x32d153ff), XXH32([]byte("abc"), 0))
	require.Equal(t, uint32(0x63a14d5f), XXH32([]byte("abcdefghijklmnopqrstuvwxyz"), 0))
	buf := make([]byte, 100)
	for i := range buf {
		buf[i] = byte(i*7 + 3)
	}
	for n := 0; n < len(buf); n++ {
		require.Equal(t, XXH32(buf[:n+1], 0), xxh32WithTail(buf[:n], buf[n], 0), "n=%d", n)
	}
}

func TestMask_RoundTrip(t *testing.T) {
	for _, c := range []uint32{0, 1, 0xffffffff, 0x12345678, 0xa282ead8} {
		require.Equal(t, c, Unmask(Mask(c)))
	}
}

func TestBlock_NoAlloc(t *testing.T) {
	data := make([]byte, 4096)
	for _, typ := range []Type{None, CRC32C, XXHash, XXHash64, XXH3} {
		allocs := testing.AllocsPerRun(10, func() { _ = Block(typ, data, 1) })
		require.Zero(t, allocs, typ.String())
	}
}

func BenchmarkBlock(b *testing.B) {
	data := make([]byte, 4096)
	for i := range data {
		data[i] = byte(i * 31)
	}
	for _, typ := range []Type{CRC32C, XXHash, XXHash64, XXH3} {
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				_ = Block(typ, data, 1)
			}
		})
	}
}
