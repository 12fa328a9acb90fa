package table

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
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

// TestKeyPrefixes_SeekAgrees builds index blocks of sorted keys that share
// prefixes of many lengths (none, some, longer than 8 bytes, whole keys
// that are prefixes of others) and checks that a seek narrowed by the
// block's keyPrefixes lands where the plain search does, for targets
// inside, between, before and after the keys, in both key forms.
func TestKeyPrefixes_SeekAgrees(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	r := Reader{cmp: base.DefaultComparer}
	for trial := 0; trial < 300; trial++ {
		internal := rng.Intn(2) == 0
		r.userKeyIndex = !internal
		r.indexCmp = base.CompareEncoded
		if !internal {
			r.indexCmp = bytes.Compare
		}
		common := make([]byte, rng.Intn(12))
		rng.Read(common)
		ukey := func() []byte {
			k := append([]byte(nil), common[:rng.Intn(len(common)+1)]...)
			if rng.Intn(4) > 0 {
				k = append([]byte(nil), common...)
			}
			for n := rng.Intn(14); n > 0; n-- {
				// Mostly zeros: keys that tie on the 8 bytes past the
				// common prefix and differ after them.
				k = append(k, byte(max(0, rng.Intn(8)-5)))
			}
			return k
		}
		encode := func(u []byte, seq base.SeqNum) []byte {
			if internal {
				return base.MakeInternalKey(u, seq, base.KindSet).Append(nil)
			}
			return u
		}
		var keys [][]byte
		seen := map[string]bool{}
		for n, tries := minPrefixRestarts+rng.Intn(200), 0; len(keys) < n && tries < 100000; tries++ {
			k := encode(ukey(), base.SeqNum(rng.Intn(5)))
			if !seen[string(k)] {
				seen[string(k)] = true
				keys = append(keys, k)
			}
		}
		if len(keys) < minPrefixRestarts {
			continue // too few distinct keys under this common prefix
		}
		sort.Slice(keys, func(a, b int) bool { return r.indexCmp(keys[a], keys[b]) < 0 })
		bw := blockWriter{restartInterval: 1}
		for j, k := range keys {
			bw.add(k, blockHandle{offset: uint64(j) * 100, size: 90}.append(nil))
		}
		block := bytes.Clone(bw.finish())
		kp := r.buildKeyPrefixes(block, false)
		require.NotNil(t, kp)
		var plain, fast blockIter
		require.True(t, r.initIndexIter(&plain, block, false, true))
		require.True(t, r.initIndexIter(&fast, block, false, true))
		fast.prefixes = kp
		for q := 0; q < 100; q++ {
			target := encode(ukey(), base.SeqNum(rng.Intn(6)))
			if rng.Intn(4) == 0 {
				target = keys[rng.Intn(len(keys))]
			}
			ok1, ok2 := plain.seekGE(target), fast.seekGE(target)
			require.Equal(t, ok1, ok2, "target %x", target)
			require.False(t, fast.corrupt)
			if ok1 {
				require.Equal(t, plain.key, fast.key, "target %x", target)
				require.Equal(t, plain.handle, fast.handle, "target %x", target)
			}
		}
	}
}

// TestReader_IndexPrefixesGet: a table with an index large enough to get
// prefixes finds every key, and no key between them, through Get.
func TestReader_IndexPrefixesGet(t *testing.T) {
	r, model := benchReader(t, 5000, NoCompression)
	defer r.Close()
	require.NotNil(t, r.indexPrefixes)
	for _, e := range model {
		v, _, _, found, err := r.Get(e.key.UserKey, base.MaxSeqNum)
		require.NoError(t, err)
		require.True(t, found, "%x", e.key.UserKey)
		require.Equal(t, e.val, v)
		missing := append(bytes.Clone(e.key.UserKey), 0)
		_, _, _, found, err = r.Get(missing, base.MaxSeqNum)
		require.NoError(t, err)
		require.False(t, found, "%x", missing)
	}
}
