package table

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

func TestApproximateOffsetOf(t *testing.T) {
	const n = 2000
	var model []kv
	for i := 0; i < n; i++ {
		k := []byte(fmt.Sprintf("key%05d", 2*i)) // odd numbers fall between keys
		model = append(model, kv{base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), make([]byte, 100)})
	}
	for _, fv := range []uint32{2, 5} { // internal-key and user-key indexes
		t.Run(fmt.Sprintf("fv%d", fv), func(t *testing.T) {
			f, _ := buildTable(t, model, nil, WriterOptions{FormatVersion: fv})
			r := openMem(t, f, nil)
			defer r.Close()
			dataSize := r.Properties().DataSize
			off, past, err := r.ApproximateOffsetOf(nil)
			require.NoError(t, err)
			require.False(t, past)
			require.Zero(t, off)
			prev := uint64(0)
			for i := 0; i < 2*n; i += 37 {
				off, past, err := r.ApproximateOffsetOf([]byte(fmt.Sprintf("key%05d", i)))
				require.NoError(t, err)
				require.False(t, past)
				require.GreaterOrEqual(t, off, prev, "offsets are monotone")
				// Uniform entries: the offset is proportional to the key's
				// rank, within one block (4 KiB).
				want := dataSize * uint64(i/2) / n
				require.InDelta(t, float64(want), float64(off), 4096+200, "key %d", i)
				prev = off
			}
			_, past, err = r.ApproximateOffsetOf([]byte("key99999"))
			require.NoError(t, err)
			require.True(t, past)
		})
	}
}

// IndexSamples returns at most max user keys, strictly increasing, spread
// evenly over the table (uniform entries: the i-th of m samples near rank
// (i+1)/m), for internal-key and user-key indexes; max above the block
// count returns every block's separator.
func TestIndexSamples(t *testing.T) {
	const n = 2000
	var model []kv
	for i := 0; i < n; i++ {
		k := []byte(fmt.Sprintf("key%05d", i))
		model = append(model, kv{base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), make([]byte, 100)})
	}
	for _, fv := range []uint32{2, 5} {
		t.Run(fmt.Sprintf("fv%d", fv), func(t *testing.T) {
			f, _ := buildTable(t, model, nil, WriterOptions{FormatVersion: fv})
			r := openMem(t, f, nil)
			defer r.Close()
			blocks := 0
			l, err := r.Layout()
			require.NoError(t, err)
			for _, b := range l {
				if b.Kind == "data" {
					blocks++
				}
			}
			require.Greater(t, blocks, 20)
			all, err := r.IndexSamples(10 * blocks)
			require.NoError(t, err)
			require.Len(t, all, blocks)
			const m = 8
			s, err := r.IndexSamples(m)
			require.NoError(t, err)
			require.LessOrEqual(t, len(s), m)
			require.GreaterOrEqual(t, len(s), m/2)
			for i, k := range s {
				if i > 0 {
					require.Greater(t, string(k), string(s[i-1]))
				}
				// Separators may be shortened ("key0126" between
				// key01259 and key01260): rank is the keys below.
				rank := sort.Search(n, func(j int) bool { return fmt.Sprintf("key%05d", j) >= string(k) })
				every := (blocks + m - 1) / m
				want := n * every * (i + 1) / blocks
				require.InDelta(t, want, rank, float64(n/blocks+1), "sample %d", i)
			}
			none, err := r.IndexSamples(0)
			require.NoError(t, err)
			require.Empty(t, none)
		})
	}
}
