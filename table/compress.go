package table

import (
	"bytes"
	"compress/bzip2"
	"compress/flate"
	"encoding/binary"
	"github.com/cockroachdb/errors"
	"io"
	"math"
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

// Decompressed-size limits.
//
// RocksDB compresses a block only when it is under kCompressionSizeLimit
// (INT32_MAX) bytes, and its reader trusts any size prefix that fits the
// format; a highly compressible block (a large value of zeros under zstd)
// can expand thousands of times. So the reader accepts any decompressed
// size up to maxRawSize, and the writer stores larger blocks uncompressed.
//
// A size prefix alone never decides a large allocation: at most
// allocBound(len(compressed)) bytes are allocated up front, and beyond that
// the output grows only as the compressed data really produces it (and
// must then match the prefix exactly).
const (
	maxRawSize = math.MaxInt32 - 1
	// maxBlockSize bounds the scratch buffers the iterators keep for
	// reuse; larger blocks get a buffer of their own.
	maxBlockSize = 1 << 30
	// maxExpansion and minSizeBound give allocBound. Snappy cannot expand
	// more than about 21x (a 3-byte copy yields at most 64 bytes), so its
	// size prefix is also checked against allocBound.
	maxExpansion = 64
	minSizeBound = 4 << 20
	// lz4MaxExpansion: an LZ4 match-length byte adds at most 255 bytes of
	// output, so no valid LZ4 block expands more than 255x.
	lz4MaxExpansion = 256
)

// allocBound is how much a block of compressed bytes may allocate on the
// word of its size prefix alone.
func allocBound(compressed int) int {
	return expansionBound(compressed, maxExpansion)
}

// expansionBound is min(maxRawSize, max(ratio*compressed, minSizeBound)),
// without overflow on 32-bit platforms.
func expansionBound(compressed, ratio int) int {
	return int(min(maxRawSize, max(int64(ratio)*int64(compressed), minSizeBound)))
}

// rawSizeOK reports whether the reader accepts a block of type c whose
// compressed form is compressed bytes and whose size prefix is n. The
// writer stores a block uncompressed when this fails, so every block the
// writer compresses is one the reader accepts.
func rawSizeOK(c Compression, n, compressed int) bool {
	if n < 0 || n > maxRawSize {
		return false
	}
	switch c {
	case SnappyCompression:
		return n <= allocBound(compressed)
	case LZ4Compression, LZ4HCCompression:
		return n <= expansionBound(compressed, lz4MaxExpansion)
	}
	return true
}

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
			zstd.WithDecoderMaxMemory(maxRawSize))
	})
	return zstdDec
}

// compressBlock compresses raw with c into dst[:0] using the size-prefix
// rules of formatVersion (§7) and returns the result, or nil when c is
// NoCompression or the result is not at least 12.5% smaller.
func compressBlock(dst, raw []byte, c Compression, formatVersion uint32) []byte {
	if len(raw) > maxRawSize {
		return nil // the reader would not trust its size (RocksDB's rule too)
	}
	dst = compressRaw(dst, raw, c, formatVersion >= 2)
	if dst == nil || len(dst) >= len(raw)-len(raw)/8 || !rawSizeOK(c, len(raw), len(dst)) {
		return nil
	}
	return dst
}

// CompressValue compresses one value of a blob file with c as RocksDB 7.8
// does: compression format version 2 (varint size prefixes) and, unlike a
// block, kept compressed whatever its size, since the blob file's header and
// the value's BlobIndex name one compression for it. It fails for a type
// Strata cannot write or a value over 4 GiB.
func CompressValue(dst, raw []byte, c Compression) ([]byte, error) {
	if !c.writable() || len(raw) > maxRawSize {
		return nil, errors.Newf("table: cannot compress a value of %d bytes with %s", len(raw), c)
	}
	if c == NoCompression {
		return append(dst[:0], raw...), nil
	}
	out := compressRaw(dst, raw, c, true)
	if out == nil {
		return nil, errors.Newf("table: %s failed on a value of %d bytes", c, len(raw))
	}
	return out, nil
}

// DecompressValue reverses CompressValue. A failure is described by the
// returned string (empty on success); the caller names the file and offset.
func DecompressValue(c Compression, data []byte) ([]byte, string) {
	if c == NoCompression {
		return data, ""
	}
	return decompressBlock(c, data, 2, nil, nil)
}

// compressRaw compresses raw with c into dst[:0]; nil on failure or for an
// unknown type.
func compressRaw(dst, raw []byte, c Compression, prefixed bool) []byte {
	dst = dst[:0]
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
//
// alloc, when not nil, gives the output buffer of n bytes where n is known
// before decompressing and within the bounds the format's checks allow
// (snappy, zstd, lz4): a block for the cache is then decompressed straight
// into cache memory. Other formats return a heap buffer.
func decompressBlock(c Compression, data []byte, formatVersion uint32, dict *zstd.Decoder, alloc func(int) []byte) ([]byte, string) {
	if alloc == nil {
		alloc = heapAlloc
	}
	switch c {
	case SnappyCompression:
		n, err := snappy.DecodedLen(data)
		if err != nil || !rawSizeOK(c, n, len(data)) {
			return nil, "bad snappy length"
		}
		out, err := snappy.Decode(alloc(n), data)
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
		// The output grows past allocBound only as the frame produces it.
		var dst []byte
		if n <= allocBound(len(rest)) {
			dst = alloc(n)[:0]
		} else {
			dst = make([]byte, 0, allocBound(len(rest)))
		}
		out, err := dec.DecodeAll(rest, dst)
		if err != nil || len(out) != n {
			return nil, "zstd: bad block"
		}
		return out, ""
	case LZ4Compression, LZ4HCCompression:
		n, rest, ok := readRawSize(data, formatVersion >= 2)
		if !ok || !rawSizeOK(c, n, len(data)) {
			return nil, "bad lz4 size prefix"
		}
		// Allocate n (at most 256x the block) only once the data has
		// shown that it expands past allocBound.
		var out []byte
		if n <= allocBound(len(rest)) {
			out = alloc(n)
		} else {
			out = make([]byte, allocBound(len(rest)))
		}
		m, err := lz4.UncompressBlock(rest, out)
		if err != nil && n > len(out) {
			out = make([]byte, n)
			m, err = lz4.UncompressBlock(rest, out)
		}
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

// readRawSize reads the decompressed-size header: a varint32 (fv >= 2 and
// ZSTD) or a fixed64 (LZ4 with fv < 2).
func readRawSize(data []byte, varint bool) (int, []byte, bool) {
	if varint {
		n, m := uvarint32(data)
		if m == 0 || n > maxRawSize {
			return 0, nil, false
		}
		return n, data[m:], true
	}
	if len(data) < 8 {
		return 0, nil, false
	}
	v := binary.LittleEndian.Uint64(data)
	if v > maxRawSize {
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
	limit := maxRawSize
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
		buf.Grow(min(want, allocBound(len(data))))
	}
	m, err := io.Copy(&buf, io.LimitReader(open(data), int64(limit)+1))
	if err != nil || m > int64(limit) || (want >= 0 && int(m) != want) {
		return nil, "bad compressed block"
	}
	return buf.Bytes(), ""
}

func heapAlloc(n int) []byte { return make([]byte, n) }
