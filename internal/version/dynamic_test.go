package version

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// sized returns a file of the given size over its own key range.
func sized(num, size uint64) *FileMetadata {
	k := fmt.Sprintf("k%06d", num)
	f := meta(num, k+"a", k+"b", 1)
	f.Size = size
	return f
}

var dynOpts = PickerOptions{L0Trigger: 4, BaseBytes: 100, Multiplier: 10, Dynamic: true}

// TestLevelTargets_Static checks that without Dynamic the targets are the
// fixed ones and L1 is the base level, whatever the levels hold.
func TestLevelTargets_Static(t *testing.T) {
	o := dynOpts
	o.Dynamic = false
	v := &Version{}
	v.Levels[6] = []*FileMetadata{sized(1, 1e9)}
	targets, baseLevel := v.LevelTargets(o)
	require.Equal(t, 1, baseLevel)
	for n := 1; n < NumLevels; n++ {
		require.Equal(t, LevelTarget(n, o), targets[n], "L%d", n)
	}
	require.Equal(t, uint64(1e5), targets[4])
}

// TestLevelTargets_Dynamic checks the targets and the base level at
// several sizes of the largest level, against values worked out by hand
// from RocksDB's rule.
func TestLevelTargets_Dynamic(t *testing.T) {
	no := uint64(math.MaxUint64)
	for _, tc := range []struct {
		name    string
		levels  map[int]uint64 // level -> bytes (one file)
		base    int
		targets [NumLevels]uint64
	}{
		// Nothing below L0: L0 compacts straight into the last level, no
		// level scores.
		{"empty", nil, 6, [NumLevels]uint64{no, no, no, no, no, no, no}},
		{"L0 only", map[int]uint64{0: 50}, 6, [NumLevels]uint64{no, no, no, no, no, no, no}},
		// 500 bytes: L5 would be 50 <= 100, so L5 is the base level, its
		// target raised to BaseBytes.
		{"small", map[int]uint64{6: 500}, 5, [NumLevels]uint64{no, no, no, no, no, 100, 500}},
		// 1e6: L2 is 100, the base level.
		{"large", map[int]uint64{6: 1e6}, 2, [NumLevels]uint64{no, no, 100, 1e3, 1e4, 1e5, 1e6}},
		// 1e9: even L1 would be over BaseBytes: L1 at BaseBytes.
		{"huge", map[int]uint64{6: 1e9}, 1, [NumLevels]uint64{no, 100, 1e3, 1e4, 1e5, 1e6, 1e7}},
		// The largest level need not be the last one: L4 holds the most.
		{"largest above last", map[int]uint64{4: 1e6, 6: 10}, 2, [NumLevels]uint64{no, no, 100, 1e3, 1e4, 1e5, 1e6}},
		// Data in L1 of a database sized for fewer levels (written with
		// the option off): L1 stays the base level at the smallest target
		// it may have (never below BaseBytes).
		{"data above", map[int]uint64{1: 50, 6: 500}, 1, [NumLevels]uint64{no, 100, 110, 1100, 11000, 110000, 1100000}},
		// Data in L3 bounds the base level even when L6 alone would put it
		// at L4.
		{"first non-empty bounds", map[int]uint64{3: 20, 6: 5000}, 3, [NumLevels]uint64{no, no, no, 100, 110, 1100, 11000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &Version{}
			var num uint64
			for level, size := range tc.levels {
				num++
				v.Levels[level] = []*FileMetadata{sized(num, size)}
			}
			targets, baseLevel := v.LevelTargets(dynOpts)
			require.Equal(t, tc.base, baseLevel)
			require.Equal(t, tc.base, v.BaseLevel(dynOpts))
			require.Equal(t, tc.targets[1:], targets[1:])
			// Levels above the base level never score.
			s := v.Scores(dynOpts)
			for n := 1; n < baseLevel; n++ {
				require.Zero(t, s[n], "L%d", n)
			}
		})
	}
}

// TestLevelTargets_DynamicL0Backlog: an L0 larger than BaseBytes and than
// the base level's target becomes the base level's target, and the
// multiplier stretches so that the last level's target stays the largest
// level's size.
func TestLevelTargets_DynamicL0Backlog(t *testing.T) {
	v := &Version{}
	v.Levels[0] = []*FileMetadata{sized(1, 5000)}
	v.Levels[6] = []*FileMetadata{sized(2, 1e6)}
	targets, baseLevel := v.LevelTargets(dynOpts)
	require.Equal(t, 3, baseLevel)
	require.Equal(t, uint64(5000), targets[3])
	require.InDelta(t, 1e6, float64(targets[6]), 1e6*1e-6)
	for n := 4; n < NumLevels; n++ {
		require.Greater(t, targets[n], targets[n-1])
	}
}

// TestPendingCompactionBytes_Dynamic: L2 holds 500 bytes over a 1e6-byte
// L6: its static target (1000) holds it, its dynamic one (100) does not;
// the estimate follows the options asked (the memo is per options).
func TestPendingCompactionBytes_Dynamic(t *testing.T) {
	v := &Version{}
	v.Levels[2] = []*FileMetadata{sized(1, 500)}
	v.Levels[6] = []*FileMetadata{sized(2, 1e6)}
	o := dynOpts
	o.Dynamic = false
	require.Zero(t, v.PendingCompactionBytes(o))
	// Excess 400 times the fan-out into L3 (empty: 0) plus one.
	require.Equal(t, uint64(400), v.PendingCompactionBytes(dynOpts))

	// L0 at the trigger is carried into the base level (L5 here).
	v = &Version{}
	for i := uint64(0); i < 4; i++ {
		v.Levels[0] = append(v.Levels[0], sized(100+i, 10))
	}
	v.Levels[5] = []*FileMetadata{sized(1, 90)}
	v.Levels[6] = []*FileMetadata{sized(2, 500)}
	// base L5, target 100: 40 + (130-100)*(500/90+1).
	want := 40 + 30*(500.0/90+1)
	require.Equal(t, uint64(want), v.PendingCompactionBytes(dynOpts))
}
