// Package batch encodes and decodes RocksDB's WriteBatch, the unit of a
// commit and the payload of one WAL record. It is not covered by the API
// contract.
//
// # Layout
//
//	batch  := fixed64 sequence ‖ fixed32 count ‖ record*
//	record := tag ‖ fields
//
// Integers are little-endian; a "varstring" is a varint32 length followed by
// that many bytes; cf is a varint32 column family id. Tags (RocksDB
// ValueType codes, frozen: do not change):
//
//	0x01 Put                key value      0x05 + cf  (column family form)
//	0x00 Delete             key            0x04 + cf
//	0x07 SingleDelete       key            0x08 + cf
//	0x0F DeleteRange        start end      0x0E + cf
//	0x02 Merge              key value      0x06 + cf
//	0x11 BlobIndex          key index      0x10 + cf  (read only)
//	0x03 LogData            blob           (not counted, consumes no sequence)
//	0x0D Noop               —              (not counted)
//
// The column-family forms put the varint32 cf id right after the tag. The
// writer uses them only for families other than 0 (family 0 takes the plain
// form, as RocksDB's own WriteBatch does); the reader accepts them with any
// id, 0 included. Reader.NextCF returns every family; Reader.Next, for
// callers that know only the default family, refuses the others. Other RocksDB tags (2PC markers 0x09-0x0C,
// 0x12, 0x13, 0x15, wide-column entities 0x16/0x17)
// are valid RocksDB but unsupported here; any other tag is corruption.
//
// Each counted record (put, delete, single delete, range delete, merge)
// consumes one sequence number, in order, starting at the header's sequence;
// count is the number of counted records.
package batch

import (
	"encoding/binary"
	"io"
	"math"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
)

// HeaderLen is the size of the batch header (sequence and count).
const HeaderLen = 12

// Record tags that are not kinds of internal keys (frozen on-disk values).
const (
	tagDelete         = 0x00
	tagPut            = 0x01
	tagMerge          = 0x02
	tagLogData        = 0x03
	tagCFDelete       = 0x04
	tagCFPut          = 0x05
	tagCFMerge        = 0x06
	tagSingleDelete   = 0x07
	tagCFSingleDelete = 0x08
	tagNoop           = 0x0D
	tagCFRangeDelete  = 0x0E
	tagRangeDelete    = 0x0F
	tagCFBlobIndex    = 0x10
	tagBlobIndex      = 0x11
)

// ErrUnsupportedColumnFamily is returned (wrapped, naming the id) for a
// record of a column family other than the default one.
// It is base.ErrUnsupportedColumnFamily, shared with the MANIFEST reader.
var ErrUnsupportedColumnFamily = base.ErrUnsupportedColumnFamily

// ErrUnsupportedRecord is returned (wrapped, naming the tag) for a RocksDB
// record kind this engine does not implement (2PC markers, wide-column
// entities).
var ErrUnsupportedRecord = errors.New("strata: batch: unsupported record kind")

// Batch is an encoded WriteBatch.
//
// Invariants: data is either empty (a fresh or reset batch, count 0) or
// holds a 12-byte header followed by well-formed records whose number of
// counted records equals the header's count. Data returned by Data aliases
// the batch.
//
// A Batch is not safe for concurrent use.
//
// rangeDels is true when data holds a range deletion (it is false for a
// batch without one); multiFamily is true when data holds a record of a
// column family other than 0 (a CF-form record with id 0 does not count).
// Both are kept up to date by every writer, SetData and Append so that the
// commit path can ask without decoding the batch.
type Batch struct {
	data        []byte
	rangeDels   bool
	multiFamily bool
}

// HasRangeDeletion reports whether the batch holds a range deletion.
func (b *Batch) HasRangeDeletion() bool { return b.rangeDels }

// MultiFamily reports whether the batch holds a record of a column family
// other than the default one (0).
func (b *Batch) MultiFamily() bool { return b.multiFamily }

func (b *Batch) init() {
	if len(b.data) < HeaderLen {
		b.data = append(b.data[:0], make([]byte, HeaderLen)...)
	}
}

// Put adds a record that sets key to value.
func (b *Batch) Put(key, value []byte) { b.add(tagPut, key, value, true) }

// Delete adds a point deletion of key.
func (b *Batch) Delete(key []byte) { b.add(tagDelete, key, nil, false) }

// SingleDelete adds a single deletion of key. The public API does not
// expose it; it exists for RocksDB compatibility of replayed logs.
func (b *Batch) SingleDelete(key []byte) { b.add(tagSingleDelete, key, nil, false) }

// DeleteRange adds a deletion of every key in [start, end).
func (b *Batch) DeleteRange(start, end []byte) { b.add(tagRangeDelete, start, end, true) }

// Merge adds a merge operand for key.
func (b *Batch) Merge(key, value []byte) { b.add(tagMerge, key, value, true) }

// PutCF adds a record that sets key to value in column family cf. Family 0
// takes the plain form (tag 0x01), byte-identical to Put.
func (b *Batch) PutCF(cf uint32, key, value []byte) {
	if cf == 0 {
		b.add(tagPut, key, value, true)
		return
	}
	b.addCF(tagCFPut, cf, key, value, true)
}

// DeleteCF adds a point deletion of key in column family cf.
func (b *Batch) DeleteCF(cf uint32, key []byte) {
	if cf == 0 {
		b.add(tagDelete, key, nil, false)
		return
	}
	b.addCF(tagCFDelete, cf, key, nil, false)
}

// SingleDeleteCF adds a single deletion of key in column family cf.
func (b *Batch) SingleDeleteCF(cf uint32, key []byte) {
	if cf == 0 {
		b.add(tagSingleDelete, key, nil, false)
		return
	}
	b.addCF(tagCFSingleDelete, cf, key, nil, false)
}

// DeleteRangeCF adds a deletion of every key in [start, end) of column
// family cf.
func (b *Batch) DeleteRangeCF(cf uint32, start, end []byte) {
	if cf == 0 {
		b.add(tagRangeDelete, start, end, true)
		return
	}
	b.addCF(tagCFRangeDelete, cf, start, end, true)
}

// MergeCF adds a merge operand for key in column family cf.
func (b *Batch) MergeCF(cf uint32, key, value []byte) {
	if cf == 0 {
		b.add(tagMerge, key, value, true)
		return
	}
	b.addCF(tagCFMerge, cf, key, value, true)
}

// PutLogData adds a blob that is written to the log but applied nowhere.
// It is not counted and consumes no sequence number.
func (b *Batch) PutLogData(blob []byte) {
	b.init()
	b.data = append(b.data, tagLogData)
	b.data = appendVarstring(b.data, blob)
}

func (b *Batch) add(tag byte, key, value []byte, hasValue bool) {
	b.init()
	b.data = append(b.data, tag)
	b.rangeDels = b.rangeDels || tag == tagRangeDelete
	b.data = appendVarstring(b.data, key)
	if hasValue {
		b.data = appendVarstring(b.data, value)
	}
	b.setCount(b.Count() + 1)
}

// addCF is add for the column-family forms (cf != 0). It is separate so
// that add, the path of every default-family write, gains no branch.
func (b *Batch) addCF(tag byte, cf uint32, key, value []byte, hasValue bool) {
	b.init()
	b.data = append(b.data, tag)
	b.data = binary.AppendUvarint(b.data, uint64(cf))
	b.rangeDels = b.rangeDels || tag == tagCFRangeDelete
	b.multiFamily = true
	b.data = appendVarstring(b.data, key)
	if hasValue {
		b.data = appendVarstring(b.data, value)
	}
	b.setCount(b.Count() + 1)
}

func appendVarstring(dst, s []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// Count returns the number of counted records.
func (b *Batch) Count() uint32 {
	if len(b.data) < HeaderLen {
		return 0
	}
	return binary.LittleEndian.Uint32(b.data[8:12])
}

func (b *Batch) setCount(n uint32) { binary.LittleEndian.PutUint32(b.data[8:12], n) }

// Seq returns the sequence number of the batch's first record.
func (b *Batch) Seq() base.SeqNum {
	if len(b.data) < HeaderLen {
		return 0
	}
	return base.SeqNum(binary.LittleEndian.Uint64(b.data[0:8]))
}

// SetSeq sets the sequence number of the batch's first record.
func (b *Batch) SetSeq(seq base.SeqNum) {
	b.init()
	binary.LittleEndian.PutUint64(b.data[0:8], uint64(seq))
}

// Empty reports whether the batch holds no records at all.
func (b *Batch) Empty() bool { return len(b.data) <= HeaderLen }

// Len returns the size of the encoded batch (0 for a fresh batch).
func (b *Batch) Len() int { return len(b.data) }

// Reset empties the batch, keeping its buffer.
func (b *Batch) Reset() { b.data, b.rangeDels, b.multiFamily = b.data[:0], false, false }

// Data returns the encoded batch. It aliases the batch: it is valid until
// the next change to the batch. A fresh batch returns a 12-byte header.
func (b *Batch) Data() []byte {
	b.init()
	return b.data
}

// SetData replaces the batch's contents with data (not copied), after
// checking that it is well formed: a header, records that decode, and a
// count that matches them. Records of any column family are accepted (WAL
// replay reads a whole batch first and decides per family afterwards);
// MultiFamily then tells whether there are any besides the default. On error
// the batch is unchanged.
func (b *Batch) SetData(data []byte) error {
	rangeDels, multiFamily, err := validate(data)
	if err != nil {
		return err
	}
	b.data, b.rangeDels, b.multiFamily = data, rangeDels, multiFamily
	return nil
}

// Validate checks that data is a well-formed batch. Like SetData, it
// accepts records of any column family.
func Validate(data []byte) error {
	_, _, err := validate(data)
	return err
}

// validate is Validate; it also reports whether data holds a range
// deletion and whether it holds a record of a family other than 0.
func validate(data []byte) (rangeDels, multiFamily bool, err error) {
	r, err := NewReader(data)
	if err != nil {
		return false, false, err
	}
	for {
		cf, kind, _, _, err := r.NextCF()
		if err != nil {
			if err == io.EOF {
				return rangeDels, multiFamily, nil
			}
			return false, false, err
		}
		rangeDels = rangeDels || kind == base.KindRangeDelete
		multiFamily = multiFamily || cf != 0
	}
}

// Append appends the records of src to dst and adds src's count to dst's:
// the group commit concatenates the batches of one group this way. dst keeps
// its sequence number. It fails, leaving dst unchanged, if the count would
// overflow.
func Append(dst, src *Batch) error {
	if src.Empty() {
		return nil
	}
	n := uint64(dst.Count()) + uint64(src.Count())
	if n > math.MaxUint32 {
		return base.InvalidArgumentf("batch: count %d overflows", n)
	}
	dst.init()
	dst.data = append(dst.data, src.data[HeaderLen:]...)
	dst.rangeDels = dst.rangeDels || src.rangeDels
	dst.multiFamily = dst.multiFamily || src.multiFamily
	dst.setCount(uint32(n))
	return nil
}

// Truncate drops every record after the first count, which end at byte n: a
// state that Len, Count, HasRangeDeletion and MultiFamily described earlier,
// whose flags are restored with it (savepoints of indexed batches). n at or
// below HeaderLen empties the batch.
func (b *Batch) Truncate(n int, count uint32, rangeDels, multiFamily bool) {
	if n <= HeaderLen {
		b.Reset()
		return
	}
	b.data = b.data[:n]
	b.setCount(count)
	b.rangeDels, b.multiFamily = rangeDels, multiFamily
}
