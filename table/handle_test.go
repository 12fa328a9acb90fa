package table

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stratadb/strata/internal/invariants"
	"github.com/stretchr/testify/require"
)

// requireReleased checks that every block-cache handle the readers of c
// took is released (invariants builds count them) and that nothing evicted
// is still held.
func requireReleased(t *testing.T, c *cache.Cache) {
	t.Helper()
	if invariants.Enabled {
		require.Zero(t, c.Outstanding(), "block-cache handles not released")
	}
	require.Zero(t, c.Stats().Pinned, "evicted blocks still held")
}

// handleTables are a plain table and one with a partitioned index and
// filter read through the cache, both compressed (blocks decompressed into
// cache memory) and not.
func handleTables(t *testing.T) (files []*memFile, cached []bool, model []kv) {
	model = make([]kv, 3000)
	for i := range model {
		model[i] = kv{base.MakeInternalKey([]byte(fmt.Sprintf("key%08d", i)), 1, base.KindSet),
			[]byte(fmt.Sprintf("value-%06d-%s", i, "padding padding padding"))}
	}
	for _, o := range []WriterOptions{
		{BlockSize: 512},
		{BlockSize: 512, Compression: SnappyCompression},
		{BlockSize: 512, Compression: ZSTDCompression, FormatVersion: 5},
		{BlockSize: 512, BloomBitsPerKey: 10, WholeKeyFiltering: true, TwoLevelIndex: true,
			PartitionFilters: true, MetadataBlockSize: 256},
	} {
		f, _ := buildTable(t, model, nil, o)
		files = append(files, f)
		cached = append(cached, o.TwoLevelIndex)
	}
	return files, cached, model
}

func openForHandles(t *testing.T, f *memFile, c *cache.Cache, cachedMeta bool) *Reader {
	if cachedMeta {
		return openCachedFilter(t, f, c)
	}
	return openMem(t, f, c)
}

// An iterator keeps the block it rests on readable while the cache evicts
// it (EvictAll, SetCapacity down): the block is counted as pinned until the
// iterator moves off it or closes, and then freed. A release too early (the
// cache freeing a block an iterator holds) shows in invariants builds as
// wrong keys and values (freed memory is poisoned or made inaccessible).
func TestIter_BlockHeldAcrossEviction(t *testing.T) {
	files, cachedMeta, model := handleTables(t)
	for fi, f := range files {
		t.Run(fmt.Sprint(fi), func(t *testing.T) {
			c := cache.New(8 << 20)
			r := openForHandles(t, f, c, cachedMeta[fi])
			defer r.Close()
			it := r.NewIter()
			require.True(t, it.SeekGE([]byte("key00001000")))
			c.EvictAll()
			require.Zero(t, c.Stats().Used)
			require.Positive(t, c.Stats().Pinned, "the iterator's block is pinned")
			// Churn the cache so that freed memory would be reused.
			for i := 0; i < 200; i++ {
				c.Set(99, uint64(i)*4096, make([]byte, 4096))
			}
			c.SetCapacity(0)
			for i := 1000; i < 1100; i++ {
				require.Equal(t, model[i].key, it.Key())
				require.Equal(t, string(model[i].val), string(it.Value()))
				if i < 1099 {
					require.True(t, it.Next())
				}
			}
			require.True(t, it.Prev())
			require.NoError(t, it.Close())
			requireReleased(t, c)
			c.SetCapacity(8 << 20)

			// Lookups and filter probes release what they read.
			for i := 0; i < len(model); i += 13 {
				v, _, _, found, err := r.Get(model[i].key.UserKey, base.MaxSeqNum)
				require.NoError(t, err)
				require.True(t, found)
				require.Equal(t, string(model[i].val), string(v))
				require.True(t, r.KeyMayMatch(model[i].key.UserKey))
			}
			// A Get's value is a copy: it survives the block's eviction.
			v, _, _, _, err := r.Get(model[7].key.UserKey, base.MaxSeqNum)
			require.NoError(t, err)
			c.EvictAll()
			for i := 0; i < 200; i++ {
				c.Set(99, uint64(i)*4096, make([]byte, 4096))
			}
			require.Equal(t, string(model[7].val), string(v))
			requireReleased(t, c)

			// Scans (readahead, cached or not) and reverse scans.
			for _, capacity := range []int64{8 << 20, 16 << 10} {
				c.SetCapacity(capacity)
				it := r.NewIter()
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					require.Equal(t, model[n].key, it.Key())
					n++
				}
				require.Equal(t, len(model), n)
				for ok := it.Last(); ok; ok = it.Prev() {
					n--
					require.Equal(t, string(model[n].val), string(it.Value()))
				}
				require.Zero(t, n)
				require.NoError(t, it.Close())
				require.NoError(t, it.Close(), "Close twice releases once")
				requireReleased(t, c)
			}
		})
	}
}

// Concurrent scans, lookups and probes while the cache is evicted and
// resized; run under -race (heap memory the detector watches) and
// -tags invariants (freed memory poisoned or inaccessible).
func TestIter_ConcurrentEviction(t *testing.T) {
	files, cachedMeta, model := handleTables(t)
	c := cache.New(256 << 10)
	var readers []*Reader
	for fi, f := range files {
		readers = append(readers, openForHandles(t, f, c, cachedMeta[fi]))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := readers[g%len(readers)]
			for n := 0; n < 20; n++ {
				it := r.NewIter()
				i := (n * 131) % len(model)
				for ok := it.SeekGE(model[i].key.UserKey); ok && i < len(model); ok = it.Next() {
					if string(it.Value()) != string(model[i].val) {
						errs <- fmt.Errorf("reader %d: key %d: got %q", g, i, it.Value())
						break
					}
					i += 1
				}
				_ = it.Close()
				for j := n; j < len(model); j += 97 {
					v, _, _, _, err := r.Get(model[j].key.UserKey, base.MaxSeqNum)
					if err != nil || string(v) != string(model[j].val) {
						errs <- fmt.Errorf("reader %d: Get %d: %q, %v", g, j, v, err)
						break
					}
					r.KeyMayMatch(model[j].key.UserKey)
				}
			}
		}(g)
	}
	var evictor sync.WaitGroup
	evictor.Add(1)
	go func() {
		defer evictor.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			switch i % 3 {
			case 0:
				c.EvictAll()
			case 1:
				c.SetCapacity(int64(16+i%200) << 10)
			default:
				c.EvictFile(readers[i%len(readers)].cacheID)
			}
		}
	}()
	wg.Wait()
	close(stop)
	evictor.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, r := range readers {
		require.NoError(t, r.Close())
	}
	requireReleased(t, c)
}
