// Package record reads and writes RocksDB's log format, the framing shared by
// write-ahead logs (NNNNNN.log) and MANIFEST files. It is not covered by the
// API contract.
//
// # Layout
//
// A log file is a sequence of 32 KiB blocks (BlockSize). A logical record is
// stored as one or more physical records ("fragments"); a fragment never
// crosses a block boundary. Every fragment starts with a header:
//
//	legacy (types 1-4), 7 bytes:
//	  +---------+-----------+-----------+--- ... ---+
//	  |CRC (4B) | Size (2B) | Type (1B) | Payload   |
//	  +---------+-----------+-----------+--- ... ---+
//	recyclable (types 5-8), 11 bytes:
//	  +---------+-----------+-----------+----------------+--- ... ---+
//	  |CRC (4B) | Size (2B) | Type (1B) | Log number (4B)| Payload   |
//	  +---------+-----------+-----------+----------------+--- ... ---+
//
// All integers are little-endian. CRC is the masked CRC32C (Castagnoli,
// RocksDB's mask) of the type byte, the log number for recyclable types, and
// the payload. Size is the payload length. The log number is the low 32 bits
// of the number of the file the fragment was written for; a recycled file
// still holds fragments of its previous life, and a fragment whose log number
// differs from the file's marks the end of valid data.
//
// Types (frozen on-disk values, do not change):
//
//	0     zero: preallocated or zero-filled space (a zero header ends the log)
//	1 / 5 FULL: the whole logical record
//	2 / 6 FIRST fragment
//	3 / 7 MIDDLE fragment
//	4 / 8 LAST fragment
//	9     SetCompressionType (RocksDB WAL compression; not supported here)
//
// When fewer than a header's worth of bytes remain in a block, the writer
// fills them with zeros and continues at the next block; readers skip them.
// A logical record of n bytes that does not fit in the rest of a block is
// split into FIRST, MIDDLE... and LAST fragments. An empty logical record is
// one FULL fragment with Size 0.
//
// NewWriter writes the legacy types; NewRecyclableWriter the recyclable
// ones (and then pads a block trailer when fewer than 11 bytes remain, so
// a recyclable log's trailer is 0 to 10 zero bytes). The Reader reads all
// of 0-8.
//
// # Recycled logs
//
// A log whose fragment at offset 0 has a recyclable type may have been
// written over the file of an older log (RocksDB's recycle_log_file_num),
// whose bytes follow its end. Its end is therefore found, as RocksDB's
// reader finds it, at a fragment that records another log number (checked
// before the length and checksum), and also at damage past which the file
// holds no intact fragment of this log: there the old bytes begin, or a
// crash cut this log's last write (ErrTornTail when the damaged header
// records this log's number). Damage with an intact fragment of this log
// after it is corruption. A fragment whose checksum holds under this log's
// number or another type in place of what its header records is damage,
// not the previous life.
//
// # Damage
//
// The Reader distinguishes three ends of a log:
//   - io.EOF: the log ended cleanly, at a fragment boundary, in a zero-filled
//     region, or at a recyclable fragment of a previous life of the file.
//   - ErrTornTail: the log ends inside a logical record (a header or payload
//     cut by EOF, or a FIRST/MIDDLE without its LAST). This is what a crash
//     during a write leaves behind; the caller may drop it when the file is
//     the last log. A header whose length overruns the end of the file is
//     only taken for a torn write when the bytes after it do not form a
//     complete fragment under that header with one byte changed (its
//     length or type): a damaged length in the last block would otherwise
//     turn every later record into a "torn tail" and drop it silently.
//   - an error of class base.ErrCorruption naming the file and byte offset:
//     a checksum mismatch, an unknown type, a length that overruns a full
//     block, a damaged header in the last block (above), or fragments out
//     of order. A zero type and length count as the end of the log only
//     with a zero checksum too.
package record

import (
	"hash/crc32"

	"github.com/stratadb/strata/internal/checksum"
)

// Frozen format constants; do not change.
const (
	// BlockSize is the size of a log block.
	BlockSize = 32 * 1024
	// HeaderSize is the size of a legacy fragment header.
	HeaderSize = 7
	// RecyclableHeaderSize is the size of a recyclable fragment header.
	RecyclableHeaderSize = 11
)

// Fragment types.
const (
	zeroType        = 0
	fullType        = 1
	firstType       = 2
	middleType      = 3
	lastType        = 4
	recyclableFull  = 5
	recyclableFirst = 6
	recyclableMid   = 7
	recyclableLast  = 8
	setCompression  = 9
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// typeCRC[t] is the unmasked CRC32C of the single byte t: the seed for a
// fragment's checksum, so that computing it needs no temporary slice.
var typeCRC [setCompression + 1]uint32

func init() {
	for t := range typeCRC {
		typeCRC[t] = crc32.Update(0, castagnoli, []byte{byte(t)})
	}
}

// fragmentCRC returns the masked checksum of a fragment: the type byte, then
// extra (the log number of a recyclable header, else empty), then payload.
func fragmentCRC(typ byte, extra, payload []byte) uint32 {
	c := typeCRC[typ]
	c = crc32.Update(c, castagnoli, extra)
	c = crc32.Update(c, castagnoli, payload)
	return checksum.Mask(c)
}
