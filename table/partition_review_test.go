package table

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/bloom"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stratadb/strata/prefix"
	"github.com/stretchr/testify/require"
)

// TestPartitioned_NoFalseNegativesRandom builds partitioned tables of
// random keys (several versions of a key across data blocks, keys outside
// the extractor's domain, tiny blocks and partitions) and checks that no
// present key and no present prefix is filtered out.
func TestPartitioned_NoFalseNegativesRandom(t *testing.T) {
	for seed := int64(0); seed < 24; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var pe prefix.Extractor
		switch seed % 3 {
		case 0:
			pe = prefix.Fixed(1 + rng.Intn(4))
		case 1:
			pe = prefix.Capped(1 + rng.Intn(4))
		}
		whole := pe == nil || rng.Intn(2) == 0
		o := WriterOptions{BloomBitsPerKey: 1 + rng.Intn(12), WholeKeyFiltering: whole, PrefixExtractor: pe,
			BlockSize: 16 + rng.Intn(200), TwoLevelIndex: true, PartitionFilters: true,
			MetadataBlockSize: 1 + rng.Intn(300), FormatVersion: uint32(2 + rng.Intn(4))}
		keys := map[string]bool{}
		for len(keys) < 200+rng.Intn(800) {
			n := rng.Intn(7)
			b := make([]byte, n)
			for i := range b {
				b[i] = 'a' + byte(rng.Intn(3))
			}
			keys[string(b)] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		var model []kv
		for _, k := range sorted {
			versions := 1
			if rng.Intn(8) == 0 {
				versions = 2 + rng.Intn(30)
			}
			for v := versions; v > 0; v-- {
				model = append(model, kv{key: base.MakeInternalKey([]byte(k), base.SeqNum(v), base.KindSet), val: []byte("v")})
			}
		}
		f, _ := buildTable(t, model, nil, o)
		for _, cached := range []bool{false, true} {
			name := fmt.Sprintf("seed %d cached %v opts %+v", seed, cached, o)
			r, err := Open(f, int64(len(f.b)), ReaderOptions{FileName: "rnd.sst", Cache: cache.New(1 << 20), CacheIndexAndFilterBlocks: cached})
			require.NoError(t, err, name)
			require.Greater(t, r.Properties().IndexPartitions, uint64(1), name)
			for _, k := range sorted {
				if whole {
					may, err := r.KeyMayMatchHashErr([]byte(k), bloom.HashKey([]byte(k)))
					require.NoError(t, err)
					require.True(t, may, "%s: key %q", name, k)
				}
				if pe != nil && pe.InDomain([]byte(k)) {
					p := pe.Transform([]byte(k))
					may, err := r.PrefixMayMatchHashErr(p, bloom.HashKey(p))
					require.NoError(t, err)
					require.True(t, may, "%s: prefix %q of %q", name, p, k)
					may, err = r.PrefixMayMatchErr(p)
					require.NoError(t, err)
					require.True(t, may, "%s: prefix %q of %q", name, p, k)
				}
			}
			require.NoError(t, r.Close())
		}
	}
}
