package table

import (
	"fmt"
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
