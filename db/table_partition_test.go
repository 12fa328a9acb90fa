package db_test

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/prefix"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

// partitionedOpts are options that write partitioned indexes and filters
// with small partitions, so that small tables have many.
func partitionedOpts(create bool) *db.Options {
	return &db.Options{CreateIfMissing: create, BloomBitsPerKey: 10, PrefixExtractor: prefix.Fixed(4),
		DisableAutoCompactions: true, IndexType: db.IndexTwoLevelSearch, PartitionFilters: true,
		MetadataBlockSize: 256, BlockSize: 512}
}

// buildPartitionedDB writes tables over several levels with opts and
// returns the directory.
func buildPartitionedDB(t *testing.T, opts *db.Options) string {
	return buildFilterTestDB(t, opts)
}

// tablesOf opens every table of dir with the table package.
func tablesOf(t *testing.T, dir string) []*table.Properties {
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.NotEmpty(t, ssts)
	var out []*table.Properties
	for _, p := range ssts {
		f, err := os.Open(p)
		require.NoError(t, err)
		st, err := f.Stat()
		require.NoError(t, err)
		r, err := table.Open(f, st.Size(), table.ReaderOptions{FileName: p})
		require.NoError(t, err)
		out = append(out, r.Properties())
		require.NoError(t, r.Close())
	}
	return out
}

// A database with IndexTwoLevelSearch and PartitionFilters writes
// partitioned tables (flushes and compactions) and records the options in
// its OPTIONS file; reading it with the partitions pinned and read through
// a tiny block cache gives the same Get, MultiGet and prefix-seek answers
// as a database of full filters, the filters (whole keys and prefixes)
// are useful, and the cached reader pins a small fraction of the metadata.
func TestPartitioned_SameAnswersAsFullFilters(t *testing.T) {
	partDir := buildPartitionedDB(t, partitionedOpts(true))
	for _, p := range tablesOf(t, partDir) {
		require.EqualValues(t, table.IndexTwoLevelSearch, p.IndexType)
		require.Greater(t, p.IndexPartitions, uint64(1))
		require.Positive(t, p.FilterSize)
		require.Equal(t, "bloomfilter", p.FilterPolicy)
	}
	opts, err := os.ReadFile(newestOptionsFile(t, partDir))
	require.NoError(t, err)
	for _, line := range []string{"index_type=kTwoLevelIndexSearch", "partition_filters=true", "metadata_block_size=256"} {
		require.Contains(t, string(opts), "  "+line+"\n")
	}

	fullDir := buildPartitionedDB(t, &db.Options{CreateIfMissing: true, BloomBitsPerKey: 10,
		PrefixExtractor: prefix.Fixed(4), DisableAutoCompactions: true, BlockSize: 512})
	open := func(dir string, cached bool) *db.DB {
		o := partitionedOpts(false)
		o.BlockCacheSize, o.CacheIndexAndFilterBlocks = 24<<10, cached
		d, err := db.Open(dir, o)
		require.NoError(t, err)
		return d
	}
	full := open(fullDir, false)
	defer full.Close()
	pinned := open(partDir, false)
	defer pinned.Close()
	cp := t.TempDir()
	copyDir(t, partDir, cp)
	cached := open(cp, true)
	defer cached.Close()

	rng := rand.New(rand.NewSource(5))
	key := func() []byte { return filterProbeKey(rng) }
	ro := &db.ReadOptions{PrefixSameAsStart: true}
	dbs := []*db.DB{full, pinned, cached}
	its := []*db.Iterator{full.NewIterator(ro), pinned.NewIterator(ro), cached.NewIterator(ro)}
	for i := 0; i < 3000; i++ {
		k := key()
		wv, werr := full.Get(k, nil)
		for _, d := range dbs[1:] {
			gv, gerr := d.Get(k, nil)
			require.Equal(t, werr, gerr, "key %q", k)
			require.Equal(t, string(wv), string(gv), "key %q", k)
		}
		if i%50 == 0 {
			keys := [][]byte{key(), key(), key(), key(), key()}
			wvs, wes := full.MultiGet(keys, nil)
			for _, d := range dbs[1:] {
				gvs, ges := d.MultiGet(keys, nil)
				require.Equal(t, wes, ges)
				require.Equal(t, wvs, gvs)
			}
		}
		for _, it := range its {
			it.Seek(k)
		}
		for n := 0; n < 3; n++ {
			for _, it := range its[1:] {
				require.Equal(t, its[0].Valid(), it.Valid(), "seek %q", k)
				if its[0].Valid() {
					require.Equal(t, string(its[0].Key()), string(it.Key()))
					require.Equal(t, string(its[0].Value()), string(it.Value()))
				}
			}
			for _, it := range its {
				it.Next()
			}
		}
	}
	for _, it := range its {
		require.NoError(t, it.Close())
	}
	fm, pm, cm := full.Metrics(), pinned.Metrics(), cached.Metrics()
	require.Positive(t, fm.Filter.Useful)
	// Partition boundaries add a few false positives at most.
	require.Greater(t, pm.Filter.Useful, fm.Filter.Useful*9/10)
	require.Equal(t, pm.Filter.Useful, cm.Filter.Useful, "the cached partitions spared as many reads")
	require.Less(t, cm.TableReadersMem*4, pm.TableReadersMem, "cached %d, pinned %d", cm.TableReadersMem, pm.TableReadersMem)
}

func newestOptionsFile(t *testing.T, dir string) string {
	m, err := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
	require.NoError(t, err)
	require.NotEmpty(t, m)
	newest := m[0]
	for _, p := range m {
		if len(p) > len(newest) || (len(p) == len(newest) && p > newest) {
			newest = p
		}
	}
	return newest
}

// PartitionFilters without IndexTwoLevelSearch is ignored, as RocksDB
// ignores partition_filters: tables get one index block and a full filter,
// and the OPTIONS file says partition_filters=false. An unknown index type
// and a negative MetadataBlockSize are invalid.
func TestPartitioned_OptionsChecks(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, BloomBitsPerKey: 10, PartitionFilters: true})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
	require.NoError(t, d.Flush())
	require.NoError(t, d.Close())
	for _, p := range tablesOf(t, dir) {
		require.EqualValues(t, table.IndexBinarySearch, p.IndexType)
		require.Zero(t, p.IndexPartitions)
		require.Positive(t, p.FilterSize)
	}
	opts, err := os.ReadFile(newestOptionsFile(t, dir))
	require.NoError(t, err)
	require.Contains(t, string(opts), "  partition_filters=false\n")
	require.Contains(t, string(opts), "  index_type=kBinarySearch\n")
	require.Contains(t, string(opts), "  metadata_block_size=4096\n")

	for _, o := range []*db.Options{
		{CreateIfMissing: true, IndexType: db.IndexType(7)},
		{CreateIfMissing: true, MetadataBlockSize: -1},
	} {
		_, err := db.Open(t.TempDir(), o)
		require.True(t, errors.Is(err, db.ErrInvalidArgument), "%v", err)
		require.True(t, strings.Contains(err.Error(), "IndexType") || strings.Contains(err.Error(), "MetadataBlockSize"), "%v", err)
	}
}
