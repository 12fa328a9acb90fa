package table

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/bloom"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stratadb/strata/prefix"
	"github.com/stretchr/testify/require"
)

// partitionEntries decodes an index-form block (the top-level index, or
// the partitioned filter's index): keys and handles.
func partitionEntries(t *testing.T, r *Reader, b []byte) (keys []string, handles []blockHandle) {
	var it blockIter
	require.True(t, r.initIndexIter(&it, b, false, false))
	for ok := it.first(); ok; ok = it.next() {
		keys = append(keys, string(it.key))
		handles = append(handles, it.handle)
	}
	require.False(t, it.corrupt)
	return keys, handles
}

// filterParts returns a reader's filter partitions in key order.
func filterPartsOf(t *testing.T, r *Reader) (keys []string, parts [][]byte) {
	require.NotNil(t, r.partFilter)
	keys, hs := partitionEntries(t, r, r.partFilter.top)
	for _, h := range hs {
		parts = append(parts, r.partFilter.parts[h.offset])
	}
	return keys, parts
}

// indexPartitionSeps returns every data-block separator of a two-level
// index, partition by partition.
func indexPartitionSeps(t *testing.T, r *Reader) (top []string, parts [][]string) {
	top, hs := partitionEntries(t, r, r.index)
	for _, h := range hs {
		k, _ := partitionEntries(t, r, r.partitions[h.offset])
		parts = append(parts, k)
	}
	return top, parts
}

// TestPartitioned_SameAsRocksDB rewrites the entries of tables RocksDB
// 7.8.3 wrote with partition_index_and_filters (see
// testdata/rocksdb-extra/*COMMAND.txt) and compares the
// partitioning: the same index partitions holding the same separators, the
// same filter partitions (byte for byte: the same keys and prefixes in
// each, including the prefix of the key after a cut) under the same keys,
// the same filter entry count and size. db_bench shortens the table's last
// key to a successor (we keep it, the library default), so the last
// separator, and the sizes that include it, are compared apart.
func TestPartitioned_SameAsRocksDB(t *testing.T) {
	for _, c := range []struct {
		path     string
		comp     Compression
		pe       prefix.Extractor
		metaSize int
		parts    int
		whole    bool
	}{
		{"testdata/rocksdb/fv5-xxh3-snappy-partitioned-000009.sst", SnappyCompression, nil, 512, 6, true},
		{"testdata/rocksdb-extra/partitioned-prefix12-000009.sst", NoCompression, prefix.Fixed(12), 256, 12, true},
		{"testdata/rocksdb-extra/partitioned-prefixonly12-000009.sst", NoCompression, prefix.Fixed(12), 256, 13, false},
	} {
		t.Run(c.path, func(t *testing.T) {
			theirs := openFixture(t, c.path)
			defer theirs.Close()
			p := theirs.Properties()
			require.Equal(t, uint32(IndexTwoLevelSearch), p.IndexType)
			ours, ourBytes := rewriteTable(t, theirs, WriterOptions{FormatVersion: p.FormatVersion, Checksum: p.ChecksumType,
				Compression: c.comp, BloomBitsPerKey: 10, WholeKeyFiltering: c.whole, PrefixExtractor: c.pe,
				TwoLevelIndex: true, PartitionFilters: true, MetadataBlockSize: c.metaSize})
			defer ours.Close()
			q := ours.Properties()

			require.Equal(t, uint32(IndexTwoLevelSearch), q.IndexType)
			require.EqualValues(t, c.parts, q.IndexPartitions)
			require.Equal(t, p.IndexPartitions, q.IndexPartitions)
			require.Equal(t, p.NumDataBlocks, q.NumDataBlocks)
			require.Equal(t, p.NumFilterEntries, q.NumFilterEntries)
			require.Equal(t, p.FilterPolicy, q.FilterPolicy)
			require.Equal(t, p.PrefixExtractorName, q.PrefixExtractorName)
			require.Equal(t, p.IndexKeyIsUserKey, q.IndexKeyIsUserKey)
			require.Equal(t, p.IndexValueIsDeltaEncoded, q.IndexValueIsDeltaEncoded)

			tt, tp := indexPartitionSeps(t, theirs)
			ot, op := indexPartitionSeps(t, ours)
			require.Equal(t, len(tp), len(op))
			for i := range tp {
				if i < len(tp)-1 {
					require.Equal(t, tp[i], op[i], "index partition %d", i)
					require.Equal(t, tt[i], ot[i], "top-level key %d", i)
				} else {
					require.Equal(t, tp[i][:len(tp[i])-1], op[i][:len(op[i])-1], "last index partition")
				}
			}
			// The last key: theirs is a successor of ours (the table's last
			// user key), so every size including it differs by as much.
			d := len(ot[len(ot)-1]) - len(tt[len(tt)-1])
			require.Equal(t, int(p.TopLevelIndexSize)+d, int(q.TopLevelIndexSize))
			// The index size counts the last key twice: in its partition
			// and in the top-level index.
			require.Equal(t, int(p.IndexSize)+2*d, int(q.IndexSize))

			tk, tparts := filterPartsOf(t, theirs)
			ok, oparts := filterPartsOf(t, ours)
			require.Equal(t, len(tk), len(ok))
			require.Equal(t, tk[:len(tk)-1], ok[:len(ok)-1], "filter partition keys")
			require.Equal(t, tparts, oparts, "filter partitions")
			require.Equal(t, int(p.FilterSize)+d, int(q.FilterSize))
			if c.comp == NoCompression {
				want, err := os.ReadFile(c.path)
				require.NoError(t, err)
				require.True(t, bytes.Equal(want[:p.DataSize], ourBytes[:p.DataSize]), "data blocks differ")
			}
		})
	}
}

// partTables builds partitioned tables (two-level index, partitioned
// filter, small partitions) over fv 2..5 with whole-key and prefix
// filters, with and without compression.
func partTables(t *testing.T) (files []*memFile, opts []WriterOptions, models [][]kv) {
	pe := prefix.Fixed(5)
	for i, o := range []WriterOptions{
		{BloomBitsPerKey: 10, WholeKeyFiltering: true},
		{BloomBitsPerKey: 16, WholeKeyFiltering: true, PrefixExtractor: pe, Compression: SnappyCompression},
		{BloomBitsPerKey: 10, PrefixExtractor: pe},
		{BloomBitsPerKey: 10, WholeKeyFiltering: true, PrefixExtractor: pe, FormatVersion: 4, Compression: ZSTDCompression},
		{BloomBitsPerKey: 10, WholeKeyFiltering: true, FormatVersion: 3},
		{BloomBitsPerKey: 10, WholeKeyFiltering: true, PrefixExtractor: pe, FormatVersion: 2},
	} {
		o.BlockSize, o.TwoLevelIndex, o.PartitionFilters, o.MetadataBlockSize = 256, true, true, 256+64*i
		model := make([]kv, 0, 3000)
		for k := 0; k < 3000; k++ {
			// Every 10th user key has a second version, so that at fv >= 3
			// some tables need internal-key separators.
			uk := []byte(fmt.Sprintf("k%03d.%05d", (k*7+i)%400, k/2*2))
			model = append(model, kv{base.MakeInternalKey(uk, base.SeqNum(k+1), base.KindSet), []byte(fmt.Sprintf("v%d", k))})
		}
		sortModel(model)
		model = dedupModel(model)
		f, _ := buildTable(t, model, nil, o)
		files, opts, models = append(files, f), append(opts, o), append(models, model)
	}
	return files, opts, models
}

// dedupModel drops entries whose internal key repeats.
func dedupModel(m []kv) []kv {
	out := m[:0]
	for i, e := range m {
		if i > 0 && base.InternalCompare(m[i-1].key, e.key) == 0 {
			continue
		}
		out = append(out, e)
	}
	return out
}

// Partitioned tables read back through our reader, with the partitions
// pinned and read through a tiny block cache: every entry is found, seeks
// and Gets match the model, no key or prefix of the table is filtered out,
// and most absent keys and prefixes are.
func TestPartitioned_RoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	files, opts, models := partTables(t)
	for ti, f := range files {
		o, model := opts[ti], models[ti]
		for _, cached := range []bool{false, true} {
			name := fmt.Sprintf("table %d cached %v", ti, cached)
			c := cache.New(8 << 10)
			r, err := Open(f, int64(len(f.b)), ReaderOptions{FileName: "part.sst", Cache: c, CacheIndexAndFilterBlocks: cached})
			require.NoError(t, err)
			p := r.Properties()
			require.Equal(t, uint32(IndexTwoLevelSearch), p.IndexType, name)
			require.Greater(t, p.IndexPartitions, uint64(2), name)
			require.NotNil(t, r.partFilter, name)
			require.Equal(t, cached, r.partitions == nil, name)
			require.Equal(t, cached, r.partFilter.parts == nil, name)
			fk, _ := partitionEntries(t, r, r.partFilter.top)
			require.Greater(t, len(fk), 2, name)
			checkTable(t, rng, r, model, o.PrefixExtractor)
			require.NoError(t, r.VerifyChecksums())

			present := map[string]bool{}
			for _, e := range model {
				present[string(e.key.UserKey)] = true
			}
			absentKeys, passedKeys, absentPfx, passedPfx := 0, 0, 0, 0
			for i := 0; i < 2000; i++ {
				key := []byte(fmt.Sprintf("k%03d.%05d", rng.Intn(450), rng.Intn(3100)))
				may, err := r.KeyMayMatchErr(key)
				require.NoError(t, err)
				if present[string(key)] {
					require.True(t, may, "%s: key %q filtered out", name, key)
				} else if o.WholeKeyFiltering {
					absentKeys++
					if may {
						passedKeys++
					}
				}
				if o.PrefixExtractor == nil {
					continue
				}
				pfx := key[:5]
				may, err = r.PrefixMayMatchHashErr(pfx, bloom.HashKey(pfx))
				require.NoError(t, err)
				if n := bytes.Compare(pfx, []byte("k400")); n < 0 { // k000..k399 are present
					require.True(t, may, "%s: prefix %q filtered out", name, pfx)
				} else {
					absentPfx++
					if may {
						passedPfx++
					}
				}
			}
			if o.WholeKeyFiltering {
				require.Less(t, passedKeys, absentKeys/10, "%s: absent keys passed", name)
			}
			if o.PrefixExtractor != nil {
				require.Positive(t, absentPfx)
				require.Less(t, passedPfx, absentPfx/10+1, "%s: absent prefixes passed", name)
			}
			require.NoError(t, r.Close())
		}
	}
}

// TestPartitioned_SSTDump has RocksDB 7.8.3's sst_dump verify, iterate and
// scan partitioned tables we wrote, and list their properties: the index
// type, partition count and sizes we recorded.
func TestPartitioned_SSTDump(t *testing.T) {
	bin := sstDumpPath(t)
	dir := t.TempDir()
	model := interopModel(rand.New(rand.NewSource(3)), 2000)
	want := sstDumpScan(model)
	for i, o := range []WriterOptions{
		{Compression: SnappyCompression, BloomBitsPerKey: 10, WholeKeyFiltering: true},
		{FormatVersion: 4, Compression: ZSTDCompression, BloomBitsPerKey: 16, WholeKeyFiltering: true, PrefixExtractor: prefix.Fixed(4)},
		{FormatVersion: 3, BloomBitsPerKey: 10, PrefixExtractor: prefix.Fixed(4)},
		{Compression: LZ4Compression}, // two-level index without a filter
	} {
		o.BlockSize, o.TwoLevelIndex, o.PartitionFilters, o.MetadataBlockSize = 512, true, true, 300
		f, _ := buildTable(t, model, nil, o)
		path := filepath.Join(dir, fmt.Sprintf("part%d.sst", i))
		require.NoError(t, os.WriteFile(path, f.b, 0o644))
		r := openMem(t, f, nil)
		p := *r.Properties()
		require.NoError(t, r.Close())
		require.Greater(t, p.IndexPartitions, uint64(3))
		checkWithSSTDump(t, bin, path, want)

		out, errOut := runSSTDump(bin, "--file="+path, "--show_properties")
		require.Empty(t, errOut)
		got := map[string]string{}
		for _, m := range propLine.FindAllStringSubmatch(out, -1) {
			got[m[1]] = m[2]
		}
		userKey, delta := 0, 0
		if p.IndexKeyIsUserKey {
			userKey = 1
		}
		if p.IndexValueIsDeltaEncoded {
			delta = 1
		}
		policy := "N/A"
		if o.BloomBitsPerKey > 0 {
			policy = "bloomfilter"
			require.Positive(t, p.FilterSize)
		}
		for k, v := range map[string]string{
			"# rocksdb.block.based.table.index.type": "0x02000000",
			"# index partitions":                     fmt.Sprint(p.IndexPartitions),
			"top-level index size":                   fmt.Sprint(p.TopLevelIndexSize),
			"filter block size":                      fmt.Sprint(p.FilterSize),
			"# entries for filter":                   fmt.Sprint(p.NumFilterEntries),
			"filter policy name":                     policy,
			fmt.Sprintf("index block size (user-key? %d, delta-value? %d)", userKey, delta): fmt.Sprint(p.IndexSize),
		} {
			require.Equal(t, v, got[k], "table %d property %q in\n%s", i, k, out)
		}
	}
}

// With CacheIndexAndFilterBlocks, a partitioned table pins only its two
// top-level indexes; partitions are charged to the cache as probes and
// seeks read them, and a cached probe does not allocate.
func TestPartitioned_CachedNotPinned(t *testing.T) {
	o := pinnedOpts
	o.TwoLevelIndex, o.PartitionFilters = true, true
	f, _ := buildTable(t, pinnedModel(20000), nil, o)
	pinned := openMem(t, f, cache.New(1<<20))
	defer pinned.Close()
	c := cache.New(4 << 20)
	cached := openCachedFilter(t, f, c)
	defer cached.Close()

	pn, _ := pinned.PinnedBytes()
	cn, _ := cached.PinnedBytes()
	tops := len(cached.index) + len(cached.partFilter.top)
	require.Greater(t, pn, 25000, "a 10-bit filter of 20000 keys and its index")
	require.LessOrEqual(t, cn, tops+2*pinnedAlign, "cached reader pins %d, its top-level indexes are %d", cn, tops)
	require.Less(t, cn*20, pn)
	require.Zero(t, c.Stats().Used, "Open reads no partition into the cache")

	key := []byte("key00004242")
	h := bloom.HashKey(key)
	may, err := cached.KeyMayMatchHashErr(key, h)
	require.NoError(t, err)
	require.True(t, may)
	st := c.Stats()
	require.Equal(t, uint64(1), st.Inserts, "one filter partition")
	require.Less(t, st.Used, int64(8<<10), "a partition of about 4 KiB")
	requireCachedProbeAllocsNothing(t, cached, key, h)

	v, _, _, found, err := cached.Get(key, base.MaxSeqNum)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "v", string(v))
	require.Equal(t, uint64(3), c.Stats().Inserts, "an index partition and a data block")
}

// A corrupt filter partition or index partition does not fail Open with
// CacheIndexAndFilterBlocks; the probe or read that needs it fails with
// ErrCorruption naming the file and the block's offset, and the bool
// probes answer "may contain". Without the option, Open fails.
func TestPartitioned_CorruptPartitionFailsTheRead(t *testing.T) {
	o := pinnedOpts
	o.TwoLevelIndex, o.PartitionFilters = true, true
	model := pinnedModel(20000)
	f, _ := buildTable(t, model, nil, o)
	probe := openMem(t, f, nil)
	fk, fh := partitionEntries(t, probe, probe.partFilter.top)
	_, ih := partitionEntries(t, probe, probe.index)
	require.NoError(t, probe.Close())
	require.Greater(t, len(fh), 3)
	require.Greater(t, len(ih), 3)

	damage := func(h blockHandle) *memFile {
		bad := &memFile{b: bytes.Clone(f.b)}
		bad.b[h.offset+h.size/2] ^= 0x5a
		_, err := Open(bad, int64(len(bad.b)), ReaderOptions{FileName: "part.sst", Cache: cache.New(1 << 20)})
		require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
		return bad
	}
	checkErr := func(err error, h blockHandle) {
		t.Helper()
		require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
		require.Contains(t, err.Error(), "part.sst")
		require.Contains(t, err.Error(), fmt.Sprintf("offset %d", h.offset))
	}

	// The second filter partition: keys up to its key probe it.
	bh := fh[1]
	bad := damage(bh)
	r := openCachedFilter(t, bad, cache.New(1<<20))
	r.opts.FileName = "part.sst"
	key := []byte(fk[1])
	_, err := r.KeyMayMatchErr(key)
	checkErr(err, bh)
	_, err = r.KeyMayMatchHashErr(key, bloom.HashKey(key))
	checkErr(err, bh)
	require.True(t, r.KeyMayMatch(key))
	// Other partitions still answer.
	may, err := r.KeyMayMatchErr([]byte(fk[0]))
	require.NoError(t, err)
	require.True(t, may)
	// VerifyChecksums reads every partition from the file.
	checkErr(r.VerifyChecksums(), bh)
	require.NoError(t, r.Close())

	// The third index partition: a Get and a seek into it fail; a scan
	// stops with the error.
	bh = ih[2]
	bad = damage(bh)
	r, err = Open(bad, int64(len(bad.b)), ReaderOptions{FileName: "part.sst", Cache: cache.New(1 << 20), CacheIndexAndFilterBlocks: true})
	require.NoError(t, err)
	defer r.Close()
	var it blockIter
	require.True(t, r.initIndexIter(&it, r.index, false, false))
	require.True(t, it.first() && it.next() && it.next())
	inPart := append([]byte(nil), it.key...) // the third partition's last key
	_, _, _, _, err = r.Get(inPart, base.MaxSeqNum)
	checkErr(err, bh)
	checkErr(r.VerifyChecksums(), bh)
	ti := r.NewIter()
	require.False(t, ti.SeekGE(inPart))
	checkErr(ti.Error(), bh)
	n := 0
	for ok := ti.First(); ok; ok = ti.Next() {
		n++
	}
	checkErr(ti.Error(), bh)
	require.Less(t, n, len(model))
	checkErr(ti.Close(), bh) // Close reports the iterator's error
	v, _, _, found, err := r.Get(model[0].key.UserKey, base.MaxSeqNum)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "v", string(v))
}

// Concurrent probes, Gets and seeks over one reader whose partitions go
// through a tiny cache (run with -race): answers match the pinned reader's.
func TestPartitioned_CachedConcurrent(t *testing.T) {
	files, _, _ := partTables(t)
	f := files[1]
	pinned := openMem(t, f, nil)
	defer pinned.Close()
	cached := openCachedFilter(t, f, cache.New(8<<10))
	defer cached.Close()
	probeConcurrently(t, func() (func([]byte) error, func()) {
		it := cached.NewIter()
		return func(key []byte) error {
			want, _ := pinned.KeyMayMatchErr(key)
			got, err := cached.KeyMayMatchErr(key)
			wp, _ := pinned.PrefixMayMatchErr(key[:5])
			gp, perr := cached.PrefixMayMatchErr(key[:5])
			if err != nil || perr != nil || got != want || gp != wp {
				return fmt.Errorf("key %q: pinned %v/%v, cached %v/%v (%v, %v)", key, want, wp, got, gp, err, perr)
			}
			wv, _, _, wf, _ := pinned.Get(key, base.MaxSeqNum)
			gv, _, _, gf, err := cached.Get(key, base.MaxSeqNum)
			if err != nil || gf != wf || string(gv) != string(wv) {
				return fmt.Errorf("Get %q: pinned %v, cached %v (%v)", key, wf, gf, err)
			}
			if ok := it.SeekGE(key); ok && bytes.Compare(it.Key().UserKey, key) < 0 || it.Error() != nil {
				return fmt.Errorf("SeekGE %q: %v", key, it.Error())
			}
			return nil
		}, func() { it.Close() }
	})
}

// Under CacheIndexAndFilterBlocksWithHighPriority the filter and index
// partitions a read needs go into the cache's high-priority pool and data
// blocks do not; data-block churn then leaves the partitions cached, where
// without it they have to be read again.
func TestPartitioned_HighPriorityPartitions(t *testing.T) {
	o := pinnedOpts
	o.TwoLevelIndex, o.PartitionFilters = true, true
	f, _ := buildTable(t, pinnedModel(20000), nil, o)
	for _, high := range []bool{false, true} {
		c := cache.NewWithHighPriPool(64<<10, 0.5)
		r, err := Open(f, int64(len(f.b)), ReaderOptions{FileName: "part.sst", Cache: c,
			CacheIndexAndFilterBlocks: true, CacheIndexAndFilterBlocksWithHighPriority: high})
		require.NoError(t, err)
		key := []byte("key00004242")
		read := func() {
			may, err := r.KeyMayMatchHashErr(key, bloom.HashKey(key))
			require.NoError(t, err)
			require.True(t, may)
			_, _, _, found, err := r.Get(key, base.MaxSeqNum)
			require.NoError(t, err)
			require.True(t, found)
		}
		read()
		st := c.Stats()
		require.Equal(t, uint64(3), st.Inserts, "a filter partition, an index partition and a data block")
		if high {
			require.Equal(t, uint64(2), st.HighPriInserts, "the two partitions")
			require.Greater(t, st.HighPriUsed, int64(0))
			require.Less(t, st.HighPriUsed, st.Used, "the data block is not in the pool")
		} else {
			require.Zero(t, st.HighPriInserts)
			require.Zero(t, st.HighPriUsed)
		}
		// Other tables' data blocks, several times the cache's capacity.
		for off := uint64(0); off < 100; off++ {
			c.Set(1<<40, off, make([]byte, 4096))
		}
		read()
		st2 := c.Stats()
		if high {
			require.Equal(t, st.Inserts+1+100, st2.Inserts, "only the data block is read again")
			require.Equal(t, st.HighPriInserts, st2.HighPriInserts)
		} else {
			require.Equal(t, st.Inserts+3+100, st2.Inserts, "both partitions and the data block are read again")
		}
		require.NoError(t, r.Close())
	}
}
