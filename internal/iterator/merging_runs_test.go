package iterator

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// splitRuns deals kvs into n sorted children in runs of consecutive
// entries, most of them to child 0 (as a scan sees a database whose last
// level holds most keys): the shape in which one child keeps winning, and
// the merging iterator's runner-up fast path carries most steps.
func splitRuns(rng *rand.Rand, kvs []kv, n int) [][]kv {
	parts := make([][]kv, n)
	for i := 0; i < len(kvs); {
		c := 0
		if rng.Intn(3) == 0 {
			c = rng.Intn(n)
		}
		run := 1 + rng.Intn(20)
		for ; run > 0 && i < len(kvs); run-- {
			parts[c] = append(parts[c], kvs[i])
			i++
		}
	}
	return parts
}

// TestMerging_RandomizedRuns checks the merging iterator against the model
// over children that hold long runs, in both directions with switches
// (checkAgainstModel mixes Next, Prev, seeks, First and Last), and with a
// full forward then backward walk that switches direction at the ends and
// in the middle.
func TestMerging_RandomizedRuns(t *testing.T) {
	rng := testRand(t)
	for round := 0; round < 50; round++ {
		userKeys := 1 + rng.Intn(60)
		kvs := randomKVs(rng, rng.Intn(300), userKeys)
		parts := splitRuns(rng, kvs, 1+rng.Intn(6))
		iters := make([]Iterator, len(parts))
		for i, p := range parts {
			iters[i] = newSliceIter(p)
		}
		m := NewMerging(nil, iters...)
		checkAgainstModel(t, rng, m, kvs, 500, userKeys)

		// Whole walks: forward, backward, and a zigzag.
		n := 0
		for ok := m.First(); ok; ok = m.Next() {
			require.Equal(t, kvs[n].key.String(), m.Key().String(), "round %d forward %d", round, n)
			n++
		}
		require.Equal(t, len(kvs), n)
		n = len(kvs) - 1
		for ok := m.Last(); ok; ok = m.Prev() {
			require.Equal(t, kvs[n].key.String(), m.Key().String(), "round %d backward %d", round, n)
			n--
		}
		require.Equal(t, -1, n)
		if len(kvs) > 0 {
			pos := 0
			require.True(t, m.First())
			for step := 0; step < 4*len(kvs); step++ {
				var ok bool
				if rng.Intn(4) == 0 {
					ok, pos = m.Prev(), pos-1
				} else {
					ok, pos = m.Next(), pos+1
				}
				require.Equal(t, pos >= 0 && pos < len(kvs), ok, "round %d zigzag step %d", round, step)
				if !ok {
					break
				}
				require.Equal(t, kvs[pos].key.String(), m.Key().String(), "round %d zigzag step %d", round, step)
				require.Equal(t, string(kvs[pos].value), string(m.Value()))
			}
		}
		require.NoError(t, m.Close())
	}
}

// BenchmarkMerging_NextRuns is Next over children holding runs (one child
// winning most steps), forward and backward.
func BenchmarkMerging_NextRuns(b *testing.B) {
	for _, dir := range []string{"forward", "backward"} {
		b.Run(dir, func(b *testing.B) {
			rng := rand.New(rand.NewSource(1))
			kvs := randomKVs(rng, 4000, 1000)
			parts := splitRuns(rng, kvs, 5)
			iters := make([]Iterator, len(parts))
			for i, p := range parts {
				s := newSliceIter(p)
				s.poison = false
				iters[i] = s
			}
			m := NewMerging(nil, iters...)
			fwd := dir == "forward"
			if fwd {
				m.First()
			} else {
				m.Last()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if fwd {
					if !m.Next() {
						m.First()
					}
				} else if !m.Prev() {
					m.Last()
				}
			}
		})
	}
}
