package db

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// cutKey is the user key of entry i of the cut tests.
func cutKey(i int) []byte { return []byte(fmt.Sprintf("k%06d", i)) }

// gpFiles returns synthetic grandparent files of per keys each over
// [0, n): only their bounds and sizes matter to output cutting.
func gpFiles(n, per int, size uint64) []*version.FileMetadata {
	var gp []*version.FileMetadata
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n) - 1
		gp = append(gp, &version.FileMetadata{FileNum: uint64(1000 + lo), Size: size,
			Smallest: base.MakeInternalKey(cutKey(lo), 1, base.KindSet),
			Largest:  base.MakeInternalKey(cutKey(hi), 1, base.KindSet)})
	}
	return gp
}

// cutKeys is how many keys the cut tests write: about 180 KiB of table,
// which fits the first memtable (initialMemTableSize, 256 KiB of arena with
// the nodes' overhead), so the flush makes one L0 file.
const cutKeys = 1800

// compactL0WithGrandparents flushes n keys (value bytes each) to one L0
// file and compacts it into L1 with gp as the grandparents, returning the
// outputs.
func compactL0WithGrandparents(t *testing.T, n, value int, target int64, gp []*version.FileMetadata) []*version.FileMetadata {
	t.Helper()
	d, err := Open("db", &Options{CreateIfMissing: true, FS: vfs.NewMem(), DisableAutoCompactions: true,
		TargetFileSizeBase: target, BlockSize: 256})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	v := bytes.Repeat([]byte{'v'}, value)
	for i := 0; i < n; i++ {
		require.NoError(t, d.Put(cutKey(i), v, nil))
	}
	require.NoError(t, d.Flush())
	d.mu.Lock()
	defer d.mu.Unlock()
	cur := d.mu.versions.Current()
	require.Len(t, cur.Levels[0], 1)
	p := cur.PickRange(0, 1, nil, nil)
	require.NotNil(t, p)
	p.Grandparents = gp
	c := d.def.newCompaction(cur, p, true)
	d.startCompactionLocked(c)
	require.NoError(t, d.runCompactionLocked(c))
	return c.outputs
}

// Outputs are cut where a grandparent file ends once they hold half the
// target size (RocksDB 7.8's level_compaction_dynamic_file_size, Pebble's
// grandparent-boundary splitting), so that an output file does not
// straddle two files of the level below: compacting it down later rewrites
// whole grandparent files only, not one more partly overlapped at each end.
// Grandparent files here span 45 keys of ~110 bytes (~5 KiB of output, between
// half the 8 KiB target and the target); cutting at the target alone
// (every ~70 keys) straddles a boundary at almost every cut.
func TestCompactionOutputsCutAtGrandparentBoundaries(t *testing.T) {
	const n, per = cutKeys, 45
	const target = 8 << 10
	gp := gpFiles(n, per, 1<<10)
	outs := compactL0WithGrandparents(t, n, 90, target, gp)
	require.Greater(t, len(outs), 10)
	for i := 0; i+1 < len(outs); i++ {
		last, next := outs[i].Largest.UserKey, outs[i+1].Smallest.UserKey
		aligned := false
		for _, g := range gp {
			if bytes.Compare(last, g.Largest.UserKey) <= 0 && bytes.Compare(g.Largest.UserKey, next) < 0 {
				aligned = true // the cut falls between g's end and the next key
				break
			}
		}
		require.True(t, aligned, "output %d ends at %q, output %d starts at %q: the cut is inside a grandparent file", i, last, i+1, next)
		require.GreaterOrEqual(t, outs[i].Size, uint64(target/2), "output %d (%q..%q) is under half the target", i, outs[i].Smallest.UserKey, last)
	}
}

// Without grandparents (or with grandparent files larger than the target)
// outputs are cut at the target size, as before.
func TestCompactionOutputsCutAtTargetWithoutBoundaries(t *testing.T) {
	const n = cutKeys
	const target = 8 << 10
	for _, gp := range [][]*version.FileMetadata{nil, gpFiles(n, n, 1<<10)} {
		outs := compactL0WithGrandparents(t, n, 90, target, gp)
		require.Greater(t, len(outs), 10)
		for i, f := range outs[:len(outs)-1] {
			require.GreaterOrEqual(t, f.Size, uint64(target), "output %d", i)
			require.Less(t, f.Size, uint64(target)*5/4, "output %d", i)
		}
	}
}
