package table

import (
	"encoding/binary"

	"github.com/stratadb/strata/internal/checksum"
)

const (
	// magicBlockBased ends every block-based table with footer
	// format_version >= 1; magicLegacy ends LevelDB-style (fv 0) tables.
	// Do not change.
	magicBlockBased uint64 = 0x88e241b785f4cff7
	magicLegacy     uint64 = 0xdb4775248b80fb57

	footerLen       = 53 // fv >= 1
	legacyFooterLen = 48 // fv 0
	// blockTrailerLen is the compression-type byte plus the fixed32 checksum
	// that follow every block.
	blockTrailerLen = 5
	maxHandleLen    = 20

	maxFormatVersion = 5
)

// Meta block names (metaindex keys). Do not change.
const (
	metaProperties      = "rocksdb.properties"
	metaPropertiesOld   = "rocksdb.stats"
	metaRangeDel        = "rocksdb.range_del"
	metaCompressionDict = "rocksdb.compression_dict"
	fullFilterPrefix    = "fullfilter."
	partFilterPrefix    = "partitionedfilter."
	builtinFilterName   = "rocksdb.BuiltinBloomFilter"
)

// filterNameAliases are the filter-policy compatibility names RocksDB 7.8.3
// accepts after "fullfilter." / "partitionedfilter.".
var filterNameAliases = []string{
	builtinFilterName, "bloomfilter", "ribbonfilter",
	"rocksdb.internal.LegacyBloomFilter", "rocksdb.internal.FastLocalBloomFilter",
	"rocksdb.internal.Standard128RibbonFilter", "rocksdb.internal.DeprecatedBlockBasedBloomFilter",
}

// blockHandle locates a block: its offset in the file and its size without
// the 5-byte trailer.
type blockHandle struct {
	offset, size uint64
}

func (h blockHandle) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, h.offset)
	return binary.AppendUvarint(dst, h.size)
}

// decodeHandle decodes a handle from the front of b and returns the number
// of bytes consumed, or n <= 0 when b does not start with a valid handle.
func decodeHandle(b []byte) (blockHandle, int) {
	off, n1 := binary.Uvarint(b)
	if n1 <= 0 {
		return blockHandle{}, 0
	}
	size, n2 := binary.Uvarint(b[n1:])
	if n2 <= 0 {
		return blockHandle{}, 0
	}
	return blockHandle{offset: off, size: size}, n1 + n2
}

// footer is the decoded table footer.
type footer struct {
	formatVersion uint32
	checksum      checksum.Type
	metaindex     blockHandle
	index         blockHandle
	len           int // bytes the footer occupies at the end of the file
}

// appendFooter encodes a format_version >= 1 footer:
//
//	checksum type (1) ‖ metaindex handle ‖ index handle ‖ zero padding to
//	offset 41 ‖ fixed32 format_version ‖ fixed64 magic
func appendFooter(dst []byte, f footer) []byte {
	start := len(dst)
	dst = append(dst, byte(f.checksum))
	dst = f.metaindex.append(dst)
	dst = f.index.append(dst)
	for len(dst)-start < 1+2*maxHandleLen {
		dst = append(dst, 0)
	}
	dst = binary.LittleEndian.AppendUint32(dst, f.formatVersion)
	return binary.LittleEndian.AppendUint64(dst, magicBlockBased)
}

// decodeFooter decodes the footer from the last bytes of a file (buf holds
// up to the last footerLen bytes). It returns a description of the problem
// instead of an error so the caller can name the file.
func decodeFooter(buf []byte) (footer, string) {
	if len(buf) < legacyFooterLen {
		return footer{}, "file too short for a footer"
	}
	magic := binary.LittleEndian.Uint64(buf[len(buf)-8:])
	var f footer
	var handles []byte
	switch magic {
	case magicLegacy:
		b := buf[len(buf)-legacyFooterLen:]
		f = footer{formatVersion: 0, checksum: checksum.CRC32C, len: legacyFooterLen}
		handles = b[:2*maxHandleLen]
	case magicBlockBased:
		if len(buf) < footerLen {
			return footer{}, "file too short for a footer"
		}
		b := buf[len(buf)-footerLen:]
		f = footer{checksum: checksum.Type(b[0]), len: footerLen}
		f.formatVersion = binary.LittleEndian.Uint32(b[41:])
		if !f.checksum.Valid() {
			return footer{}, "unknown checksum type in footer"
		}
		if f.formatVersion < 1 || f.formatVersion > maxFormatVersion {
			return footer{}, "corrupt or unsupported format_version"
		}
		handles = b[1:41]
	default:
		return footer{}, "bad table magic number"
	}
	var n int
	f.metaindex, n = decodeHandle(handles)
	if n <= 0 {
		return footer{}, "bad metaindex handle in footer"
	}
	var m int
	f.index, m = decodeHandle(handles[n:])
	if m <= 0 {
		return footer{}, "bad index handle in footer"
	}
	return f, ""
}

// Comparison helpers for the bytewise comparator.

// findShortestSeparator returns a short user key s with start <= s < limit
// when start < limit (RocksDB's BytewiseComparator::FindShortestSeparator),
// appended to dst; otherwise start itself.
func findShortestSeparator(dst, start, limit []byte) []byte {
	n := min(len(start), len(limit))
	d := 0
	for d < n && start[d] == limit[d] {
		d++
	}
	if d >= n {
		return append(dst, start...) // one is a prefix of the other
	}
	c := start[d]
	if c >= limit[d] {
		return append(dst, start...) // start >= limit: nothing to shorten
	}
	// start[:d] ‖ c+1 is < limit unless it equals limit, i.e. unless
	// c+1 == limit[d] and d is limit's last byte (RocksDB's rule; LevelDB
	// also refuses c+1 == limit[d] when limit is longer).
	if d < len(limit)-1 || c+1 < limit[d] {
		dst = append(dst, start[:d+1]...)
		dst[len(dst)-1]++
		return dst
	}
	// Incrementing start[d] would reach limit: keep start[d] and increment
	// the first later byte of start that is not 0xff.
	for i := d + 1; i < len(start); i++ {
		if start[i] < 0xff {
			dst = append(dst, start[:i+1]...)
			dst[len(dst)-1]++
			return dst
		}
	}
	return append(dst, start...)
}
