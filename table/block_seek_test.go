package table

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestCompareInternal checks the inlined internal-key comparator against
// base.CompareEncoded, short (trailerless) keys included.
func TestCompareInternal(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	key := func() []byte {
		b := make([]byte, rng.Intn(14))
		for j := range b {
			b[j] = byte(rng.Intn(3)) // few symbols: many ties
		}
		return b
	}
	for n := 0; n < 20000; n++ {
		a, b := key(), key()
		require.Equal(t, base.CompareEncoded(a, b), compareInternal(a, b), "%x vs %x", a, b)
		require.Zero(t, compareInternal(a, a))
	}
}

// TestBlockIter_SeekModes seeks blocks of every restart interval for
// present, absent and boundary targets and checks that each comparator mode
// lands where a linear scan does, on data and index blocks.
func TestBlockIter_SeekModes(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	for trial := 0; trial < 200; trial++ {
		interval := 1 + rng.Intn(20)
		n := 1 + rng.Intn(80)
		bw := blockWriter{restartInterval: interval}
		var keys [][]byte
		for i := 0; i < n; i++ {
			k := base.MakeInternalKey([]byte(fmt.Sprintf("k%05d", 2*i+1)), base.SeqNum(1000-i), base.KindSet).Append(nil)
			keys = append(keys, k)
			bw.add(k, []byte(fmt.Sprintf("v%d", i)))
		}
		block := bw.finish()
		for _, mode := range []cmpMode{cmpFunc, cmpInternal} {
			var it blockIter
			require.True(t, it.init(block, base.CompareEncoded))
			it.setMode(mode)
			for q := 0; q <= 2*n+1; q++ {
				for _, seq := range []base.SeqNum{base.MaxSeqNum, 1000 - base.SeqNum(q/2), 0} {
					target := base.MakeInternalKey([]byte(fmt.Sprintf("k%05d", q)), seq, base.KindSeek).Append(nil)
					want := -1
					for j, k := range keys {
						if base.CompareEncoded(k, target) >= 0 {
							want = j
							break
						}
					}
					ok := it.seekGE(target)
					require.False(t, it.corrupt)
					if want < 0 {
						require.False(t, ok, "mode %d interval %d target %q", mode, interval, target)
						continue
					}
					require.True(t, ok, "mode %d interval %d target %q", mode, interval, target)
					require.Equal(t, keys[want], it.key, "mode %d interval %d target %q", mode, interval, target)
				}
			}
		}
	}
}

// TestBlockIter_SeekDamagedRestart: a restart entry that claims to share
// bytes with its predecessor, or whose key runs past the entries, is
// corruption when a seek probes it, in every comparator mode.
func TestBlockIter_SeekDamagedRestart(t *testing.T) {
	bw := blockWriter{restartInterval: 1}
	var keys [][]byte
	for i := 0; i < 8; i++ {
		k := base.MakeInternalKey([]byte(fmt.Sprintf("key%02d", i)), 1, base.KindSet).Append(nil)
		keys = append(keys, k)
		bw.add(k, []byte("v"))
	}
	good := bw.finish()
	restart := func(b []byte, r int) int {
		var it blockIter
		require.True(t, it.init(b, base.CompareEncoded))
		off, ok := it.restartOffset(r)
		require.True(t, ok)
		return off
	}
	for _, damage := range []string{"shared", "keylen"} {
		for _, mode := range []cmpMode{cmpFunc, cmpInternal} {
			b := append([]byte(nil), good...)
			off := restart(b, 4)
			if damage == "shared" {
				b[off] = 3
			} else {
				b[off+1] = 0x7f
			}
			var it blockIter
			require.True(t, it.init(b, base.CompareEncoded))
			it.setMode(mode)
			// The binary search over 8 restarts probes restart 4 first.
			require.False(t, it.seekGE(keys[6]), "%s mode %d", damage, mode)
			require.True(t, it.corrupt, "%s mode %d", damage, mode)
		}
	}
}
