package table

import (
	"bytes"
	"fmt"
	"github.com/stratadb/strata/internal/invariants"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/bloom"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stratadb/strata/prefix"
	"github.com/stretchr/testify/require"
)

func openCachedFilter(t testing.TB, f *memFile, c *cache.Cache) *Reader {
	r, err := Open(f, int64(len(f.b)), ReaderOptions{FileName: "cf.sst", Cache: c, CacheIndexAndFilterBlocks: true})
	require.NoError(t, err)
	return r
}

// cachedFilterTables builds a few tables with whole-key and prefix filters.
func cachedFilterTables(t *testing.T) []*memFile {
	var out []*memFile
	pe := prefix.Fixed(5)
	for i, o := range []WriterOptions{
		{BlockSize: 256, BloomBitsPerKey: 10, WholeKeyFiltering: true},
		{BlockSize: 256, BloomBitsPerKey: 16, WholeKeyFiltering: true, PrefixExtractor: pe},
		{BlockSize: 512, BloomBitsPerKey: 10, PrefixExtractor: pe, Compression: SnappyCompression},
		{BlockSize: 256, BloomBitsPerKey: 10, WholeKeyFiltering: true, FormatVersion: 4},
	} {
		model := make([]kv, 0, 3000)
		for k := 0; k < 3000; k++ {
			model = append(model, kv{base.MakeInternalKey([]byte(fmt.Sprintf("k%03d.%05d", (k*7+i)%400, k)), base.SeqNum(k+1), base.KindSet),
				[]byte(fmt.Sprintf("v%d", k))})
		}
		sortModel(model)
		f, _ := buildTable(t, model, nil, o)
		out = append(out, f)
	}
	return out
}

func sortModel(m []kv) {
	for i := 1; i < len(m); i++ {
		for j := i; j > 0 && base.InternalCompare(m[j].key, m[j-1].key) < 0; j-- {
			m[j], m[j-1] = m[j-1], m[j]
		}
	}
}

// With CacheIndexAndFilterBlocks the filter is read through a tiny cache
// (evicted and re-read all the time) and every probe, Get and seek answers
// as the pinned filter does.
func TestCachedFilter_SameAnswers(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for ti, f := range cachedFilterTables(t) {
		pinned := openMem(t, f, cache.New(1<<20))
		c := cache.New(8 << 10) // a filter or two at most
		cached := openCachedFilter(t, f, c)
		require.True(t, cached.HasFilter())
		require.True(t, cached.cachedFilter)
		require.Nil(t, cached.filter)
		require.True(t, c.Fits(int(cached.filterH.size)+blockTrailerLen), "table %d: filter of %d bytes", ti, cached.filterH.size)
		before := c.Stats()
		pit, cit := pinned.NewIter(), cached.NewIter()
		for i := 0; i < 4000; i++ {
			var key []byte
			if rng.Intn(2) == 0 {
				key = []byte(fmt.Sprintf("k%03d.%05d", rng.Intn(450), rng.Intn(3100)))
			} else {
				key = []byte(fmt.Sprintf("k%03d", rng.Intn(450)))
			}
			h := bloom.HashKey(key)
			want, werr := pinned.KeyMayMatchHashErr(key, h)
			got, gerr := cached.KeyMayMatchHashErr(key, h)
			require.NoError(t, werr)
			require.NoError(t, gerr)
			require.Equal(t, want, got, "table %d key %q", ti, key)
			require.Equal(t, pinned.KeyMayMatch(key), cached.KeyMayMatch(key))
			p := key[:min(5, len(key))]
			ph := bloom.HashKey(p)
			wp, _ := pinned.PrefixMayMatchHashErr(p, ph)
			gp, err := cached.PrefixMayMatchHashErr(p, ph)
			require.NoError(t, err)
			require.Equal(t, wp, gp, "table %d prefix %q", ti, p)
			require.Equal(t, pinned.PrefixMayMatch(p), cached.PrefixMayMatch(p))

			wv, wk, ws, wf, werr := pinned.Get(key, base.MaxSeqNum)
			gv, gk, gs, gf, gerr := cached.Get(key, base.MaxSeqNum)
			require.NoError(t, werr)
			require.NoError(t, gerr)
			require.Equal(t, wf, gf)
			require.Equal(t, string(wv), string(gv))
			require.Equal(t, wk, gk)
			require.Equal(t, ws, gs)

			wok, gok := pit.SeekGE(key), cit.SeekGE(key)
			require.Equal(t, wok, gok)
			if wok {
				require.Equal(t, pit.Key(), cit.Key())
				require.Equal(t, string(pit.Value()), string(cit.Value()))
			}
		}
		require.NoError(t, pit.Close())
		require.NoError(t, cit.Close())
		st := c.Stats()
		require.Greater(t, st.Evictions, before.Evictions, "the tiny cache evicted nothing")
		require.NoError(t, pinned.Close())
		require.NoError(t, cached.Close())
	}
}

// With the option on, the filter is not pinned: PinnedBytes drops by its
// size, and the cache charges it once a probe read it.
func TestCachedFilter_NotPinnedAndCharged(t *testing.T) {
	f, _ := buildTable(t, pinnedModel(5000), nil, pinnedOpts)
	pinned := openMem(t, f, cache.New(1<<20))
	defer pinned.Close()
	c := cache.New(1 << 20)
	cached := openCachedFilter(t, f, c)
	defer cached.Close()

	filterLen := len(pinned.filter)
	require.Greater(t, filterLen, 5000, "a 10-bit filter of 5000 keys")
	pn, _ := pinned.PinnedBytes()
	cn, _ := cached.PinnedBytes()
	require.Less(t, cn, pn-filterLen+pinnedAlign, "pinned %d, cached-filter reader %d, filter %d", pn, cn, filterLen)

	require.Zero(t, c.Stats().Used, "Open reads the filter into the cache")
	may, err := cached.KeyMayMatchErr([]byte("key00000042"))
	require.NoError(t, err)
	require.True(t, may)
	st := c.Stats()
	require.Equal(t, uint64(1), st.Inserts)
	require.GreaterOrEqual(t, st.Used, int64(filterLen)+cache.EntryOverhead)
	b, ok := c.Get(cached.cacheID, cached.filterH.offset)
	require.True(t, ok)
	require.True(t, bytes.Equal(pinned.filter, b.Bytes()))
	b.Release()

	// A second probe hits the cache and allocates nothing.
	key := []byte("key00004242")
	h := bloom.HashKey(key)
	requireCachedProbeAllocsNothing(t, cached, key, h)
	require.Equal(t, uint64(1), c.Stats().Inserts)
}

// A filter larger than the cache can keep is not read: the probes answer
// "may contain" (no false negative) and Get reads the data.
func TestCachedFilter_TooBigForCache(t *testing.T) {
	f, _ := buildTable(t, pinnedModel(5000), nil, pinnedOpts)
	c := cache.New(4 << 10)
	r := openCachedFilter(t, f, c)
	defer r.Close()
	require.False(t, c.Fits(int(r.filterH.size)+blockTrailerLen))
	for _, k := range []string{"key00000001", "nokey"} {
		may, err := r.KeyMayMatchErr([]byte(k))
		require.NoError(t, err)
		require.True(t, may)
	}
	_, _, _, found, err := r.Get([]byte("key00000001"), base.MaxSeqNum)
	require.NoError(t, err)
	require.True(t, found)
}

// A corrupt filter does not fail Open with the option on; the probe that
// reads it fails with ErrCorruption naming the file and the filter's
// offset, through every probe method, and the bool probes never answer
// "absent" on an error. With the option off, Open itself fails.
func TestCachedFilter_CorruptFilterFailsTheRead(t *testing.T) {
	f, _ := buildTable(t, pinnedModel(2000), nil, pinnedOpts)
	probe := openCachedFilter(t, f, cache.New(1<<20))
	h := probe.filterH
	require.NoError(t, probe.Close())

	bad := &memFile{b: bytes.Clone(f.b)}
	bad.b[h.offset+h.size/2] ^= 0x5a
	_, err := Open(bad, int64(len(bad.b)), ReaderOptions{FileName: "cf.sst", Cache: cache.New(1 << 20)})
	require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)

	r := openCachedFilter(t, bad, cache.New(1<<20))
	defer r.Close()
	key := []byte("key00000007")
	checkErr := func(err error) {
		t.Helper()
		require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
		require.Contains(t, err.Error(), "cf.sst")
		require.Contains(t, err.Error(), fmt.Sprintf("offset %d", h.offset))
	}
	_, err = r.KeyMayMatchErr(key)
	checkErr(err)
	_, err = r.KeyMayMatchHashErr(key, bloom.HashKey(key))
	checkErr(err)
	require.True(t, r.KeyMayMatch([]byte("absent-key")))
	require.True(t, r.KeyMayMatchHash([]byte("absent-key"), bloom.HashKey([]byte("absent-key"))))

	// A prefix-filtered table: the prefix probes fail the same way.
	pf, _ := buildTable(t, pinnedModel(2000), nil, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, PrefixExtractor: prefix.Fixed(6)})
	pr := openCachedFilter(t, pf, cache.New(1<<20))
	ph := pr.filterH
	require.NoError(t, pr.Close())
	pf.b[ph.offset+1] ^= 0x01
	pr = openCachedFilter(t, pf, cache.New(1<<20))
	defer pr.Close()
	_, err = pr.PrefixMayMatchErr([]byte("key000"))
	require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
	require.True(t, strings.Contains(err.Error(), fmt.Sprintf("offset %d", ph.offset)), "%v", err)
	_, err = pr.PrefixMayMatchHashErr([]byte("key000"), bloom.HashKey([]byte("key000")))
	require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
	require.True(t, pr.PrefixMayMatch([]byte("zzz999")))
}

// A filter handle beyond the file is still caught at Open.
func TestCachedFilter_BadHandleAtOpen(t *testing.T) {
	f, _ := buildTable(t, pinnedModel(500), nil, pinnedOpts)
	r := openCachedFilter(t, f, cache.New(1<<20))
	h := r.filterH
	require.NoError(t, r.Close())
	// Cut the table right after its filter: the footer is gone.
	_, err := Open(&memFile{b: f.b[:h.offset+h.size]}, int64(h.offset+h.size),
		ReaderOptions{FileName: "cf.sst", Cache: cache.New(1 << 20), CacheIndexAndFilterBlocks: true})
	require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
}

// probeConcurrently runs 4 goroutines of 1000 random keys each, of the
// shape of the cached-filter and partition test tables ("k%03d.%05d"), and
// fails the test with the first error a check returns. newCheck is called
// on each goroutine for its check and for what to do when it is done.
// Checks run off the test goroutine, so they return errors instead of
// asserting.
func probeConcurrently(t *testing.T, newCheck func() (check func(key []byte) error, done func())) {
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			check, done := newCheck()
			defer done()
			rng := rand.New(rand.NewSource(seed))
			for i := 0; i < 1000; i++ {
				key := []byte(fmt.Sprintf("k%03d.%05d", rng.Intn(450), rng.Intn(3100)))
				if err := check(key); err != nil {
					errs <- err
					return
				}
			}
		}(int64(g))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// Concurrent probes and Gets over one reader with a tiny cache (run with
// -race): answers match the pinned reader's.
func TestCachedFilter_Concurrent(t *testing.T) {
	f := cachedFilterTables(t)[0]
	pinned := openMem(t, f, nil)
	defer pinned.Close()
	cached := openCachedFilter(t, f, cache.New(8<<10))
	defer cached.Close()
	probeConcurrently(t, func() (func([]byte) error, func()) {
		return func(key []byte) error {
			want, _ := pinned.KeyMayMatchErr(key)
			got, err := cached.KeyMayMatchErr(key)
			if err != nil || got != want {
				return fmt.Errorf("key %q: pinned %v, cached %v (%v)", key, want, got, err)
			}
			_, _, _, wf, _ := pinned.Get(key, base.MaxSeqNum)
			_, _, _, gf, err := cached.Get(key, base.MaxSeqNum)
			if err != nil || gf != wf {
				return fmt.Errorf("Get %q: pinned %v, cached %v (%v)", key, wf, gf, err)
			}
			return nil
		}, func() {}
	})
}

// requireCachedProbeAllocsNothing checks that probing r's filter for key,
// whose hash is h and which r holds, allocates nothing: the filter (or its
// partition) is served from the cache.
func requireCachedProbeAllocsNothing(t *testing.T, r *Reader, key []byte, h uint64) {
	t.Helper()
	allocs := testing.AllocsPerRun(100, func() {
		if ok, err := r.KeyMayMatchHashErr(key, h); !ok || err != nil {
			panic("filter lost a key")
		}
	})
	if invariants.Enabled {
		return // each block-cache handle is tracked, an allocation
	}
	require.Zero(t, allocs)
}
