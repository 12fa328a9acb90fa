package version

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// uncached copies v's levels into a literal Version, whose LevelSize and
// PendingCompactionBytes sum the files each time: the model the cached
// answers must match.
func uncached(v *Version) *Version {
	u := &Version{}
	u.Levels = v.Levels
	return u
}

// TestVersion_SizeCacheMatchesSum drives the builder through random flushes,
// compactions and deletions and checks, after each edit, that the built
// Version's cached level sizes and its memoized pending-compaction estimate
// (asked under two alternating option sets, as SetOptions may change them)
// equal the answers computed from the files.
func TestVersion_SizeCacheMatchesSum(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	opts := []PickerOptions{
		{L0Trigger: 2, BaseBytes: 1000, Multiplier: 4},
		{L0Trigger: 4, BaseBytes: 300, Multiplier: 10},
		{L0Trigger: 4, BaseBytes: 300, Multiplier: 10, Dynamic: true},
	}
	v := &Version{}
	var next uint64 = 1
	for step := 0; step < 300; step++ {
		e := &Edit{}
		level := rng.Intn(NumLevels)
		if files := v.Levels[level]; len(files) > 0 && rng.Intn(3) == 0 {
			f := files[rng.Intn(len(files))]
			e.DeletedFiles = append(e.DeletedFiles, DeletedFileEntry{Level: level, FileNum: f.FileNum})
		} else {
			// Files of distinct, non-overlapping key ranges, so any level
			// takes them.
			k := fmt.Sprintf("k%06d", next)
			f := meta(next, k+"a", k+"b", base.SeqNum(next))
			f.Size = uint64(rng.Intn(500) + 1)
			e.NewFiles = append(e.NewFiles, NewFileEntry{Level: level, Meta: f})
			next++
		}
		b := newBuilder(v)
		require.NoError(t, b.apply(e))
		nv, err := b.finish()
		require.NoError(t, err)
		v = nv
		u := uncached(v)
		var total uint64
		for l := 0; l < NumLevels; l++ {
			require.Equal(t, u.LevelSize(l), v.LevelSize(l), "step %d L%d", step, l)
			total += u.LevelSize(l)
		}
		require.Equal(t, total, v.TotalSize())
		for i := 0; i < 4; i++ {
			o := opts[(step+i)%2]
			require.Equal(t, u.PendingCompactionBytes(o), v.PendingCompactionBytes(o), "step %d opts %+v", step, o)
		}
	}
}

// BenchmarkPendingCompactionBytes is the write path's per-group question
// on a Version of many files.
func BenchmarkPendingCompactionBytes(b *testing.B) {
	v := &Version{}
	for i := 0; i < 2000; i++ {
		k := fmt.Sprintf("k%06d", i)
		v.Levels[1+i%5] = append(v.Levels[1+i%5], meta(uint64(i+1), k+"a", k+"b", 1))
	}
	v.cacheSizes()
	o := PickerOptions{L0Trigger: 4, BaseBytes: 1 << 20, Multiplier: 10}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = v.PendingCompactionBytes(o)
	}
}
