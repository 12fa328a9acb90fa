package batch

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
)

// Reader decodes the records of an encoded batch in order.
//
// Invariants: off is the offset of the next record in data; seen counts the
// counted records returned so far and never exceeds count; seq and last are
// the sequence number and the offset of the record last returned.
type Reader struct {
	data        []byte
	off, last   int
	count, seen uint32
	first, seq  base.SeqNum
}

// NewReader returns a Reader of data, which must hold at least a header
// whose sequence number leaves room for its count of records below
// base.MaxSeqNum. The slices Next returns alias data.
func NewReader(data []byte) (Reader, error) {
	if len(data) < HeaderLen {
		return Reader{}, base.CorruptionErrorf("batch: %d bytes, shorter than the %d-byte header",
			len(data), HeaderLen)
	}
	r := Reader{
		data:  data,
		off:   HeaderLen,
		count: binary.LittleEndian.Uint32(data[8:12]),
		first: base.SeqNum(binary.LittleEndian.Uint64(data[0:8])),
	}
	// The records take sequence numbers first..first+count-1; one beyond
	// MaxSeqNum cannot be stored in an internal key (it would wrap).
	if r.count > 0 && r.first > base.MaxSeqNum-base.SeqNum(r.count-1) {
		return Reader{}, base.CorruptionErrorf("batch: offset 0: header sequence number %d with %d records exceeds the largest sequence number %d",
			r.first, r.count, base.MaxSeqNum)
	}
	return r, nil
}

// Count returns the count recorded in the header.
func (r *Reader) Count() uint32 { return r.count }

// Seq returns the sequence number of the record last returned by Next or
// NextCF: the
// header's sequence plus the number of counted records before it.
func (r *Reader) Seq() base.SeqNum { return r.seq }

// Next returns the next counted record of the default column family: its
// kind (base.KindSet, KindDelete, KindSingleDelete, KindRangeDelete with
// key=start and value=end, or KindMerge), key and value. It is NextCF for
// callers that know only family 0: a record of another family gives
// ErrUnsupportedColumnFamily naming the family and the record's offset
// (the reader has then consumed that record). Other errors and io.EOF are
// NextCF's.
func (r *Reader) Next() (kind base.Kind, key, value []byte, err error) {
	cf, kind, key, value, err := r.NextCF()
	if err == nil && cf != 0 {
		return 0, nil, nil, errors.Wrapf(ErrUnsupportedColumnFamily,
			"batch: offset %d: record for column family %d (only the default column family 0 is supported)",
			r.last, cf)
	}
	return kind, key, value, err
}

// NextCF returns the next counted record: its column family (0 for the
// plain forms; the id of a column-family form, which may be 0 too), kind,
// key and value, as Next. LogData and Noop records are skipped. At the end
// it returns io.EOF, after checking that the number of records matches the
// header's count. Malformed data, a malformed column family id included,
// gives an error of class base.ErrCorruption naming the offset within the
// batch; RocksDB record kinds this engine lacks give ErrUnsupportedRecord.
// Which families a caller supports is the caller's decision.
func (r *Reader) NextCF() (cf uint32, kind base.Kind, key, value []byte, err error) {
	for {
		if r.off >= len(r.data) {
			if r.seen != r.count {
				return 0, 0, nil, nil, base.CorruptionErrorf("batch: header count %d but %d records",
					r.count, r.seen)
			}
			return 0, 0, nil, nil, io.EOF
		}
		start := r.off
		tag := r.data[r.off]
		r.off++
		var hasValue, counted bool
		cf, kind, hasValue, counted, err = r.decodeTag(tag, start)
		if err != nil {
			return 0, 0, nil, nil, err
		}
		if tag == tagNoop {
			continue
		}
		if key, err = r.varstring(start); err != nil {
			return 0, 0, nil, nil, err
		}
		if hasValue {
			if value, err = r.varstring(start); err != nil {
				return 0, 0, nil, nil, err
			}
		}
		if !counted {
			continue // LogData
		}
		if r.seen == r.count {
			return 0, 0, nil, nil, base.CorruptionErrorf("batch: more records than the header count %d", r.count)
		}
		r.seq = r.first + base.SeqNum(r.seen)
		r.seen++
		r.last = start
		return cf, kind, key, value, nil
	}
}

// decodeTag interprets tag (at offset start), reading the column family id
// of the column-family forms. The plain forms come first: they are the
// common case.
func (r *Reader) decodeTag(tag byte, start int) (cf uint32, kind base.Kind, hasValue, counted bool, err error) {
	switch tag {
	case tagPut, tagMerge, tagRangeDelete:
		return 0, base.Kind(tag), true, true, nil
	case tagDelete, tagSingleDelete:
		return 0, base.Kind(tag), false, true, nil
	case tagLogData:
		return 0, 0, false, false, nil
	case tagNoop:
		return 0, 0, false, false, nil
	case tagBlobIndex:
		// RocksDB writes these to the WAL only through its stacked BlobDB
		// and WriteBatchInternal::PutBlobIndex; they replay as they are.
		return 0, base.KindBlobIndex, true, true, nil
	case tagCFPut, tagCFMerge, tagCFRangeDelete, tagCFDelete, tagCFSingleDelete, tagCFBlobIndex:
		id, n := binary.Uvarint(r.data[r.off:])
		if n <= 0 || id > math.MaxUint32 {
			return 0, 0, false, false, base.CorruptionErrorf("batch: offset %d: bad column family id", start)
		}
		r.off += n
		cf = uint32(id)
		switch tag {
		case tagCFPut:
			return cf, base.KindSet, true, true, nil
		case tagCFMerge:
			return cf, base.KindMerge, true, true, nil
		case tagCFRangeDelete:
			return cf, base.KindRangeDelete, true, true, nil
		case tagCFDelete:
			return cf, base.KindDelete, false, true, nil
		case tagCFBlobIndex:
			return cf, base.KindBlobIndex, true, true, nil
		default:
			return cf, base.KindSingleDelete, false, true, nil
		}
	case 0x09, 0x0A, 0x0B, 0x0C, 0x12, 0x13, 0x15, 0x16, 0x17:
		return 0, 0, false, false, errors.Wrapf(ErrUnsupportedRecord, "batch: offset %d: record tag %#02x",
			start, tag)
	}
	return 0, 0, false, false, base.CorruptionErrorf("batch: offset %d: unknown record tag %#02x", start, tag)
}

// varstring reads a varint32-length-prefixed string of the record at start.
func (r *Reader) varstring(start int) ([]byte, error) {
	n, w := binary.Uvarint(r.data[r.off:])
	if w <= 0 || n > uint64(len(r.data)-r.off-w) {
		return nil, base.CorruptionErrorf("batch: offset %d: %s", start, describeBadLength(w, n))
	}
	r.off += w
	s := r.data[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return s, nil
}

func describeBadLength(w int, n uint64) string {
	if w <= 0 {
		return "malformed length"
	}
	return fmt.Sprintf("length %d overruns the batch", n)
}
