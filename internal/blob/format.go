// Package blob holds the on-disk vocabulary of RocksDB 7.8's integrated
// BlobDB: the blob file (NNNNNN.blob) header, record and footer layouts and
// the BlobIndex value that a kTypeBlobIndex entry of a table or WAL holds.
// It knows nothing of compression or caching; the db package builds its
// reader and writer on it. docs/blob-files.md describes the format.
package blob

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/checksum"
)

// Layout constants (frozen: RocksDB's blob_log_format.h).
const (
	// Magic is the number that opens the header and the footer.
	Magic uint32 = 2395959 // 0x00248F37
	// Version is the only blob log version RocksDB writes or reads.
	Version uint32 = 1
	// HeaderSize: magic, version, column family id (fixed32 each), flags
	// and compression (a byte each), expiration range (2 x fixed64).
	HeaderSize = 30
	// FooterSize: magic (fixed32), blob count, expiration range (3 x
	// fixed64), masked CRC32C of the first 28 bytes (fixed32).
	FooterSize = 32
	// RecordHeaderSize: key length, value length, expiration (fixed64
	// each), masked CRC32C of those 24 bytes, masked CRC32C of key+value.
	RecordHeaderSize = 32
)

// Header is a blob file's header.
type Header struct {
	ColumnFamily uint32
	HasTTL       bool
	// Compression is the compression type (RocksDB's CompressionType byte)
	// of every blob in the file.
	Compression byte
	// ExpirationLo and ExpirationHi are the TTL range; zero for the
	// integrated BlobDB.
	ExpirationLo, ExpirationHi uint64
}

// AppendHeader appends h's encoding.
func AppendHeader(dst []byte, h Header) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, Magic)
	dst = binary.LittleEndian.AppendUint32(dst, Version)
	dst = binary.LittleEndian.AppendUint32(dst, h.ColumnFamily)
	var flags byte
	if h.HasTTL {
		flags = 1
	}
	dst = append(dst, flags, h.Compression)
	dst = binary.LittleEndian.AppendUint64(dst, h.ExpirationLo)
	return binary.LittleEndian.AppendUint64(dst, h.ExpirationHi)
}

// DecodeHeader decodes a header; the error is a corruption naming file.
func DecodeHeader(file string, b []byte) (Header, error) {
	if len(b) != HeaderSize {
		return Header{}, base.CorruptionErrorf("blob file %s: offset 0: header of %d bytes, want %d", file, len(b), HeaderSize)
	}
	if m := binary.LittleEndian.Uint32(b); m != Magic {
		return Header{}, base.CorruptionErrorf("blob file %s: offset 0: bad magic number %#x", file, m)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != Version {
		return Header{}, base.CorruptionErrorf("blob file %s: offset 4: unknown blob log version %d", file, v)
	}
	return Header{
		ColumnFamily: binary.LittleEndian.Uint32(b[8:]),
		HasTTL:       b[12]&1 == 1,
		Compression:  b[13],
		ExpirationLo: binary.LittleEndian.Uint64(b[14:]),
		ExpirationHi: binary.LittleEndian.Uint64(b[22:]),
	}, nil
}

// Footer is a blob file's footer, written when the file is closed.
type Footer struct {
	BlobCount                  uint64
	ExpirationLo, ExpirationHi uint64
}

// AppendFooter appends f's encoding.
func AppendFooter(dst []byte, f Footer) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, Magic)
	dst = binary.LittleEndian.AppendUint64(dst, f.BlobCount)
	dst = binary.LittleEndian.AppendUint64(dst, f.ExpirationLo)
	dst = binary.LittleEndian.AppendUint64(dst, f.ExpirationHi)
	return binary.LittleEndian.AppendUint32(dst, checksum.MaskedCRC(dst[start:]))
}

// DecodeFooter decodes the footer found at offset off of file.
func DecodeFooter(file string, off int64, b []byte) (Footer, error) {
	if len(b) != FooterSize {
		return Footer{}, base.CorruptionErrorf("blob file %s: offset %d: footer of %d bytes, want %d", file, off, len(b), FooterSize)
	}
	if m := binary.LittleEndian.Uint32(b); m != Magic {
		return Footer{}, base.CorruptionErrorf("blob file %s: offset %d: bad footer magic number %#x", file, off, m)
	}
	if got, want := checksum.MaskedCRC(b[:FooterSize-4]), binary.LittleEndian.Uint32(b[FooterSize-4:]); got != want {
		return Footer{}, base.CorruptionErrorf("blob file %s: offset %d: footer checksum mismatch", file, off)
	}
	return Footer{
		BlobCount:    binary.LittleEndian.Uint64(b[4:]),
		ExpirationLo: binary.LittleEndian.Uint64(b[12:]),
		ExpirationHi: binary.LittleEndian.Uint64(b[20:]),
	}, nil
}

// AppendRecord appends one record: the 32-byte record header, the user key
// and the (possibly compressed) value. The value starts RecordHeaderSize +
// len(key) bytes after the record's start: that is the offset a BlobIndex
// names.
func AppendRecord(dst, key, value []byte, expiration uint64) []byte {
	return append(AppendRecordHead(dst, key, value, expiration), value...)
}

// AppendRecordHead appends what AppendRecord does but the value: the record
// header (whose checksum covers value) and the key. A writer that has the
// value in hand writes it after, from where it lies, instead of copying it
// into the record first.
func AppendRecordHead(dst, key, value []byte, expiration uint64) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(key)))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(value)))
	dst = binary.LittleEndian.AppendUint64(dst, expiration)
	dst = binary.LittleEndian.AppendUint32(dst, checksum.MaskedCRC(dst[start:]))
	dst = binary.LittleEndian.AppendUint32(dst, checksum.MaskedCRC(key, value))
	return append(dst, key...)
}

// RecordOverhead is what a record adds to its value: the header and the key.
// RocksDB counts total_blob_bytes and garbage_blob_bytes this way.
func RecordOverhead(keyLen int) uint64 { return uint64(RecordHeaderSize + keyLen) }

// CheckRecord verifies a record read back whole (header, key, value) for
// the blob at valueOff of file: both checksums, and that it holds key and a
// value of the expected size. It returns the value.
func CheckRecord(file string, valueOff int64, rec, key []byte, size uint64) ([]byte, error) {
	recOff := valueOff - int64(RecordHeaderSize+len(key))
	if len(rec) != RecordHeaderSize+len(key)+int(size) {
		return nil, base.CorruptionErrorf("blob file %s: offset %d: short record", file, recOff)
	}
	if got, want := checksum.MaskedCRC(rec[:24]), binary.LittleEndian.Uint32(rec[24:]); got != want {
		return nil, base.CorruptionErrorf("blob file %s: offset %d: record header checksum mismatch", file, recOff)
	}
	kl, vl := binary.LittleEndian.Uint64(rec), binary.LittleEndian.Uint64(rec[8:])
	if kl != uint64(len(key)) || vl != size {
		return nil, base.CorruptionErrorf("blob file %s: offset %d: record of key length %d, value length %d; the index wants %d and %d",
			file, recOff, kl, vl, len(key), size)
	}
	body := rec[RecordHeaderSize:]
	if got, want := checksum.MaskedCRC(body), binary.LittleEndian.Uint32(rec[28:]); got != want {
		return nil, base.CorruptionErrorf("blob file %s: offset %d: record checksum mismatch", file, recOff)
	}
	if string(body[:len(key)]) != string(key) {
		return nil, base.CorruptionErrorf("blob file %s: offset %d: record holds key %q, want %q", file, recOff, body[:len(key)], key)
	}
	return body[len(key):], nil
}

// Index types (the first byte of a BlobIndex).
const (
	IndexInlinedTTL = 0
	IndexBlob       = 1
	IndexBlobTTL    = 2
)

// Index is a decoded BlobIndex: where a value lives, or (InlinedTTL) the
// value itself with an expiration, which only the stacked BlobDB writes.
type Index struct {
	Type       byte
	Expiration uint64 // IndexInlinedTTL and IndexBlobTTL
	FileNum    uint64
	// Offset is the offset of the value (not of its record) in the file;
	// Size is the stored (compressed) size.
	Offset, Size uint64
	Compression  byte
	// Inline is the value of an IndexInlinedTTL index (aliases the input).
	Inline []byte
}

// AppendIndex appends the encoding of a plain (IndexBlob) index.
func AppendIndex(dst []byte, fileNum, offset, size uint64, compression byte) []byte {
	dst = append(dst, IndexBlob)
	dst = binary.AppendUvarint(dst, fileNum)
	dst = binary.AppendUvarint(dst, offset)
	dst = binary.AppendUvarint(dst, size)
	return append(dst, compression)
}

// DecodeIndex decodes a BlobIndex value; key is the user key it was found
// under, for the error message.
func DecodeIndex(key, b []byte) (Index, error) {
	bad := func(what string) (Index, error) {
		return Index{}, base.CorruptionErrorf("blob index of key %q: %s", key, what)
	}
	if len(b) == 0 {
		return bad("empty")
	}
	x := Index{Type: b[0]}
	p := b[1:]
	uv := func(ok *bool) uint64 {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			*ok = false
			return 0
		}
		p = p[n:]
		return v
	}
	ok := true
	switch x.Type {
	case IndexInlinedTTL:
		x.Expiration = uv(&ok)
		x.Inline = p
		p = nil
	case IndexBlob, IndexBlobTTL:
		if x.Type == IndexBlobTTL {
			x.Expiration = uv(&ok)
		}
		x.FileNum = uv(&ok)
		x.Offset = uv(&ok)
		x.Size = uv(&ok)
		if !ok || len(p) != 1 {
			return bad("malformed")
		}
		// Size 0 is valid: with min_blob_size 0 RocksDB stores empty
		// values in blob files too.
		x.Compression = p[0]
		return x, nil
	default:
		return bad(fmt.Sprintf("unknown type %d", x.Type))
	}
	if !ok {
		return bad("malformed")
	}
	return x, nil
}

// compressionNames are RocksDB's CompressionTypeToString names.
var compressionNames = map[byte]string{0: "NoCompression", 1: "Snappy", 2: "Zlib", 3: "BZip2", 4: "LZ4",
	5: "LZ4HC", 6: "Xpress", 7: "ZSTD", 0x40: "ZSTDNotFinal"}

// String formats x as RocksDB's BlobIndex::DebugString does (what
// sst_dump and ldb print for a kTypeBlobIndex entry); format renders an
// inlined value.
func (x Index) String(format func([]byte) string) string {
	var s string
	if x.Type == IndexInlinedTTL {
		s = "[inlined blob] value:" + format(x.Inline)
	} else {
		name, ok := compressionNames[x.Compression]
		if !ok {
			name = fmt.Sprintf("Unknown(%d)", x.Compression)
		}
		s = fmt.Sprintf("[blob ref] file:%d offset:%d size:%d compression: %s", x.FileNum, x.Offset, x.Size, name)
	}
	if x.Type != IndexBlob {
		s += fmt.Sprintf(" exp:%d", x.Expiration)
	}
	return s
}

// FileSummary is what CheckFile found in a whole blob file.
type FileSummary struct {
	Header Header
	Footer Footer
	// Count and Bytes are the records and their bytes (record header, key
	// and stored value), as the MANIFEST's blob file addition counts them.
	Count, Bytes uint64
}

// CheckFile reads the whole blob file name of size bytes from r: the
// header, every record (both checksums) and the footer, whose blob count
// must match the records. A damaged or truncated file is a corruption
// naming the file and the offset.
func CheckFile(name string, r io.ReaderAt, size int64) (FileSummary, error) {
	var s FileSummary
	if size < HeaderSize+FooterSize {
		return s, base.CorruptionErrorf("blob file %s: offset 0: file of %d bytes is shorter than a header and footer", name, size)
	}
	br := bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 256<<10)
	var hdr [HeaderSize]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return s, errors.Wrapf(err, "strata: reading blob file %s", name)
	}
	var err error
	if s.Header, err = DecodeHeader(name, hdr[:]); err != nil {
		return s, err
	}
	end := size - FooterSize
	off := int64(HeaderSize)
	var rh [RecordHeaderSize]byte
	var body []byte
	for off < end {
		if end-off < RecordHeaderSize {
			return s, base.CorruptionErrorf("blob file %s: offset %d: %d bytes before the footer, short of a record header", name, off, end-off)
		}
		if _, err := io.ReadFull(br, rh[:]); err != nil {
			return s, errors.Wrapf(err, "strata: reading blob file %s at offset %d", name, off)
		}
		if got, want := checksum.MaskedCRC(rh[:24]), binary.LittleEndian.Uint32(rh[24:]); got != want {
			return s, base.CorruptionErrorf("blob file %s: offset %d: record header checksum mismatch", name, off)
		}
		kl, vl := binary.LittleEndian.Uint64(rh[:]), binary.LittleEndian.Uint64(rh[8:])
		if kl > uint64(end-off-RecordHeaderSize) || vl > uint64(end-off-RecordHeaderSize)-kl {
			return s, base.CorruptionErrorf("blob file %s: offset %d: record of key length %d, value length %d runs past the footer", name, off, kl, vl)
		}
		n := int(kl + vl)
		if cap(body) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(br, body); err != nil {
			return s, errors.Wrapf(err, "strata: reading blob file %s at offset %d", name, off)
		}
		if got, want := checksum.MaskedCRC(body), binary.LittleEndian.Uint32(rh[28:]); got != want {
			return s, base.CorruptionErrorf("blob file %s: offset %d: record checksum mismatch", name, off)
		}
		rec := int64(RecordHeaderSize + n)
		off += rec
		s.Count++
		s.Bytes += uint64(rec)
	}
	var ftr [FooterSize]byte
	if _, err := io.ReadFull(br, ftr[:]); err != nil {
		return s, errors.Wrapf(err, "strata: reading blob file %s footer", name)
	}
	if s.Footer, err = DecodeFooter(name, end, ftr[:]); err != nil {
		return s, err
	}
	if s.Footer.BlobCount != s.Count {
		return s, base.CorruptionErrorf("blob file %s: offset %d: footer counts %d blobs, the file holds %d", name, end, s.Footer.BlobCount, s.Count)
	}
	return s, nil
}
