package bloom

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// Fuzz targets of the filter reader. `go test` replays the seeds and
// testdata/fuzz/<Target>; run one with
//
//	go test ./internal/bloom -run '^$' -fuzz '^FuzzFilter$' -fuzztime 60s -fuzzminimizetime=1s -parallel=1

// FuzzFilter probes arbitrary bytes as a full filter block. Probing never
// panics and agrees with the block's kind: an empty block matches nothing,
// a block the reader cannot evaluate (Ribbon, unknown metadata) matches
// everything, and MayContain agrees with MayContainHash of HashKey.
func FuzzFilter(f *testing.F) {
	for _, name := range []string{"fv5-xxh3-snappy-bloom10", "fv4-xxhash-zlib-bloom10", "fv5-xxh3-none-ribbon10"} {
		f.Add(fixtureFilter(f, name), []byte("key000000"))
	}
	for _, format := range []Format{FastLocal, Legacy} {
		b := NewBuilder(10, format)
		b.AddKey([]byte("a"))
		b.AddKey([]byte("b"))
		f.Add(b.Finish(), []byte("a"))
	}
	f.Add([]byte{0, 0, 0, 0, 0, 0}, []byte("a"))
	f.Fuzz(func(t *testing.T, filter, key []byte) {
		got := MayContain(filter, key)
		require.Equal(t, got, MayContainHash(filter, HashKey(key), key))
		switch Kind(filter) {
		case KindEmpty:
			require.False(t, got, "an empty filter matched")
		case KindRibbon, KindUnknown:
			require.True(t, got, "a filter that cannot be evaluated said absent")
		}
	})
}

// FuzzFilterBuild builds a filter of the keys in a '\n'-separated list and
// checks that it has no false negatives and is of the format asked for.
func FuzzFilterBuild(f *testing.F) {
	f.Add([]byte("a\nb\nc"), uint8(10), false)
	f.Add([]byte("key1\nkey2\nkey2\n\n"), uint8(1), true)
	f.Add(bytes.Repeat([]byte("x\n"), 100), uint8(100), false)
	f.Fuzz(func(t *testing.T, list []byte, bits uint8, legacy bool) {
		format := FastLocal
		if legacy {
			format = Legacy
		}
		keys := bytes.Split(list, []byte("\n"))
		b := NewBuilder(int(bits), format)
		for _, k := range keys {
			b.AddKey(k)
		}
		filter := b.Finish()
		require.Equal(t, b.Size(), len(filter))
		if format == Legacy {
			require.Equal(t, KindLegacy, Kind(filter))
		} else {
			require.Equal(t, KindFastLocal, Kind(filter))
		}
		for _, k := range keys {
			require.True(t, MayContain(filter, k), "false negative for %q", k)
		}
	})
}
