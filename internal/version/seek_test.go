package version

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFileMetadata_SeekBudget(t *testing.T) {
	// A file outside any Version has no budget and is never charged.
	bare := meta(1, "a", "b", 1)
	require.False(t, bare.ChargeSeek())
	require.False(t, bare.RecordSeekCandidate())

	// LevelDB's rule: max(100, size / 16 KiB).
	require.Equal(t, int64(100), meta(1, "a", "b", 1).AllowedSeeks())
	big := meta(1, "a", "b", 1)
	big.Size = 1000 * SeekCostBytes
	require.Equal(t, int64(1000), big.AllowedSeeks())

	f := meta(7, "a", "z", 1).clone()
	for i := 1; i < MinAllowedSeeks; i++ {
		require.False(t, f.ChargeSeek(), "charge %d", i)
	}
	require.True(t, f.ChargeSeek())
	require.True(t, f.ChargeSeek(), "spent until recorded")
	require.True(t, f.RecordSeekCandidate())
	require.False(t, f.RecordSeekCandidate(), "recorded once")
	require.False(t, f.ChargeSeek())
	require.Equal(t, int64(MinAllowedSeeks+1), f.SeeksUsed())

	// A file entering a new Version (a trivial move) starts afresh.
	g := f.clone()
	require.Zero(t, g.SeeksUsed())
}

func TestVersion_PickSeek(t *testing.T) {
	v := &Version{}
	// L0, newest first: the candidate 11 [m..p] overlaps 12 [k..n], which
	// overlaps 13 [a..l] (so 13 must come too); 14 [x..z] overlaps none.
	v.Levels[0] = []*FileMetadata{meta(14, "x", "z", 40), meta(11, "m", "p", 30),
		meta(12, "k", "n", 20), meta(13, "a", "l", 10)}
	v.Levels[1] = []*FileMetadata{meta(21, "a", "c", 5), meta(22, "d", "q", 5), meta(23, "r", "w", 5)}
	v.Levels[2] = []*FileMetadata{meta(31, "a", "e", 1), meta(32, "f", "j", 1)}
	v.Levels[NumLevels-1] = []*FileMetadata{meta(61, "a", "z", 1)}

	// L0: the closure of 11 is 11, 12, 13 (in L0's order), and the L1
	// files under [a, p].
	p, st := v.PickSeek(v.Levels[0][1], 0, 1, nil)
	require.Equal(t, SeekPicked, st)
	require.Equal(t, 0, p.StartLevel)
	require.Equal(t, 1, p.OutputLevel)
	require.Equal(t, []uint64{11, 12, 13}, fileNums(p.Inputs[0]))
	require.Equal(t, []uint64{21, 22}, fileNums(p.Inputs[1]))
	require.Equal(t, []uint64{31, 32}, fileNums(p.Grandparents))

	// Ln: the file and the overlapping files of Ln+1.
	p, st = v.PickSeek(v.Levels[1][0], 1, 1, nil)
	require.Equal(t, SeekPicked, st)
	require.Equal(t, []uint64{21}, fileNums(p.Inputs[0]))
	require.Equal(t, []uint64{31}, fileNums(p.Inputs[1]))

	// A file no longer at that level, or in the last level: gone.
	_, st = v.PickSeek(v.Levels[1][0], 2, 1, nil)
	require.Equal(t, SeekGone, st)
	_, st = v.PickSeek(meta(99, "a", "b", 1), 1, 1, nil)
	require.Equal(t, SeekGone, st)
	_, st = v.PickSeek(v.Levels[NumLevels-1][0], NumLevels-1, 1, nil)
	require.Equal(t, SeekGone, st)

	// Busy: an input compacting (13 is in 11's closure), an output file
	// compacting, or an in-flight compaction writing the range.
	v.Levels[0][3].Compacting = true
	_, st = v.PickSeek(v.Levels[0][1], 0, 1, nil)
	require.Equal(t, SeekBusy, st)
	p, st = v.PickSeek(v.Levels[0][0], 0, 1, nil) // 14 is clear of it
	require.Equal(t, SeekPicked, st)
	require.Equal(t, []uint64{14}, fileNums(p.Inputs[0]))
	v.Levels[0][3].Compacting = false
	v.Levels[2][0].Compacting = true
	_, st = v.PickSeek(v.Levels[1][0], 1, 1, nil)
	require.Equal(t, SeekBusy, st)
	v.Levels[2][0].Compacting = false
	busy := func(level int, smallest, largest []byte) bool { return level == 2 }
	_, st = v.PickSeek(v.Levels[1][0], 1, 1, busy)
	require.Equal(t, SeekBusy, st)
}
