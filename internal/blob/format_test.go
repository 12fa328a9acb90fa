package blob

import (
	"errors"
	"io"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

func TestHeaderFooterRoundTrip(t *testing.T) {
	h := Header{ColumnFamily: 3, Compression: 1}
	b := AppendHeader(nil, h)
	require.Len(t, b, HeaderSize)
	got, err := DecodeHeader("x.blob", b)
	require.NoError(t, err)
	require.Equal(t, h, got)
	f := AppendFooter(nil, Footer{BlobCount: 7})
	require.Len(t, f, FooterSize)
	gf, err := DecodeFooter("x.blob", 100, f)
	require.NoError(t, err)
	require.Equal(t, uint64(7), gf.BlobCount)
	for i := range f {
		bad := append([]byte(nil), f...)
		bad[i] ^= 1
		_, err := DecodeFooter("x.blob", 100, bad)
		require.True(t, errors.Is(err, base.ErrCorruption), "byte %d", i)
		require.Contains(t, err.Error(), "x.blob: offset 100")
	}
	bad := append([]byte(nil), b...)
	bad[4] = 2
	_, err = DecodeHeader("x.blob", bad)
	require.True(t, errors.Is(err, base.ErrCorruption))
}

func TestRecordCheck(t *testing.T) {
	rec := AppendRecord(nil, []byte("key"), []byte("value"), 0)
	require.Len(t, rec, RecordHeaderSize+8)
	v, err := CheckRecord("f", 1000, rec, []byte("key"), 5)
	require.NoError(t, err)
	require.Equal(t, "value", string(v))
	for i := range rec {
		bad := append([]byte(nil), rec...)
		bad[i] ^= 0x20
		_, err := CheckRecord("f", 1000, bad, []byte("key"), 5)
		require.True(t, errors.Is(err, base.ErrCorruption), "byte %d", i)
		require.Contains(t, err.Error(), "blob file f: offset 965")
	}
	_, err = CheckRecord("f", 1000, rec, []byte("kez"), 5)
	require.True(t, errors.Is(err, base.ErrCorruption))
}

func TestIndexRoundTrip(t *testing.T) {
	b := AppendIndex(nil, 12, 345, 678, 1)
	x, err := DecodeIndex([]byte("k"), b)
	require.NoError(t, err)
	require.Equal(t, Index{Type: IndexBlob, FileNum: 12, Offset: 345, Size: 678, Compression: 1}, x)
	// The TTL forms RocksDB's stacked BlobDB writes.
	ttl := append([]byte{IndexBlobTTL, 9}, b[1:]...)
	x, err = DecodeIndex([]byte("k"), ttl)
	require.NoError(t, err)
	require.Equal(t, uint64(9), x.Expiration)
	require.Equal(t, uint64(12), x.FileNum)
	in, err := DecodeIndex([]byte("k"), []byte{IndexInlinedTTL, 5, 'v', 'a', 'l'})
	require.NoError(t, err)
	require.Equal(t, "val", string(in.Inline))
	for _, bad := range [][]byte{nil, {7}, b[:3], append(append([]byte(nil), b...), 0), {IndexBlob, 1, 0x80}} {
		_, err := DecodeIndex([]byte("k"), bad)
		require.True(t, errors.Is(err, base.ErrCorruption), "%x", bad)
	}
}

// TestCheckFile walks a whole file; every flipped byte, a truncation and a
// footer count that disagrees are corruptions naming the file (never a
// panic nor a wrong summary).
func TestCheckFile(t *testing.T) {
	f := AppendHeader(nil, Header{ColumnFamily: 1})
	var bytes uint64
	for _, kv := range [][2]string{{"a", "1"}, {"bb", "22222"}, {"", "x"}, {"ccc", ""}} {
		n := len(f)
		f = AppendRecord(f, []byte(kv[0]), []byte(kv[1]), 0)
		bytes += uint64(len(f) - n)
	}
	f = AppendFooter(f, Footer{BlobCount: 4})
	s, err := CheckFile("f.blob", bytesReader(f), int64(len(f)))
	require.NoError(t, err)
	require.Equal(t, uint64(4), s.Count)
	require.Equal(t, bytes, s.Bytes)
	require.Equal(t, uint32(1), s.Header.ColumnFamily)
	for i := range f {
		bad := append([]byte(nil), f...)
		bad[i] ^= 0x20
		if i >= 8 && i < HeaderSize { // column family, flags, compression, expiration range: no checksum covers them
			continue
		}
		_, err := CheckFile("f.blob", bytesReader(bad), int64(len(bad)))
		require.True(t, errors.Is(err, base.ErrCorruption), "byte %d: %v", i, err)
		require.Contains(t, err.Error(), "blob file f.blob: offset ")
	}
	for _, n := range []int{len(f) - 1, len(f) - FooterSize - 1, HeaderSize + FooterSize, 10} {
		_, err := CheckFile("f.blob", bytesReader(f[:n]), int64(n))
		require.True(t, errors.Is(err, base.ErrCorruption), "truncated to %d: %v", n, err)
	}
	g := append(append([]byte(nil), f[:len(f)-FooterSize]...), AppendFooter(nil, Footer{BlobCount: 5})...)
	_, err = CheckFile("f.blob", bytesReader(g), int64(len(g)))
	require.True(t, errors.Is(err, base.ErrCorruption))
	require.Contains(t, err.Error(), "footer counts 5 blobs, the file holds 4")
}

type bytesReader []byte

func (b bytesReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
