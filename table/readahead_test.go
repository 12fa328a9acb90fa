package table

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stretchr/testify/require"
)

// countingFile counts ReadAt calls.
type countingFile struct {
	*memFile
	reads int
}

func (c *countingFile) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	return c.memFile.ReadAt(p, off)
}

// TestIter_Readahead scans a many-block table both ways through a cache too
// small to help, and checks the entries and that readahead cut the reads.
func TestIter_Readahead(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	model := randomModel(rng, 3000)
	for _, comp := range []Compression{NoCompression, SnappyCompression} {
		f, _ := buildTable(t, model, nil, WriterOptions{BlockSize: 512, Compression: comp})
		cf := &countingFile{memFile: f}
		r, err := Open(cf, int64(len(f.b)), ReaderOptions{FileName: "ra.sst", Cache: cache.New(1)})
		require.NoError(t, err)
		blocks := int(r.Properties().NumDataBlocks)
		require.Greater(t, blocks, 50)

		cf.reads = 0
		scanCount(t, r, model)
		require.Less(t, cf.reads, blocks/4, "forward scan: %d reads for %d blocks", cf.reads, blocks)
		forwardReads := cf.reads

		// A fresh iterator, so that the forward scan's chunk does not
		// serve the backward one.
		it := r.NewIter()
		cf.reads = 0
		i := len(model)
		for ok := it.Last(); ok; ok = it.Prev() {
			i--
			require.Equal(t, model[i].key, it.Key())
			require.True(t, bytes.Equal(model[i].val, it.Value()), "value of %s", model[i].key)
		}
		require.NoError(t, it.Error())
		require.Equal(t, 0, i)
		t.Logf("%s: %d blocks: forward %d reads, backward %d", comp, blocks, forwardReads, cf.reads)
		// Chunks grow backward as they do forward: a handful of reads.
		require.LessOrEqual(t, cf.reads, forwardReads+2, "backward scan: %d reads for %d blocks, forward %d",
			cf.reads, blocks, forwardReads)
		require.NoError(t, it.Close())
		require.NoError(t, r.Close())
	}
}

// TestIter_ReadaheadCorruption flips a byte in a data block that only
// readahead reads: scans in both directions must stop with ErrCorruption,
// never yield wrong data.
func TestIter_ReadaheadCorruption(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	model := randomModel(rng, 3000)
	f, _ := buildTable(t, model, nil, WriterOptions{BlockSize: 512})
	r0 := openMem(t, f, nil)
	dataSize := r0.Properties().DataSize
	require.NoError(t, r0.Close())
	for _, pos := range []uint64{0, dataSize / 2, dataSize - 3} {
		bad := &memFile{b: bytes.Clone(f.b)}
		bad.b[pos] ^= 0x40
		r, err := Open(bad, int64(len(bad.b)), ReaderOptions{FileName: "bad.sst", Cache: cache.New(1)})
		require.NoError(t, err)
		it := r.NewIter()
		i := 0
		for ok := it.First(); ok; ok = it.Next() {
			require.Equal(t, model[i].key, it.Key(), "wrong data before the damage")
			require.True(t, bytes.Equal(model[i].val, it.Value()), "value of %s", model[i].key)
			i++
		}
		require.Error(t, it.Error())
		require.True(t, errors.Is(it.Error(), base.ErrCorruption), "%v", it.Error())

		// Backward, on a fresh iterator so that readahead reads the
		// damaged block in a backward chunk (0 and dataSize-3 damage the
		// first and last blocks: the start and the end of a chunk).
		it = r.NewIter()
		i = len(model)
		for ok := it.Last(); ok; ok = it.Prev() {
			i--
			require.Equal(t, model[i].key, it.Key(), "wrong data before the damage")
			require.True(t, bytes.Equal(model[i].val, it.Value()), "value of %s", model[i].key)
		}
		require.Greater(t, i, 0, "the reverse scan read every entry")
		require.True(t, errors.Is(it.Error(), base.ErrCorruption), "%v", it.Error())
		require.Contains(t, it.Error().Error(), "bad.sst")
		require.ErrorContains(t, it.Error(), "offset")
		require.NoError(t, r.Close())
	}
}

// scanCount scans r forward with a fresh iterator, checking every entry
// against model.
func scanCount(t *testing.T, r *Reader, model []kv) {
	t.Helper()
	it := r.NewIter()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		require.Equal(t, model[i].key, it.Key())
		require.True(t, bytes.Equal(model[i].val, it.Value()), "value of %s", model[i].key)
		i++
	}
	require.NoError(t, it.Error())
	require.Equal(t, len(model), i)
	require.NoError(t, it.Close())
}

// TestIter_ReadaheadFillsRoomyCache: blocks read by readahead go into a
// cache that has room for them, so a second scan reads nothing from the
// file (and the cached copies do not alias the reused chunk).
func TestIter_ReadaheadFillsRoomyCache(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	model := randomModel(rng, 3000)
	for _, comp := range []Compression{NoCompression, SnappyCompression} {
		f, _ := buildTable(t, model, nil, WriterOptions{BlockSize: 512, Compression: comp})
		cf := &countingFile{memFile: f}
		c := cache.New(64 << 20)
		r, err := Open(cf, int64(len(f.b)), ReaderOptions{FileName: "ra.sst", Cache: c})
		require.NoError(t, err)
		blocks := int(r.Properties().NumDataBlocks)

		scanCount(t, r, model)
		require.Equal(t, uint64(blocks), c.Stats().Inserts, "%s: every block cached", comp)
		cf.reads = 0
		scanCount(t, r, model)
		require.Zero(t, cf.reads, "%s: second scan served from the cache", comp)
		require.Zero(t, c.Stats().Evictions)
		require.NoError(t, r.Close())
	}
}

// TestIter_ReadaheadKeepsHotBlocks: a scan through a full cache caches
// only the blocks it reads on its own before readahead starts, so it
// evicts at most those few of the blocks point reads put there.
func TestIter_ReadaheadKeepsHotBlocks(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	model := randomModel(rng, 3000)
	f, _ := buildTable(t, model, nil, WriterOptions{BlockSize: 512})
	c := cache.New(16 << 10)
	r := openMem(t, f, c)
	for i := 0; i < len(model); i += 7 {
		_, _, _, found, err := r.Get(model[i].key.UserKey, base.MaxSeqNum)
		require.NoError(t, err)
		require.True(t, found)
	}
	before := c.Stats()
	require.Greater(t, before.Evictions, uint64(0), "the point reads filled the cache")
	scanCount(t, r, model)
	after := c.Stats()
	require.LessOrEqual(t, after.Evictions-before.Evictions, uint64(2), "the scan evicted hot blocks")
	require.LessOrEqual(t, after.Inserts-before.Inserts, uint64(2))
	require.NoError(t, r.Close())
}
