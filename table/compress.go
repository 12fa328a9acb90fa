package table

import (
	"bytes"
	"compress/bzip2"
	"compress/flate"
	"encoding/binary"
	"io"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression is a block compression type. The values are RocksDB's
// CompressionType codes and reach disk: do not change them.
type Compression uint8

const (
	NoCompression           Compression = 0x00
	SnappyCompression       Compression = 0x01
	ZlibCompression         Compression = 0x02
	BZip2Compression        Compression = 0x03
	LZ4Compression          Compression = 0x04
	LZ4HCCompression        Compression = 0x05
	XpressCompression       Compression = 0x06
	ZSTDCompression         Compression = 0x07
	ZSTDNotFinalCompression Compression = 0x40
)

// String returns the name RocksDB records in rocksdb.compression.
func (c Compression) String() string {
	switch c {
	case NoCompression:
		return "NoCompression"
	case SnappyCompression:
		return "Snappy"
	case ZlibCompression:
		return "Zlib"
	case BZip2Compression:
		return "BZip2"
	case LZ4Compression:
		return "LZ4"
	case LZ4HCCompression:
		return "LZ4HC"
	case XpressCompression:
		return "Xpress"
	case ZSTDCompression:
		return "ZSTD"
	case ZSTDNotFinalCompression:
		return "ZSTDNotFinal"
	}
	return "Unknown"
}

// writable reports whether the writer can produce c.
func (c Compression) writable() bool {
	switch c {
	case NoCompression, SnappyCompression, ZlibCompression, LZ4Compression, ZSTDCompression:
		return true
	}
	return false
}

// Decompressed-size limits: a size prefix is trusted only up to
// maxExpansion times the compressed size and maxBlockSize overall.
const (
	maxExpansion = 64
	maxBlockSize = 1 << 30
	// minSizeBound lets small blocks expand more (dictionary compression
	// can shrink a block to a few bytes); allocating it is always safe.
	minSizeBound = 4 << 20
)

var (
	zstdEncOnce sync.Once
	zstdEnc     *zstd.Encoder
	zstdDecOnce sync.Once
	zstdDec     *zstd.Decoder
)

func zstdEncoder() *zstd.Encoder {
	zstdEncOnce.Do(func() {
		zstdEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	})
	return zstdEnc
}

func zstdDecoder() *zstd.Decoder {
	zstdDecOnce.Do(func() {
		zstdDec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(maxBlockSize))
	})
	return zstdDec
}

// compressBlock compresses raw with c into dst[:0] using the size-prefix
// rules of formatVersion (§7) and returns the result, or nil when c is
// NoCompression or the result is not at least 12.5% smaller.
func compressBlock(dst, raw []byte, c Compression, formatVersion uint32) []byte {
	dst = dst[:0]
	prefixed := formatVersion >= 2
	switch c {
	case SnappyCompression:
		// s2's snappy-compatible encoder at its default level: the
		// "better" level snappy.Encode uses costs about twice the CPU for a
		// few percent of size.
		dst = s2.EncodeSnappy(dst[:cap(dst)], raw)
	case ZSTDCompression:
		dst = binary.AppendUvarint(dst, uint64(len(raw)))
		dst = zstdEncoder().EncodeAll(raw, dst)
	case LZ4Compression:
		dst = appendRawSize(dst, len(raw), prefixed)
		h := len(dst)
		bound := lz4.CompressBlockBound(len(raw))
		dst = append(dst, make([]byte, bound)...)
		n, err := lz4.CompressBlock(raw, dst[h:], nil)
		if err != nil || n == 0 {
			return nil
		}
		dst = dst[:h+n]
	case ZlibCompression:
		if prefixed { // fv 0/1: the raw deflate stream alone (§7)
			dst = binary.AppendUvarint(dst, uint64(len(raw)))
		}
		var b bytes.Buffer
		b.Write(dst)
		fw, err := flate.NewWriter(&b, flate.DefaultCompression)
		if err != nil {
			return nil
		}
		_, _ = fw.Write(raw)
		if fw.Close() != nil {
			return nil
		}
		dst = b.Bytes()
	default:
		return nil
	}
	if len(dst) >= len(raw)-len(raw)/8 {
		return nil
	}
	return dst
}

func appendRawSize(dst []byte, n int, varint bool) []byte {
	if varint {
		return binary.AppendUvarint(dst, uint64(n))
	}
	return binary.LittleEndian.AppendUint64(dst, uint64(n))
}

// decompressBlock decompresses a stored block of type c. dict is the
// table's compression dictionary (may be nil). It returns a description of
// the problem on failure.
func decompressBlock(c Compression, data []byte, formatVersion uint32, dict *zstd.Decoder) ([]byte, string) {
	switch c {
	case SnappyCompression:
		n, err := snappy.DecodedLen(data)
		if err != nil || !sizeOK(n, len(data)) {
			return nil, "bad snappy length"
		}
		out, err := snappy.Decode(make([]byte, n), data)
		if err != nil {
			return nil, "snappy: " + err.Error()
		}
		return out, ""
	case ZSTDCompression, ZSTDNotFinalCompression:
		n, rest, ok := readRawSize(data, true)
		if !ok {
			return nil, "bad zstd size prefix"
		}
		dec := zstdDecoder()
		if dict != nil {
			dec = dict
		}
		out, err := dec.DecodeAll(rest, make([]byte, 0, n))
		if err != nil || len(out) != n {
			return nil, "zstd: bad block"
		}
		return out, ""
	case LZ4Compression, LZ4HCCompression:
		n, rest, ok := readRawSize(data, formatVersion >= 2)
		if !ok {
			return nil, "bad lz4 size prefix"
		}
		out := make([]byte, n)
		m, err := lz4.UncompressBlock(rest, out)
		if err != nil || m != n {
			return nil, "lz4: bad block"
		}
		return out, ""
	case ZlibCompression:
		return readAllBounded(flateReader(data, formatVersion), data, formatVersion >= 2)
	case BZip2Compression:
		return readAllBounded(bzip2Reader(data, formatVersion), data, formatVersion >= 2)
	}
	return nil, "unsupported compression type " + c.String()
}

func sizeOK(n, compressed int) bool {
	return n >= 0 && n <= maxBlockSize && n <= max(maxExpansion*compressed, minSizeBound)
}

// readRawSize reads the decompressed-size header: a varint32 (fv >= 2 and
// ZSTD) or a fixed64 (LZ4 with fv < 2).
func readRawSize(data []byte, varint bool) (int, []byte, bool) {
	if varint {
		n, m := uvarint32(data)
		if m == 0 || !sizeOK(n, len(data)) {
			return 0, nil, false
		}
		return n, data[m:], true
	}
	if len(data) < 8 {
		return 0, nil, false
	}
	v := binary.LittleEndian.Uint64(data)
	if v > maxBlockSize || !sizeOK(int(v), len(data)) {
		return 0, nil, false
	}
	return int(v), data[8:], true
}

func flateReader(data []byte, fv uint32) func([]byte) io.Reader {
	return func(b []byte) io.Reader { return flate.NewReader(bytes.NewReader(b)) }
}

func bzip2Reader(data []byte, fv uint32) func([]byte) io.Reader {
	return func(b []byte) io.Reader { return bzip2.NewReader(bytes.NewReader(b)) }
}

// readAllBounded decodes a stream-format block (zlib, bzip2), with a
// varint32 size prefix when prefixed, never producing more than the bound.
func readAllBounded(open func([]byte) io.Reader, data []byte, prefixed bool) ([]byte, string) {
	limit := min(maxBlockSize, max(maxExpansion*len(data), minSizeBound))
	want := -1
	if prefixed {
		n, rest, ok := readRawSize(data, true)
		if !ok {
			return nil, "bad size prefix"
		}
		want, data, limit = n, rest, n
	}
	var buf bytes.Buffer
	if want >= 0 {
		buf.Grow(want)
	}
	m, err := io.Copy(&buf, io.LimitReader(open(data), int64(limit)+1))
	if err != nil || m > int64(limit) || (want >= 0 && int(m) != want) {
		return nil, "bad compressed block"
	}
	return buf.Bytes(), ""
}
