package bloom

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The SSTs in testdata/ were written by RocksDB 7.8.3's db_bench (the
// tables of the fixtures of the same names in db/testdata/rocksdb). This file locates their full
// filter block with a minimal parser: footer -> metaindex block ->
// "fullfilter.rocksdb.BuiltinBloomFilter" handle. Filter and metaindex blocks
// are never compressed, so no decompression is needed.

const filterMetaKey = "fullfilter.rocksdb.BuiltinBloomFilter"

func uvarint(t testing.TB, b []byte) (uint64, []byte) {
	t.Helper()
	v, n := binary.Uvarint(b)
	require.Positive(t, n, "bad varint")
	return v, b[n:]
}

// fixtureFilter returns the full filter block of testdata/<name>.sst.
func fixtureFilter(t testing.TB, name string) []byte {
	t.Helper()
	file, err := os.ReadFile("testdata/" + name + ".sst")
	require.NoError(t, err)
	require.Greater(t, len(file), 53)
	footer := file[len(file)-53:]
	require.Equal(t, uint64(0x88e241b785f4cff7), binary.LittleEndian.Uint64(footer[45:]), "magic")
	metaOff, rest := uvarint(t, footer[1:])
	metaSize, _ := uvarint(t, rest)
	require.LessOrEqual(t, metaOff+metaSize, uint64(len(file)))
	block := file[metaOff : metaOff+metaSize]

	// Block: entries ‖ fixed32 restarts[num] ‖ fixed32 num (bit 31: hash index).
	num := binary.LittleEndian.Uint32(block[len(block)-4:]) & 0x7fffffff
	entries := block[:len(block)-4-4*int(num)]
	var key []byte
	for len(entries) > 0 {
		shared, r := uvarint(t, entries)
		nonShared, r := uvarint(t, r)
		valueLen, r := uvarint(t, r)
		key = append(key[:shared], r[:nonShared]...)
		value := r[nonShared : nonShared+valueLen]
		entries = r[nonShared+valueLen:]
		if string(key) == filterMetaKey {
			off, r := uvarint(t, value)
			size, _ := uvarint(t, r)
			require.LessOrEqual(t, off+size, uint64(len(file)))
			return file[off : off+size]
		}
	}
	t.Fatalf("%s: no %s in metaindex", name, filterMetaKey)
	return nil
}

// scanKeys returns the user keys listed in testdata/<name>.scan_hex.trimmed.txt
// (the first and last 20 entries of the table).
func scanKeys(t *testing.T, name string) [][]byte {
	t.Helper()
	f, err := os.Open("testdata/" + name + ".scan_hex.trimmed.txt")
	require.NoError(t, err)
	defer f.Close()
	var keys [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "'") {
			continue
		}
		end := strings.IndexByte(line[1:], '\'')
		require.Positive(t, end)
		k, err := hex.DecodeString(line[1 : 1+end])
		require.NoError(t, err)
		keys = append(keys, k)
	}
	require.NoError(t, sc.Err())
	return keys
}

// prefixKey is the db_bench key for counter v with -prefix_size=12
// -keys_per_prefix=10 and 2000 keys: BE64(v%200) ‖ "0000" ‖ BE32(v).
func prefixKey(v uint64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, v%200)
	copy(k[8:], "0000")
	binary.BigEndian.PutUint32(k[12:], uint32(v))
	return k
}

// fixtureKeys returns the table's user keys in table order and checks that
// every key sst_dump printed is among them, first and last included.
func fixtureKeys(t *testing.T, name string, n int, prefixed bool) [][]byte {
	t.Helper()
	var keys [][]byte
	if prefixed {
		for p := uint64(0); p < 200; p++ {
			for v := p; v < uint64(n); v += 200 {
				keys = append(keys, prefixKey(v))
			}
		}
	} else {
		for v := 0; v < n; v++ {
			keys = append(keys, dbBenchKey(uint64(v)))
		}
	}
	set := make(map[string]bool, len(keys))
	for _, k := range keys {
		set[string(k)] = true
	}
	scanned := scanKeys(t, name)
	require.Len(t, scanned, 40)
	for _, k := range scanned {
		require.Truef(t, set[string(k)], "%s: scanned key %x not generated", name, k)
	}
	require.Equal(t, keys[0], scanned[0])
	require.Equal(t, keys[len(keys)-1], scanned[len(scanned)-1])
	return keys
}

func TestFixtures_RocksDBFilters(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n        int
		prefixed bool
		format   Format
		size     int
		meta     string
	}{
		{"fv5-xxh3-snappy-bloom10", 2000, false, FastLocal, 2565, "ff00060000"},
		{"fv5-xxhash64-lz4-bloom10", 1000, false, FastLocal, 1285, "ff00060000"},
		{"fv5-crc32c-zstd-bloom10-prefix12", 2000, true, FastLocal, 2757, "ff00060000"},
		{"fv2-crc32c-snappy-bloom10", 2000, false, Legacy, 2629, "0629000000"},
		{"fv4-xxhash-zlib-bloom10", 1000, false, Legacy, 1349, "0615000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			filter := fixtureFilter(t, tc.name)
			require.Len(t, filter, tc.size)
			require.Equal(t, tc.meta, hex.EncodeToString(filter[len(filter)-5:]))
			require.Equal(t, tc.format.String(), Kind(filter))

			keys := fixtureKeys(t, tc.name, tc.n, tc.prefixed)
			b := NewBuilder(10, tc.format)
			var lastPrefix []byte
			for _, k := range keys {
				require.Truef(t, MayContain(filter, k), "key %x", k)
				require.True(t, MayContainHash(filter, HashKey(k), k))
				b.AddKey(k)
				if tc.prefixed {
					// FullFilterBlockBuilder adds the prefix after the key,
					// once per run of equal prefixes.
					p := k[:12]
					require.Truef(t, MayContain(filter, p), "prefix %x", p)
					if string(p) != string(lastPrefix) {
						b.AddKey(p)
						lastPrefix = p
					}
				}
			}
			// Our builder reproduces RocksDB's filter byte for byte.
			require.Equal(t, filter, b.Finish())

			fp := 0
			const probes = 20000
			for i := 0; i < probes; i++ {
				if MayContain(filter, dbBenchKey(uint64(1_000_000+i))) {
					fp++
				}
			}
			require.Less(t, float64(fp)/probes, 0.03)
		})
	}
}

func TestFixtures_Ribbon(t *testing.T) {
	filter := fixtureFilter(t, "fv5-xxh3-none-ribbon10")
	require.Equal(t, KindRibbon, Kind(filter))
	require.Equal(t, "fe19080000", hex.EncodeToString(filter[len(filter)-5:]))
	// Not evaluated: every probe may match.
	for v := uint64(0); v < 3000; v++ {
		require.True(t, MayContain(filter, dbBenchKey(v)))
	}
}
