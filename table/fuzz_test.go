package table

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/checksum"
	"github.com/stretchr/testify/require"
)

// Fuzz targets of the table decoders. `go test` replays the seeds below and
// the inputs under testdata/fuzz/<Target>; run one with, for example,
//
//	go test ./table -run '^$' -fuzz '^FuzzBlock$' -fuzztime 60s -fuzzminimizetime=1s -parallel=1
//
// (-fuzzminimizetime: see docs/fuzzing.md.)

func seedModel() []kv {
	return []kv{
		{base.MakeInternalKey([]byte("apple"), 3, base.KindSet), []byte("red")},
		{base.MakeInternalKey([]byte("banana"), 2, base.KindDelete), nil},
		{base.MakeInternalKey([]byte("cherry"), 1, base.KindMerge), []byte("x")},
	}
}

func seedTable(tb testing.TB) []byte {
	f, _ := buildTable(tb, seedModel(), []base.Tombstone{{Start: []byte("d"), End: []byte("e"), Seq: 4}},
		WriterOptions{BlockSize: 32, BloomBitsPerKey: 10, WholeKeyFiltering: true, Compression: SnappyCompression})
	return f.b
}

// seedTablePlain is a table without checksums or compression: mutations of
// its blocks reach the block decoders instead of failing the checksum.
func seedTablePlain(tb testing.TB, fv uint32) []byte {
	f, _ := buildTable(tb, seedModel(), []base.Tombstone{{Start: []byte("d"), End: []byte("e"), Seq: 4}},
		WriterOptions{BlockSize: 32, BlockRestartInterval: 2, BloomBitsPerKey: 10, WholeKeyFiltering: true,
			NoChecksum: true, FormatVersion: fv})
	return f.b
}

// seedBlocks returns the uncompressed blocks of a plain table: data blocks,
// index, metaindex, properties, range deletions.
func seedBlocks(tb testing.TB, b []byte) (data, index [][]byte, props []byte) {
	r, err := Open(&memFile{b: b}, int64(len(b)), ReaderOptions{FileName: "seed.sst"})
	require.NoError(tb, err)
	var it blockIter
	require.True(tb, r.initIndexIter(&it, r.index, r.firstKeyIndex, false))
	for ok := it.first(); ok; ok = it.next() {
		blk, err := r.readRaw(it.handle, nil, true)
		require.NoError(tb, err)
		data = append(data, bytes.Clone(blk))
	}
	index = append(index, bytes.Clone(r.index))
	h := r.metaHandles[metaProperties]
	props, err = r.readRaw(h, nil, true)
	require.NoError(tb, err)
	return data, index, bytes.Clone(props)
}

// fixtureSeeds are small tables RocksDB 7.8.3 wrote (testdata/rocksdb).
var fixtureSeeds = []string{
	"ldb-tiny-after-compact-000036.sst",
	"ldb-cf-000010.sst",
	"ldb-tiny-extern-extern.sst",
	"fv5-xxh3-none-merge-hashsearch-000009.sst",
}

func readFixture(tb testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", "rocksdb", name))
	require.NoError(tb, err)
	return b
}

// withoutChecksums returns a copy of a table whose footer says its blocks
// carry no checksum (checksum.None), so that mutations of its blocks reach
// the decoders. Legacy (fv 0) footers have no checksum type to change.
func withoutChecksums(b []byte) []byte {
	b = bytes.Clone(b)
	if len(b) >= footerLen && binary.LittleEndian.Uint64(b[len(b)-8:]) == magicBlockBased {
		b[len(b)-footerLen] = byte(checksum.None)
	}
	return b
}

type blockEntry struct {
	key, val []byte
	handle   blockHandle
}

// walkBlock iterates it forward and backward. The two walks must list the
// same entries in opposite orders unless one of them reports corruption.
func walkBlock(t *testing.T, it *blockIter) (fwd []blockEntry, ok bool) {
	const limit = 5000
	for valid := it.first(); valid && len(fwd) < limit; valid = it.next() {
		fwd = append(fwd, blockEntry{bytes.Clone(it.key), bytes.Clone(it.value()), it.handle})
	}
	if it.corrupt || len(fwd) == limit {
		return nil, false
	}
	var bwd []blockEntry
	for valid := it.last(); valid && len(bwd) < limit; valid = it.prev() {
		bwd = append(bwd, blockEntry{bytes.Clone(it.key), bytes.Clone(it.value()), it.handle})
	}
	if it.corrupt {
		return nil, false
	}
	require.Equal(t, len(fwd), len(bwd), "forward and backward walks differ in length")
	for j := range fwd {
		b := bwd[len(bwd)-1-j]
		require.Equal(t, fwd[j].key, b.key, "entry %d: key differs between walks", j)
		require.Equal(t, fwd[j].val, b.val, "entry %d: value differs between walks", j)
		require.Equal(t, fwd[j].handle, b.handle, "entry %d: handle differs between walks", j)
	}
	return fwd, true
}

// checkSeeks checks, for a block whose keys are strictly increasing under
// cmp, that seekGE of every key lands on it and seekLT on its predecessor.
func checkSeeks(t *testing.T, it *blockIter, ents []blockEntry, cmp func(a, b []byte) int) {
	for j := 1; j < len(ents); j++ {
		if cmp(ents[j-1].key, ents[j].key) >= 0 {
			return // unsorted: a corrupt block the checksum guards against
		}
	}
	for j, e := range ents {
		if it.seekGE(e.key) {
			require.Equal(t, e.key, it.key, "seekGE(entry %d)", j)
		} else {
			require.True(t, it.corrupt, "seekGE(entry %d) found nothing", j)
			return
		}
		if it.seekLT(e.key) {
			require.Positive(t, j, "seekLT(first key) found an entry")
			require.Equal(t, ents[j-1].key, it.key, "seekLT(entry %d)", j)
		} else if it.corrupt {
			return
		} else {
			require.Zero(t, j, "seekLT(entry %d) found nothing", j)
		}
	}
}

// FuzzBlock decodes arbitrary bytes as a data block (internal keys, values
// with value_len). Either init or a walk reports corruption, or forward and
// backward walks agree, and seeks in a sorted block find every key.
func FuzzBlock(f *testing.F) {
	for _, fv := range []uint32{2, 5} {
		data, _, _ := seedBlocks(f, seedTablePlain(f, fv))
		for _, b := range data {
			f.Add(b)
		}
	}
	for _, name := range fixtureSeeds[:2] {
		data, _, _ := seedBlocks(f, readFixture(f, name))
		f.Add(data[0])
	}
	bw := blockWriter{restartInterval: 2}
	for _, k := range []string{"a", "ab", "abc", "b", "bcd"} {
		bw.add(base.MakeInternalKey([]byte(k), 1, base.KindSet).Append(nil), []byte("v"))
	}
	f.Add(bytes.Clone(bw.finish()))
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0})
	f.Add([]byte{0, 3, 0, 'a', 'b', 'c', 0, 0, 0, 0, 1, 0, 0, 128})
	f.Fuzz(func(t *testing.T, b []byte) {
		var it blockIter
		if !it.init(b, base.CompareEncoded) {
			require.True(t, it.corrupt)
			return
		}
		it.setMode(cmpInternal) // as Iter.loadData sets it
		if ents, ok := walkBlock(t, &it); ok {
			checkSeeks(t, &it, ents, base.CompareEncoded)
		}
	})
}

// FuzzIndexBlock decodes arbitrary bytes as an index block in each of its
// forms (mode bit 0: delta-encoded values without value_len, fv >= 4; bit 1:
// values carry the first key; bit 2: user-key separators). Every entry's
// value must hold a handle, and the walks must agree on keys and handles.
func FuzzIndexBlock(f *testing.F) {
	for _, fv := range []uint32{2, 3, 4, 5} {
		_, index, _ := seedBlocks(f, seedTablePlain(f, fv))
		mode := uint8(0)
		if fv >= 4 {
			mode |= 1
		}
		if fv >= 3 {
			mode |= 4
		}
		f.Add(index[0], mode)
	}
	if raw, err := os.ReadFile(filepath.Join("testdata", "rocksdb", "fv5-xxh3-none-merge-hashsearch-000009.sst")); err == nil {
		r, err := Open(&memFile{b: raw}, int64(len(raw)), ReaderOptions{FileName: "seed.sst"})
		require.NoError(f, err)
		mode := uint8(1)
		if r.userKeyIndex {
			mode |= 4
		}
		f.Add(bytes.Clone(r.index), mode)
	}
	f.Add([]byte{0, 3, 0, 'a', 'b', 'c', 0, 0, 0, 0, 1, 0, 0, 128}, uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, mode uint8) {
		var it blockIter
		it.isIndex, it.deltaValues, it.firstKey = true, mode&1 != 0, mode&2 != 0
		cmp := base.CompareEncoded
		if mode&4 != 0 {
			cmp = bytes.Compare
		}
		if !it.init(b, cmp) {
			require.True(t, it.corrupt)
			return
		}
		// As Reader.initIndexIter sets it.
		if mode&4 != 0 {
			it.setMode(cmpBytewise)
		} else {
			it.setMode(cmpInternal)
		}
		ents, ok := walkBlock(t, &it)
		if !ok {
			return
		}
		if !it.deltaValues {
			// Delta-encoded values start with a handle only at restarts.
			for j, e := range ents {
				h, n := decodeHandle(e.val)
				require.Positive(t, n, "entry %d: value without a handle", j)
				require.Equal(t, e.handle, h, "entry %d", j)
			}
		}
		checkSeeks(t, &it, ents, cmp)
	})
}

// FuzzProperties decodes arbitrary bytes as a properties block. A block that
// decodes re-encodes to a block that decodes to the same properties.
func FuzzProperties(f *testing.F) {
	for _, fv := range []uint32{2, 5} {
		_, _, props := seedBlocks(f, seedTablePlain(f, fv))
		f.Add(props)
	}
	if raw, err := os.ReadFile(filepath.Join("testdata", "rocksdb", "fv5-xxh3-none-merge-hashsearch-000009.sst")); err == nil {
		r, err := Open(&memFile{b: raw}, int64(len(raw)), ReaderOptions{FileName: "seed.sst"})
		require.NoError(f, err)
		f.Add(encodeProperties(append([]Property(nil), r.Properties().Raw...)))
	}
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, msg := decodeProperties(b)
		if msg != "" {
			require.Nil(t, p)
			return
		}
		_ = p.String()
		again, msg := decodeProperties(encodeProperties(append([]Property(nil), p.Raw...)))
		require.Empty(t, msg, "re-encoded properties do not decode")
		require.Equal(t, p, again)
	})
}

// FuzzFooter decodes arbitrary bytes as the end of a table. A footer that
// decodes names a known checksum type and format version, and (for
// format_version >= 1) re-encodes to a footer that decodes to itself.
func FuzzFooter(f *testing.F) {
	for _, fv := range []uint32{1, 5} {
		b := seedTablePlain(f, fv)
		f.Add(b[len(b)-footerLen:])
	}
	for _, name := range []string{"fv0-legacyfooter-none-000009.sst", "fv5-xxh3-none-merge-hashsearch-000009.sst"} {
		if raw, err := os.ReadFile(filepath.Join("testdata", "rocksdb", name)); err == nil {
			f.Add(raw[len(raw)-footerLen:])
		}
	}
	f.Add(make([]byte, footerLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		ft, msg := decodeFooter(b)
		if msg != "" {
			require.Equal(t, footer{}, ft)
			return
		}
		require.True(t, ft.checksum.Valid())
		require.LessOrEqual(t, ft.formatVersion, uint32(maxFormatVersion))
		if ft.formatVersion == 0 {
			require.Equal(t, legacyFooterLen, ft.len)
			require.Equal(t, checksum.CRC32C, ft.checksum)
			return
		}
		again, msg := decodeFooter(appendFooter(nil, ft))
		require.Empty(t, msg)
		require.Equal(t, ft, again)
	})
}

// FuzzTableOpen opens arbitrary bytes as a table and reads everything. Open
// and every read either fail with ErrCorruption or succeed, nothing panics,
// and forward and backward scans that both complete see the same entries.
//
// Under -fuzz pass -fuzzminimizetime=1s: the seeds are a few KiB and Go
// minimizes every new interesting input for up to 60s by default, during
// which the fuzzer reports no progress ("execs: 4 (0/sec)").
func FuzzTableOpen(f *testing.F) {
	good := seedTable(f)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(make([]byte, 53))
	for _, fv := range []uint32{1, 3, 5} {
		f.Add(seedTablePlain(f, fv))
	}
	f.Add(withoutChecksums(good))
	for _, name := range fixtureSeeds {
		raw := readFixture(f, name)
		f.Add(raw)
		f.Add(withoutChecksums(raw))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Open(&memFile{b: b}, int64(len(b)), ReaderOptions{FileName: "fuzz.sst"})
		if err != nil {
			require.True(t, errors.Is(err, base.ErrCorruption), "Open: %v", err)
			return
		}
		const limit = 10000
		it := r.NewIter()
		var fwd, bwd [][]byte
		for ok := it.First(); ok && len(fwd) < limit; ok = it.Next() {
			fwd = append(fwd, append(it.Key().Append(nil), it.Value()...))
		}
		fwdErr := it.Error()
		if fwdErr != nil {
			require.True(t, errors.Is(fwdErr, base.ErrCorruption), "Next: %v", fwdErr)
		}
		for ok := it.Last(); ok && len(bwd) < limit; ok = it.Prev() {
			bwd = append(bwd, append(it.Key().Append(nil), it.Value()...))
		}
		bwdErr := it.Error()
		if bwdErr != nil {
			require.True(t, errors.Is(bwdErr, base.ErrCorruption), "Prev: %v", bwdErr)
		}
		if fwdErr == nil && bwdErr == nil && len(fwd) < limit && len(bwd) < limit {
			// Both scans completed: they saw the same entries.
			require.Equal(t, len(fwd), len(bwd), "forward and backward scans differ in length")
			for j := range fwd {
				require.Equal(t, fwd[j], bwd[len(bwd)-1-j], "entry %d differs between scans", j)
			}
		}
		it.SeekGE([]byte("b"))
		it.SeekLT([]byte("c"))
		if err := it.Error(); err != nil {
			require.True(t, errors.Is(err, base.ErrCorruption), "Seek: %v", err)
		}
		if err := it.Close(); err != nil {
			// Close returns the error that stopped the iterator.
			require.True(t, errors.Is(err, base.ErrCorruption), "Close: %v", err)
		}
		if _, _, _, _, err := r.Get([]byte("apple"), base.MaxSeqNum); err != nil {
			require.True(t, errors.Is(err, base.ErrCorruption), "Get: %v", err)
		}
		r.KeyMayMatch([]byte("apple"))
		r.PrefixMayMatch([]byte("app"))
		if err := r.VerifyChecksums(); err != nil {
			require.True(t, errors.Is(err, base.ErrCorruption), "VerifyChecksums: %v", err)
		}
		_ = r.Properties().String()
		require.NoError(t, r.Close())
	})
}

// TestBlockIter_BadRestarts checks that init rejects restart arrays that do
// not start at 0 or do not increase: seekGE's binary search over them
// returned a later entry than the one sought. FuzzBlock found the first
// (testdata/fuzz/FuzzBlock/91705119850c9159).
func TestBlockIter_BadRestarts(t *testing.T) {
	bw := blockWriter{restartInterval: 1}
	for _, k := range []string{"a", "b", "c"} {
		bw.add(base.MakeInternalKey([]byte(k), 1, base.KindSet).Append(nil), []byte("v"))
	}
	good := bytes.Clone(bw.finish())
	restarts := len(good) - 4 - 3*4
	var it blockIter
	require.True(t, it.init(good, base.CompareEncoded))
	require.True(t, it.seekGE(base.MakeInternalKey([]byte("a"), 1, base.KindSet).Append(nil)))
	require.Equal(t, base.MakeInternalKey([]byte("a"), 1, base.KindSet).Append(nil), it.key)

	// Entries of 13 bytes start at 0, 13 and 26.
	for name, set := range map[string][3]uint32{
		"first not 0":  {13, 26, 27},
		"decreasing":   {0, 26, 13},
		"repeated":     {0, 13, 13},
		"past entries": {0, 13, uint32(restarts)},
		"as found":     {26, 0, 26},
	} {
		b := bytes.Clone(good)
		for r, o := range set {
			binary.LittleEndian.PutUint32(b[restarts+4*r:], o)
		}
		require.False(t, it.init(b, base.CompareEncoded), name)
		require.True(t, it.corrupt, name)
		require.False(t, it.seekGE([]byte("a")), name)
	}
}
