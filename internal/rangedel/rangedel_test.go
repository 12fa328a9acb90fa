package rangedel

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

func TestBuildMatchesBruteForce(t *testing.T) {
	for seed := int64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var tombs []base.Tombstone
		for i := rng.Intn(8); i > 0; i-- {
			a, b := rng.Intn(20), rng.Intn(20)
			tombs = append(tombs, base.Tombstone{
				Start: []byte(fmt.Sprintf("%02d", a)),
				End:   []byte(fmt.Sprintf("%02d", b)),
				Seq:   base.SeqNum(1 + rng.Intn(30)),
			})
		}
		snap := base.SeqNum(1 + rng.Intn(32))
		s := Build(nil, tombs, snap)
		frags := s.Fragments()
		for i := range frags {
			require.Less(t, string(frags[i].Start), string(frags[i].End))
			if i > 0 {
				require.LessOrEqual(t, string(frags[i-1].End), string(frags[i].Start))
			}
		}
		for k := 0; k < 21; k++ {
			key := []byte(fmt.Sprintf("%02d", k))
			for seq := base.SeqNum(0); seq < 32; seq++ {
				want := false
				for _, tb := range tombs {
					if tb.Covers(key, seq, snap) {
						want = true
					}
				}
				require.Equal(t, want, s.Deleted(key, seq), "seed %d key %s seq %d", seed, key, seq)
				require.Equal(t, MaxCoveringIn(nil, tombs, key, snap), s.MaxCovering(key))
			}
		}
	}
}

func TestEmpty(t *testing.T) {
	var s Set
	require.True(t, s.Empty())
	require.False(t, s.Deleted([]byte("a"), 1))
	s = Build(nil, []base.Tombstone{{Start: []byte("b"), End: []byte("b"), Seq: 3}}, 10)
	require.True(t, s.Empty())
}
