package iterator

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// callCounter counts the positioning calls a child receives.
type callCounter struct {
	Iterator
	calls int
}

func (c *callCounter) SeekGE(k []byte) bool { c.calls++; return c.Iterator.SeekGE(k) }
func (c *callCounter) SeekLT(k []byte) bool { c.calls++; return c.Iterator.SeekLT(k) }
func (c *callCounter) First() bool          { c.calls++; return c.Iterator.First() }
func (c *callCounter) Last() bool           { c.calls++; return c.Iterator.Last() }
func (c *callCounter) Next() bool           { c.calls++; return c.Iterator.Next() }
func (c *callCounter) Prev() bool           { c.calls++; return c.Iterator.Prev() }

// SetBounds passes the bounds on to a child that takes them (a Level).
func (c *callCounter) SetBounds(lower, upper []byte) {
	if b, ok := c.Iterator.(boundsSetter); ok {
		b.SetBounds(lower, upper)
	}
}

// inBounds returns the entries of kvs with user keys in [lower, upper).
func inBounds(kvs []kv, lower, upper []byte) []kv {
	var out []kv
	for _, e := range kvs {
		if (lower == nil || bytes.Compare(e.key.UserKey, lower) >= 0) && (upper == nil || bytes.Compare(e.key.UserKey, upper) < 0) {
			out = append(out, e)
		}
	}
	return out
}

// randomBound is nil, a user key of the test universe (or just outside
// it), or, for an upper bound, sometimes empty (before every key).
func randomBound(rng *rand.Rand, userKeys int, upper bool) []byte {
	switch r := rng.Intn(8); {
	case r == 0:
		return nil
	case r == 1 && upper:
		return []byte{}
	default:
		return []byte(fmt.Sprintf("k%03d", rng.Intn(userKeys+2)-1))
	}
}

// consecutiveRuns cuts kvs into runs of 1 to maxLen consecutive entries: disjoint
// children but for shared boundary keys, as a log's flushes are.
func consecutiveRuns(rng *rand.Rand, kvs []kv, maxLen int) [][]kv {
	var parts [][]kv
	for start := 0; start < len(kvs); {
		end := min(len(kvs), start+1+rng.Intn(maxLen))
		parts = append(parts, kvs[start:end])
		start = end
	}
	return parts
}

// TestMerging_BoundsRandomized checks a bounded merge against the model
// restricted to the bounds: children that are slices (with an exact span,
// a wider one, or none) and levels given the bounds, keys of each child in
// ranges that overlap or not (a child of consecutive keys, as a log's
// flushes, and children dealt at random), the bounds changed by SetBounds
// between runs of random operations in both directions. A child whose
// span misses the bounds must not be positioned at all.
func TestMerging_BoundsRandomized(t *testing.T) {
	rng := testRand(t)
	for round := 0; round < 100; round++ {
		userKeys := 1 + rng.Intn(40)
		kvs := randomKVs(rng, rng.Intn(200), userKeys)
		var parts [][]kv
		if round%2 == 0 {
			parts = split(rng, kvs, 1+rng.Intn(6))
		} else {
			parts = consecutiveRuns(rng, kvs, 40)
		}
		iters := make([]Iterator, len(parts))
		counters := make([]*callCounter, len(parts))
		spans := make([]Span, len(parts))
		for i, p := range parts {
			var child Iterator
			if rng.Intn(3) == 0 && len(p) > 0 {
				tl := newTestLevel(t, rng, p, 0)
				child = NewLevel(nil, tl.bounds, tl.openFile)
			} else {
				child = newSliceIter(p)
			}
			counters[i] = &callCounter{Iterator: child}
			iters[i] = counters[i]
			if len(p) > 0 && rng.Intn(4) != 0 {
				spans[i] = Span{Smallest: p[0].key.UserKey, Largest: p[len(p)-1].key.UserKey}
				if rng.Intn(3) == 0 {
					spans[i].Smallest = []byte("k")    // before every key: a wider span
					spans[i].Largest = []byte("k999z") // after every key
				}
			}
		}
		var m Merging
		m.Init(nil, iters...)
		m.SetSpans(spans)
		for phase := 0; phase < 4; phase++ {
			lower, upper := randomBound(rng, userKeys, false), randomBound(rng, userKeys, true)
			m.SetBounds(lower, upper)
			for _, c := range counters {
				c.calls = 0
			}
			t.Logf("round %d phase %d: bounds [%q, %q)", round, phase, lower, upper)
			checkAgainstModel(t, rng, &m, inBounds(kvs, lower, upper), 200, userKeys)
			for i, c := range counters {
				sp := spans[i]
				if sp.Smallest == nil {
					continue
				}
				miss := (lower != nil && bytes.Compare(sp.Largest, lower) < 0) ||
					(upper != nil && bytes.Compare(sp.Smallest, upper) >= 0)
				if miss {
					require.Zero(t, c.calls, "child %d, span [%q, %q], outside the bounds, was positioned", i, sp.Smallest, sp.Largest)
				}
			}
		}
		require.NoError(t, m.Close())
	}
}
