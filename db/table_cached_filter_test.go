package db_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/prefix"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

func cachedFilterKey(i int) []byte { return []byte(fmt.Sprintf("p%03d-%06d", i%300, i)) }

// filterProbeKey returns a key to look up in a buildFilterTestDB database:
// a third of them under a prefix no key has, the rest in or near its keys.
func filterProbeKey(rng *rand.Rand) []byte {
	if rng.Intn(3) == 0 {
		return []byte(fmt.Sprintf("p%03d-%06d", 300+rng.Intn(50), rng.Intn(9000))) // absent prefix
	}
	return cachedFilterKey(rng.Intn(9000))
}

// buildCachedFilterDB writes tables with whole-key and prefix filters over
// several levels and returns the directory.
func buildCachedFilterDB(t *testing.T) string {
	return buildFilterTestDB(t, &db.Options{CreateIfMissing: true, BloomBitsPerKey: 10,
		PrefixExtractor: prefix.Fixed(4), DisableAutoCompactions: true})
}

// buildFilterTestDB writes four tables of cachedFilterKey keys with opts
// (some deleted, the first two compacted into a lower level) and returns
// the directory.
func buildFilterTestDB(t *testing.T, opts *db.Options) string {
	dir := t.TempDir()
	d, err := db.Open(dir, opts)
	require.NoError(t, err)
	for tb := 0; tb < 4; tb++ {
		for i := tb; i < 8000; i += 4 {
			require.NoError(t, d.Put(cachedFilterKey(i), []byte(strconv.Itoa(i*10+tb)), nil))
		}
		if tb%2 == 1 {
			for i := tb; i < 8000; i += 37 {
				require.NoError(t, d.Delete(cachedFilterKey(i), nil))
			}
		}
		require.NoError(t, d.Flush())
		if tb == 1 {
			require.NoError(t, d.CompactRange(nil, nil))
		}
	}
	require.NoError(t, d.Close())
	return dir
}

// Reading a database with CacheIndexAndFilterBlocks through a tiny block
// cache (filters and data evicted and re-read) gives the same Get,
// MultiGet and prefix-seek answers as with pinned filters; the filters
// are probed (some probes are useful) and no filter is pinned.
func TestCachedFilter_SameAnswersAsPinned(t *testing.T) {
	dir := buildCachedFilterDB(t)
	open := func(on bool) *db.DB {
		d, err := db.Open(dir, &db.Options{BloomBitsPerKey: 10, PrefixExtractor: prefix.Fixed(4),
			DisableAutoCompactions: true, BlockCacheSize: 24 << 10, CacheIndexAndFilterBlocks: on})
		require.NoError(t, err)
		return d
	}
	pinned := open(false)
	cp := t.TempDir()
	copyDir(t, dir, cp) // a second DB on its own copy
	dir = cp
	cached := open(true)
	defer pinned.Close()
	defer cached.Close()

	rng := rand.New(rand.NewSource(3))
	key := func() []byte { return filterProbeKey(rng) }
	pit := pinned.NewIterator(&db.ReadOptions{PrefixSameAsStart: true})
	cit := cached.NewIterator(&db.ReadOptions{PrefixSameAsStart: true})
	for i := 0; i < 3000; i++ {
		k := key()
		wv, werr := pinned.Get(k, nil)
		gv, gerr := cached.Get(k, nil)
		require.Equal(t, werr, gerr, "key %q", k)
		require.Equal(t, string(wv), string(gv), "key %q", k)
		if i%50 == 0 {
			keys := [][]byte{key(), key(), key(), key(), key()}
			wvs, wes := pinned.MultiGet(keys, nil)
			gvs, ges := cached.MultiGet(keys, nil)
			require.Equal(t, wes, ges)
			require.Equal(t, wvs, gvs)
		}
		pit.Seek(k)
		cit.Seek(k)
		for n := 0; n < 3; n++ {
			require.Equal(t, pit.Valid(), cit.Valid(), "seek %q", k)
			if !pit.Valid() {
				break
			}
			require.Equal(t, string(pit.Key()), string(cit.Key()))
			require.Equal(t, string(pit.Value()), string(cit.Value()))
			pit.Next()
			cit.Next()
		}
	}
	require.NoError(t, pit.Close())
	require.NoError(t, cit.Close())

	pm, cm := pinned.Metrics(), cached.Metrics()
	require.Greater(t, cm.Filter.Useful, uint64(0))
	require.Equal(t, pm.Filter.Useful, cm.Filter.Useful, "the cached filters spared as many reads")
	require.Greater(t, cm.BlockCache.Misses, pm.BlockCache.Misses, "filters read through the cache")
	require.Less(t, cm.TableReadersMem, pm.TableReadersMem)
	pp, ok := pinned.GetProperty(db.PropTableReadersMem)
	require.True(t, ok)
	require.Equal(t, strconv.FormatInt(pm.TableReadersMem, 10), pp)
}

// The metric of pinned metadata falls by the filters' size with the option
// on, and the block cache's charge then holds them.
func TestCachedFilter_PinnedMetricAndCacheCharge(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, BloomBitsPerKey: 20, DisableAutoCompactions: true})
	require.NoError(t, err)
	const n = 20000
	for i := 0; i < n; i++ {
		require.NoError(t, d.Put(cachedFilterKey(i), []byte("v"), nil))
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.Close())

	pinnedMem := func(on bool) (pinned int64, cacheUsed int64) {
		d, err := db.Open(dir, &db.Options{BloomBitsPerKey: 20, BlockCacheSize: 8 << 20, CacheIndexAndFilterBlocks: on})
		require.NoError(t, err)
		defer d.Close()
		_, err = d.Get([]byte("p100-absent"), nil) // opens the table and probes its filter
		require.True(t, errors.Is(err, db.ErrNotFound))
		m := d.Metrics()
		require.Equal(t, m.Filter.Checks, m.Filter.Useful, "every table probed, none read")
		require.Positive(t, m.Filter.Useful)
		return m.TableReadersMem, m.BlockCache.Size
	}
	offPinned, offUsed := pinnedMem(false)
	onPinned, onUsed := pinnedMem(true)
	filterBytes := int64(n * 20 / 8)
	require.GreaterOrEqual(t, offPinned-onPinned, filterBytes, "off %d on %d", offPinned, onPinned)
	require.Zero(t, offUsed, "a filter-excluded Get reads no data block")
	require.GreaterOrEqual(t, onUsed, filterBytes)
}

// A corrupt filter block does not fail Open with the option on; the Get
// that probes it fails with ErrCorruption naming the file and the offset,
// and the Get is never answered "not found" from the corrupt filter.
func TestCachedFilter_CorruptFilterFailsGet(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, BloomBitsPerKey: 10, DisableAutoCompactions: true})
	require.NoError(t, err)
	for i := 0; i < 2000; i++ {
		require.NoError(t, d.Put(cachedFilterKey(i), []byte("v"), nil))
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.Close())

	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.Len(t, ssts, 1)
	b, err := os.ReadFile(ssts[0])
	require.NoError(t, err)
	off := filterOffset(t, b)
	b[off+10] ^= 0x40
	require.NoError(t, os.WriteFile(ssts[0], b, 0o644))
	// Without the option the table does not open.
	_, err = table.Open(memTable{bytes.NewReader(b)}, int64(len(b)), table.ReaderOptions{FileName: "probe"})
	require.True(t, errors.Is(err, db.ErrCorruption), "%v", err)
	require.Contains(t, err.Error(), fmt.Sprintf("offset %d", off))

	d, err = db.Open(dir, &db.Options{BloomBitsPerKey: 10, CacheIndexAndFilterBlocks: true})
	require.NoError(t, err)
	defer d.Close()
	for _, k := range [][]byte{cachedFilterKey(5), []byte("p100-absent")} {
		_, err = d.Get(k, nil)
		require.True(t, errors.Is(err, db.ErrCorruption), "%v", err)
		require.Contains(t, err.Error(), filepath.Base(ssts[0]))
		require.Contains(t, err.Error(), fmt.Sprintf("offset %d", off))
	}
	_, errs := d.MultiGet([][]byte{cachedFilterKey(7)}, nil)
	require.True(t, errors.Is(errs[0], db.ErrCorruption), "%v", errs[0])
}

// filterOffset is the offset of a Strata table's filter block: it follows
// the data blocks, as in RocksDB's layout.
func filterOffset(t *testing.T, b []byte) int {
	t.Helper()
	r, err := table.Open(memTable{bytes.NewReader(b)}, int64(len(b)), table.ReaderOptions{FileName: "probe"})
	require.NoError(t, err)
	defer r.Close()
	require.Positive(t, r.Properties().FilterSize)
	return int(r.Properties().DataSize)
}

type memTable struct{ *bytes.Reader }

func (memTable) Close() error { return nil }
