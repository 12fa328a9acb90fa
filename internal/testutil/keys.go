package testutil

import (
	"flag"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// KeyAlphabet is the bytes random keys are made of: the extremes 0x00 and
// 0xff, both sides of the signed/unsigned boundary (0x7f, 0x80) and a few
// letters.
var KeyAlphabet = []byte{0x00, 'a', 'b', 'm', 0x7f, 0x80, 0xfe, 0xff}

// KeyUniverse returns n distinct keys, sorted, always including the empty
// key, "\x00", "\xff" and "\xff\xff", the rest random of length 1 to 4 over
// KeyAlphabet. n must be at most a few thousand.
func KeyUniverse(rng *rand.Rand, n int) [][]byte {
	seen := map[string]bool{"": true, "\x00": true, "\xff": true, "\xff\xff": true}
	for len(seen) < n {
		l := 1 + rng.Intn(4)
		k := make([]byte, l)
		for i := range k {
			k[i] = KeyAlphabet[rng.Intn(len(KeyAlphabet))]
		}
		seen[string(k)] = true
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = []byte(k)
	}
	return out
}

// RandValue returns a value of length 0 to max, empty with some probability.
func RandValue(rng *rand.Rand, max int) []byte {
	if rng.Intn(8) == 0 {
		return []byte{}
	}
	v := make([]byte, rng.Intn(max+1))
	rng.Read(v)
	return v
}

var seedFlag = flag.Int64("seed", 0, "random seed for randomized tests (0: time-based); also STRATA_SEED")

// Seed returns the base seed of a randomized test: -seed, else the
// STRATA_SEED environment variable, else the clock. It logs the seed and
// how to replay it if the test fails.
func Seed(t testing.TB) int64 {
	t.Helper()
	s := *seedFlag
	if s == 0 {
		if env := os.Getenv("STRATA_SEED"); env != "" {
			v, err := strconv.ParseInt(env, 10, 64)
			if err != nil {
				t.Fatalf("bad STRATA_SEED %q: %v", env, err)
			}
			s = v
		}
	}
	if s == 0 {
		s = time.Now().UnixNano()
	}
	t.Cleanup(func() {
		if t.Failed() {
			name, _, _ := strings.Cut(t.Name(), "/")
			t.Logf("replay with: go test -run '^%s$' -seed %d (or STRATA_SEED=%d)", name, s, s)
		}
	})
	return s
}

// Long reports whether the long variants of randomized tests run
// (STRATA_LONG=1).
func Long() bool { return os.Getenv("STRATA_LONG") != "" }
