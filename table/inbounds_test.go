package table

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stretchr/testify/require"
)

// blockMaxUserKey is the largest user key of the data block it rests in,
// read by walking a second iterator over the same block's bytes.
func blockMaxUserKey(t *testing.T, it *Iter) []byte {
	var b blockIter
	require.True(t, b.init(it.data.data, it.r.dataCmp))
	require.True(t, b.last())
	return bytes.Clone(b.key[:len(b.key)-base.TrailerLen])
}

// TestIter_NextInBoundsMatchesBlocks: over random tables (small and large
// blocks, user-key and internal-key indexes, keys sharing long prefixes),
// random upper bounds (model keys, the keys between them, and bounds past
// every key) and random moves, NextInBounds says true exactly where every
// key of the data block the iterator rests in is below the bound, as far as
// the block's index separator shows it: never for a block holding a key at
// or past the bound (the bound equal to a block's last key included), and
// always for a block whose separator is below it. A bound changed by
// SetUpperBound gives no verdict until the next positioning call.
func TestIter_NextInBoundsMatchesBlocks(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	rounds := 30
	if testutil.Long() {
		rounds = 300
	}
	trues := 0
	for round := 0; round < rounds; round++ {
		model := nextKVModel(rng, 20+rng.Intn(400))
		opts := WriterOptions{
			BlockSize:            64 << rng.Intn(7),
			BlockRestartInterval: 1 + rng.Intn(16),
			FormatVersion:        []uint32{2, 5}[rng.Intn(2)],
		}
		f, _ := buildTable(t, model, nil, opts)
		r := openMem(t, f, nil)
		it := r.NewIter()
		bound := func() []byte {
			switch rng.Intn(5) {
			case 0:
				return []byte(fmt.Sprintf("range/%08d", rng.Intn(5200)))
			case 1:
				return []byte("z") // past every key
			case 2:
				return []byte("a") // before every key
			default:
				return bytes.Clone(model[rng.Intn(len(model))].key.UserKey)
			}
		}
		upper := bound()
		it.SetUpperBound(upper)
		require.False(t, it.NextInBounds())
		ok := false
		for op := 0; op < 300; op++ {
			var what string
			switch x := rng.Intn(12); {
			case x < 6:
				what = "nextkv"
				_, _, ok = it.NextKV()
			case x == 6:
				what = "next"
				ok = it.Next()
			case x == 7:
				what = "prev"
				ok = it.Prev()
			case x == 8:
				k := bound()
				what = "seekGE " + string(k)
				ok = it.SeekGE(k)
			case x == 9:
				what = "first"
				ok = it.First()
			case x == 10:
				what = "last"
				ok = it.Last()
			default:
				upper = bound()
				what = "setUpper " + string(upper)
				it.SetUpperBound(upper)
				require.False(t, it.NextInBounds(), "round %d op %d: a verdict before a positioning call", round, op)
				ok = it.SeekGE(bound())
			}
			require.NoError(t, it.Error())
			if !ok {
				continue
			}
			sepUser := it.index.cur().key
			if !r.userKeyIndex {
				sepUser = sepUser[:len(sepUser)-base.TrailerLen]
			}
			maxKey := blockMaxUserKey(t, it)
			want := bytes.Compare(sepUser, upper) < 0
			got := it.NextInBounds()
			require.Equal(t, want, got, "round %d op %d %s: separator %q, bound %q", round, op, what, sepUser, upper)
			if got {
				trues++
				require.Less(t, string(maxKey), string(upper), "round %d op %d %s: a block with keys at or past the bound", round, op, what)
				require.Less(t, string(it.Key().UserKey), string(upper))
			}
		}
		require.NoError(t, it.Close())
		require.False(t, it.NextInBounds(), "after Close")
		require.NoError(t, r.Close())
	}
	require.Positive(t, trues, "no block was ever found below its bound")
}
