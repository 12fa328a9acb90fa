package table

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"sort"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stratadb/strata/internal/checksum"
	"github.com/stratadb/strata/prefix"
	"github.com/stretchr/testify/require"
)

// memFile is an in-memory table file.
type memFile struct{ b []byte }

func (m *memFile) Write(p []byte) (int, error) { m.b = append(m.b, p...); return len(p), nil }
func (m *memFile) Close() error                { return nil }
func (m *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(m.b)) {
		return 0, io.EOF
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

type kv struct {
	key base.InternalKey
	val []byte
}

// randomModel returns sorted entries: user keys over a small alphabet, each
// with 1..3 versions of random kinds.
func randomModel(rng *rand.Rand, n int) []kv {
	seen := map[string]bool{}
	var out []kv
	seq := base.SeqNum(1)
	for len(seen) < n {
		k := make([]byte, 1+rng.Intn(6))
		for i := range k {
			k[i] = "abcdx\xff"[rng.Intn(6)]
		}
		if seen[string(k)] {
			continue
		}
		seen[string(k)] = true
		for v := 0; v < 1+rng.Intn(3); v++ {
			kind := []base.Kind{base.KindSet, base.KindSet, base.KindDelete, base.KindMerge, base.KindSingleDelete}[rng.Intn(5)]
			var val []byte
			if kind == base.KindSet || kind == base.KindMerge {
				val = bytes.Repeat([]byte{byte(rng.Intn(256))}, rng.Intn(40))
			}
			out = append(out, kv{base.MakeInternalKey(k, seq, kind), val})
			seq++
		}
	}
	sort.Slice(out, func(i, j int) bool { return base.InternalCompare(out[i].key, out[j].key) < 0 })
	return out
}

func buildTable(t testing.TB, model []kv, tombs []base.Tombstone, opts WriterOptions) (*memFile, *WriterMetadata) {
	f := &memFile{}
	w := NewWriter(f, opts)
	for _, e := range model {
		require.NoError(t, w.Add(e.key, e.val))
	}
	for _, ts := range tombs {
		require.NoError(t, w.AddTombstone(ts))
	}
	m, err := w.Finish()
	require.NoError(t, err)
	require.Equal(t, uint64(len(f.b)), m.Size)
	return f, m
}

func openMem(t testing.TB, f *memFile, c *cache.Cache) *Reader {
	r, err := Open(f, int64(len(f.b)), ReaderOptions{FileName: "mem.sst", Cache: c})
	require.NoError(t, err)
	return r
}

// modelGet is the newest entry of ukey with seq < snap.
func modelGet(model []kv, ukey []byte, snap base.SeqNum) (kv, bool) {
	for _, e := range model {
		if bytes.Equal(e.key.UserKey, ukey) && e.key.SeqNum() < snap {
			return e, true
		}
	}
	return kv{}, false
}

func checkTable(t *testing.T, rng *rand.Rand, r *Reader, model []kv, pe prefix.Extractor) {
	it := r.NewIter()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		require.Less(t, i, len(model))
		require.Equal(t, model[i].key, it.Key())
		require.Equal(t, string(model[i].val), string(it.Value()))
		i++
	}
	require.NoError(t, it.Error())
	require.Equal(t, len(model), i)
	for ok := it.Last(); ok; ok = it.Prev() {
		i--
		require.Equal(t, model[i].key, it.Key())
	}
	require.Equal(t, 0, i)
	for q := 0; q < 50; q++ {
		probe := []byte{"abcdx\xff"[rng.Intn(6)], "abcdx\xff"[rng.Intn(6)]}
		if len(model) > 0 && rng.Intn(2) == 0 {
			probe = model[rng.Intn(len(model))].key.UserKey
		}
		ge := sort.Search(len(model), func(j int) bool { return bytes.Compare(model[j].key.UserKey, probe) >= 0 })
		ok := it.SeekGE(probe)
		require.Equal(t, ge < len(model), ok, "SeekGE %q", probe)
		if ok {
			require.Equal(t, model[ge].key, it.Key())
			if ge+1 < len(model) {
				require.True(t, it.Next())
				require.Equal(t, model[ge+1].key, it.Key())
			}
		}
		ok = it.SeekLT(probe)
		require.Equal(t, ge > 0, ok, "SeekLT %q", probe)
		if ok {
			require.Equal(t, model[ge-1].key, it.Key())
			if ge-2 >= 0 {
				require.True(t, it.Prev())
				require.Equal(t, model[ge-2].key, it.Key())
			}
		}
		snap := base.SeqNum(rng.Intn(len(model) + 3))
		want, wok := modelGet(model, probe, snap)
		v, kind, seq, found, err := r.Get(probe, snap)
		require.NoError(t, err)
		require.Equal(t, wok, found, "Get %q@%d", probe, snap)
		if found {
			require.Equal(t, want.key.Kind(), kind)
			require.Equal(t, want.key.SeqNum(), seq)
			require.Equal(t, string(want.val), string(v))
		}
	}
	require.NoError(t, it.Close())
	for _, e := range model {
		require.True(t, r.KeyMayMatch(e.key.UserKey))
		if pe != nil && pe.InDomain(e.key.UserKey) {
			require.True(t, r.PrefixMayMatch(pe.Transform(e.key.UserKey)))
		}
	}
}

// TestTable_RoundTrip writes random tables under every combination of
// compression, checksum, format version, filter, prefix extractor and
// restart interval, and compares reads with a sorted model.
func TestTable_RoundTrip(t *testing.T) {
	seed := int64(1)
	rng := rand.New(rand.NewSource(seed))
	comps := []Compression{NoCompression, SnappyCompression, ZSTDCompression, LZ4Compression, ZlibCompression}
	sums := []checksum.Type{checksum.None, checksum.CRC32C, checksum.XXHash, checksum.XXHash64, checksum.XXH3}
	c := cache.New(1 << 20)
	for _, comp := range comps {
		for _, sum := range sums {
			for fv := uint32(2); fv <= 5; fv++ {
				for _, bits := range []int{0, 10} {
					for _, pe := range []prefix.Extractor{nil, prefix.Fixed(2)} {
						for _, ri := range []int{1, 16} {
							name := fmt.Sprintf("%s/%s/fv%d/bits%d/pe%v/ri%d", comp, sum, fv, bits, pe != nil, ri)
							opts := WriterOptions{BlockSize: 128 + rng.Intn(512), BlockRestartInterval: ri, FormatVersion: fv,
								Checksum: sum, NoChecksum: sum == checksum.None, Compression: comp, BloomBitsPerKey: bits,
								WholeKeyFiltering: true, PrefixExtractor: pe}
							model := randomModel(rng, rng.Intn(120))
							f, _ := buildTable(t, model, nil, opts)
							var cc *cache.Cache
							if rng.Intn(2) == 0 {
								cc = c
							}
							r := openMem(t, f, cc)
							require.Equal(t, fv, r.Properties().FormatVersion, name)
							require.Equal(t, uint64(len(model)), r.Properties().NumEntries)
							require.Equal(t, bits > 0 && len(model) > 0, r.HasFilter(), name)
							checkTable(t, rng, r, model, pe)
							require.NoError(t, r.VerifyChecksums())
							require.NoError(t, r.Close())
						}
					}
				}
			}
		}
	}
}

func TestWriter_TombstonesAndBounds(t *testing.T) {
	model := []kv{{base.MakeInternalKey([]byte("m"), 5, base.KindSet), []byte("v")}}
	tombs := []base.Tombstone{{Start: []byte("x"), End: []byte("z"), Seq: 7}, {Start: []byte("a"), End: []byte("c"), Seq: 3}}
	f, m := buildTable(t, model, tombs, WriterOptions{})
	require.Equal(t, base.MakeInternalKey([]byte("a"), 3, base.KindRangeDelete), m.Smallest)
	require.Equal(t, base.MakeInternalKey([]byte("z"), base.MaxSeqNum, base.KindRangeDelete), m.Largest)
	require.Equal(t, base.SeqNum(3), m.SmallestSeq)
	require.Equal(t, base.SeqNum(7), m.LargestSeq)
	require.Equal(t, uint64(2), m.NumRangeDeletions)
	require.True(t, m.HasPointKeys)
	r := openMem(t, f, nil)
	defer r.Close()
	require.Equal(t, []base.Tombstone{tombs[1], tombs[0]}, r.Tombstones())
	require.Equal(t, uint64(3), r.Properties().NumEntries)

	// Tombstone-only table.
	f, m = buildTable(t, nil, tombs[:1], WriterOptions{})
	require.False(t, m.HasPointKeys)
	require.Equal(t, base.MakeInternalKey([]byte("x"), 7, base.KindRangeDelete), m.Smallest)
	r2 := openMem(t, f, nil)
	defer r2.Close()
	require.False(t, r2.NewIter().First())
}

func TestWriter_OutOfOrder(t *testing.T) {
	w := NewWriter(&memFile{}, WriterOptions{})
	require.NoError(t, w.Add(base.MakeInternalKey([]byte("b"), 1, base.KindSet), nil))
	require.Error(t, w.Add(base.MakeInternalKey([]byte("a"), 2, base.KindSet), nil))
	require.Error(t, w.Add(base.MakeInternalKey([]byte("b"), 1, base.KindSet), nil))
	require.NoError(t, w.Add(base.MakeInternalKey([]byte("b"), 0, base.KindSet), nil))
}

// TestWriter_StraddlingUserKey forces a user key across a block boundary:
// the index must fall back to internal keys.
func TestWriter_StraddlingUserKey(t *testing.T) {
	var model []kv
	for s := 200; s > 0; s-- {
		model = append(model, kv{base.MakeInternalKey([]byte("k"), base.SeqNum(s), base.KindSet), bytes.Repeat([]byte("v"), 50)})
	}
	f, _ := buildTable(t, model, nil, WriterOptions{BlockSize: 256})
	r := openMem(t, f, nil)
	defer r.Close()
	require.False(t, r.Properties().IndexKeyIsUserKey)
	require.Greater(t, r.Properties().NumDataBlocks, uint64(10))
	for s := base.SeqNum(1); s <= 201; s++ {
		_, _, seq, found, err := r.Get([]byte("k"), s)
		require.NoError(t, err)
		require.Equal(t, s > 1, found)
		if found {
			require.Equal(t, s-1, seq)
		}
	}
}

// TestTable_Corruption flips every byte of a small table in turn and
// truncates it at every length: each read gives the right answer or an
// ErrCorruption-class error, never a wrong value or a panic.
func TestTable_Corruption(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, sum := range []checksum.Type{checksum.CRC32C, checksum.XXH3} {
		model := randomModel(rng, 12)
		good, _ := buildTable(t, model, []base.Tombstone{{Start: []byte("b"), End: []byte("c"), Seq: 1}},
			WriterOptions{BlockSize: 64, Checksum: sum, BloomBitsPerKey: 10, WholeKeyFiltering: true, Compression: SnappyCompression})
		require.Less(t, len(good.b), 2000)
		check := func(b []byte) {
			f := &memFile{b: b}
			r, err := Open(f, int64(len(b)), ReaderOptions{FileName: "c.sst"})
			if err != nil {
				require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
				return
			}
			it := r.NewIter()
			i := 0
			for ok := it.First(); ok; ok = it.Next() {
				require.Equal(t, model[i].key, it.Key())
				require.Equal(t, string(model[i].val), string(it.Value()))
				i++
			}
			if err := it.Error(); err != nil {
				require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
			}
			for _, e := range model {
				want, _ := modelGet(model, e.key.UserKey, base.MaxSeqNum)
				v, _, seq, found, err := r.Get(e.key.UserKey, base.MaxSeqNum)
				if err != nil {
					require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
					continue
				}
				require.True(t, found)
				require.Equal(t, want.key.SeqNum(), seq)
				require.Equal(t, string(want.val), string(v))
			}
			require.NoError(t, r.Close())
		}
		for pos := range good.b {
			b := bytes.Clone(good.b)
			b[pos] ^= 0xff
			check(b)
		}
		for n := 0; n < len(good.b); n++ {
			check(bytes.Clone(good.b[:n]))
		}
	}
}
