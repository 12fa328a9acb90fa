package table

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/checksum"
	"github.com/stretchr/testify/require"
)

// bigZeroModel is three entries whose middle value is size zero bytes: a
// data block that compresses thousands of times under zstd.
func bigZeroModel(size int) []kv {
	return []kv{
		{base.MakeInternalKey([]byte("a"), 3, base.KindSet), []byte("first")},
		{base.MakeInternalKey([]byte("big"), 2, base.KindSet), make([]byte, size)},
		{base.MakeInternalKey([]byte("c"), 1, base.KindSet), []byte("last")},
	}
}

// TestTable_HighlyCompressibleBlocks writes a 16 MiB value of zeros (one
// data block) with every writable compression and reads it back: every
// block the writer writes, the reader reads.
func TestTable_HighlyCompressibleBlocks(t *testing.T) {
	model := bigZeroModel(16 << 20)
	for _, comp := range []Compression{SnappyCompression, ZSTDCompression, LZ4Compression, ZlibCompression} {
		for _, fv := range []uint32{2, 5} {
			t.Run(fmt.Sprintf("%s/fv%d", comp, fv), func(t *testing.T) {
				f, _ := buildTable(t, model, nil, WriterOptions{BlockSize: 4096, BlockRestartInterval: 16,
					FormatVersion: fv, Checksum: checksum.CRC32C, Compression: comp})
				require.Less(t, len(f.b), 8<<20, "the big block is stored compressed")
				r := openMem(t, f, nil)
				defer func() { require.NoError(t, r.Close()) }()
				v, _, _, found, err := r.Get([]byte("big"), base.MaxSeqNum)
				require.NoError(t, err)
				require.True(t, found)
				require.Equal(t, 16<<20, len(v))
				require.Equal(t, -1, strings.IndexFunc(string(v), func(c rune) bool { return c != 0 }))
				it := r.NewIter()
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					require.Equal(t, model[n].key, it.Key())
					require.Equal(t, len(model[n].val), len(it.Value()))
					n++
				}
				require.NoError(t, it.Error())
				require.NoError(t, it.Close())
				require.Equal(t, len(model), n)
				require.NoError(t, r.VerifyChecksums())
			})
		}
	}
}

// TestCompress_WriterOnlyWritesWhatReaderReads checks the writer's side of
// the size rules: a block the reader would refuse is stored uncompressed.
func TestCompress_WriterOnlyWritesWhatReaderReads(t *testing.T) {
	raw := make([]byte, 1<<20)
	for _, c := range []Compression{SnappyCompression, ZSTDCompression, LZ4Compression, ZlibCompression} {
		out := compressBlock(nil, raw, c, 2)
		require.NotNil(t, out, "%s", c)
		got, msg := decompressBlock(c, out, 2, nil, nil)
		require.Empty(t, msg, "%s", c)
		require.Equal(t, len(raw), len(got), "%s", c)
	}
	// Blocks RocksDB would not compress (kCompressionSizeLimit) are not
	// compressed, so the reader never meets a size prefix above maxRawSize.
	require.False(t, rawSizeOK(ZSTDCompression, maxRawSize+1, 100))
	require.True(t, rawSizeOK(ZSTDCompression, maxRawSize, 100))
	require.False(t, rawSizeOK(SnappyCompression, 100<<20, 1000))
	require.False(t, rawSizeOK(LZ4Compression, 300<<20, 1<<20))
}

// TestCompress_CorruptSizePrefix: a size prefix that lies gives an error,
// and a huge one is refused or costs no more than allocBound before the
// data shows it is wrong.
func TestCompress_CorruptSizePrefix(t *testing.T) {
	raw := make([]byte, 64<<10)
	for i := range raw {
		raw[i] = byte(i % 7)
	}
	for _, c := range []Compression{SnappyCompression, ZSTDCompression, LZ4Compression, ZlibCompression} {
		out := compressBlock(nil, raw, c, 2)
		require.NotNil(t, out, "%s", c)
		for _, n := range []uint64{uint64(len(raw) - 1), uint64(len(raw) + 1), 1 << 30, maxRawSize, 1<<32 - 1} {
			_, m := binary.Uvarint(out) // every codec here starts with a varint size at fv 2
			bad := append(binary.AppendUvarint(nil, n), out[m:]...)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got, msg := decompressBlock(c, bad, 2, nil, nil)
			runtime.ReadMemStats(&after)
			require.NotEmpty(t, msg, "%s prefix %d", c, n)
			require.Nil(t, got)
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "%s prefix %d allocated", c, n)
		}
	}
}

// TestInterop_SSTDumpHighlyCompressible: RocksDB's sst_dump reads the
// table with a 16 MiB block of zeros under snappy and zstd.
func TestInterop_SSTDumpHighlyCompressible(t *testing.T) {
	bin := sstDumpPath(t)
	dir := t.TempDir()
	model := bigZeroModel(16 << 20)
	for _, comp := range []Compression{SnappyCompression, ZSTDCompression} {
		f, _ := buildTable(t, model, nil, WriterOptions{BlockSize: 4096, BlockRestartInterval: 16,
			FormatVersion: 5, Checksum: checksum.CRC32C, Compression: comp})
		path := filepath.Join(dir, comp.String()+".sst")
		require.NoError(t, os.WriteFile(path, f.b, 0o644))
		out, errOut := runSSTDump(bin, "--file="+path, "--command=verify", "--verify_checksum")
		require.Empty(t, errOut, "verify stderr")
		require.Contains(t, out, "The file is ok\n")
		out, errOut = runSSTDump(bin, "--file="+path, "--command=scan", "--verify_checksum")
		require.Empty(t, errOut, "scan stderr")
		require.Contains(t, out, "'a' seq:3, type:1 => first\n")
		require.Contains(t, out, "'c' seq:1, type:1 => last\n")
		require.Contains(t, out, "'big' seq:2, type:1 => ")
	}
}

// TestReader_RocksDBHighlyCompressible reads tables RocksDB wrote with a
// 16 MiB value of '0' (testdata/rocksdb-compressible/README.md): its
// reader has no expansion limit, and neither may ours.
func TestReader_RocksDBHighlyCompressible(t *testing.T) {
	want := strings.Repeat("0", 16<<20)
	for _, c := range []string{"zstd", "lz4", "zlib"} {
		r := openFixture(t, filepath.Join("testdata", "rocksdb-compressible", c+".sst"))
		v, _, _, found, err := r.Get([]byte("big"), base.MaxSeqNum)
		require.NoError(t, err, c)
		require.True(t, found, c)
		require.True(t, string(v) == want, "%s: value of %d bytes", c, len(v))
		it := r.NewIter()
		var keys []string
		for ok := it.First(); ok; ok = it.Next() {
			keys = append(keys, string(it.Key().UserKey))
		}
		require.NoError(t, it.Error(), c)
		require.NoError(t, it.Close())
		require.Equal(t, []string{"big", "k2"}, keys, c)
		require.NoError(t, r.VerifyChecksums(), c)
		require.NoError(t, r.Close())
	}
}
