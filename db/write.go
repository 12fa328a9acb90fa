package db

import (
	"encoding/binary"
	"io"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/batch"
	"github.com/stratadb/strata/internal/memtable"
)

// Write applies the batch atomically. The batch's slices must stay untouched
// until Write returns.
func (d *DB) Write(b *Batch, wo *WriteOptions) error {
	if b == nil {
		return errors.Wrap(ErrInvalidArgument, "strata: nil batch")
	}
	if b.err != nil {
		return b.err
	}
	if b.hasMerge && d.opts.MergeOperator == nil {
		return errMergeWithoutOperator
	}
	return d.write(&b.b, wo)
}

// Put sets key to value.
func (d *DB) Put(key, value []byte, wo *WriteOptions) error {
	if err := checkBatchGrowth(0, 0, len(key), len(value), true); err != nil {
		return err
	}
	b := batchPool.Get().(*batch.Batch)
	b.Reset()
	b.Put(key, value)
	err := d.write(b, wo)
	batchPool.Put(b)
	return err
}

// Delete removes key.
func (d *DB) Delete(key []byte, wo *WriteOptions) error {
	if err := checkBatchGrowth(0, 0, len(key), 0, false); err != nil {
		return err
	}
	b := batchPool.Get().(*batch.Batch)
	b.Reset()
	b.Delete(key)
	err := d.write(b, wo)
	batchPool.Put(b)
	return err
}

// DeleteRange removes every key in [start, end). start > end is
// ErrInvalidArgument; start == end is a no-op.
func (d *DB) DeleteRange(start, end []byte, wo *WriteOptions) error {
	if base.CompareUser(start, end) > 0 {
		return errors.Wrapf(ErrInvalidArgument, "strata: DeleteRange start %q > end %q", start, end)
	}
	if err := checkBatchGrowth(0, 0, len(start), len(end), true); err != nil {
		return err
	}
	b := batchPool.Get().(*batch.Batch)
	b.Reset()
	b.DeleteRange(start, end)
	err := d.write(b, wo)
	batchPool.Put(b)
	return err
}

var batchPool = sync.Pool{New: func() any { return new(batch.Batch) }}

// maxBatchArena is the largest arenaNeed a batch may have: a batch is
// applied to one memtable whole, and a memtable's arena has at most
// memtable.MaxArenaSize bytes. The bound also keeps every length a batch
// encodes (varint32 in RocksDB's layout) and its record count (a uint32)
// in range. Only tests change it (to reach it cheaply).
var maxBatchArena int64 = memtable.MaxArenaSize - memtable.EmptySize

// perRecordArena is the arena space a record takes beyond its key and value
// bytes: a node with the tallest tower and a trailer.
var perRecordArena = int64(memtable.SizeFor(base.TrailerLen, 0) - memtable.EmptySize)

// batchSlack bounds a record's encoding beyond its key and value bytes (a
// tag and two varints) plus the batch header.
const batchSlack = batch.HeaderLen + 1 + 2*binary.MaxVarintLen64

// checkBatchGrowth returns an ErrInvalidArgument error naming the sizes when
// a batch of curLen encoded bytes and count records would pass maxBatchArena
// with one more record of keyLen and valueLen bytes (hasValue: the record
// encodes a second string, a value or a range end). The fast path bounds the
// record's encoding from above; batchGrowthError decides exactly.
func checkBatchGrowth(curLen int, count uint32, keyLen, valueLen int, hasValue bool) error {
	if batchFits(curLen, count, keyLen+valueLen) {
		return nil
	}
	return batchGrowthError(curLen, count, keyLen, valueLen, hasValue)
}

// batchFits is the inlinable fast path of checkBatchGrowth.
func batchFits(curLen int, count uint32, kvLen int) bool {
	return int64(curLen+kvLen)+int64(count+1)*perRecordArena+batchSlack <= maxBatchArena
}

//go:noinline
func batchGrowthError(curLen int, count uint32, keyLen, valueLen int, hasValue bool) error {
	n := int64(curLen)
	if n == 0 {
		n = batch.HeaderLen
	}
	n += 1 + int64(uvarintLen(keyLen)) + int64(keyLen)
	if hasValue {
		n += int64(uvarintLen(valueLen)) + int64(valueLen)
	}
	need := n + (int64(count)+1)*perRecordArena
	if need <= maxBatchArena && keyLen >= 0 && valueLen >= 0 {
		return nil
	}
	return errors.Wrapf(ErrInvalidArgument,
		"strata: batch too large: adding a record of a %d-byte key and a %d-byte value to %d records (%d bytes) needs %d memtable bytes, above the limit of %d",
		keyLen, valueLen, count, curLen, need, maxBatchArena)
}

func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

func (d *DB) write(b *batch.Batch, wo *WriteOptions) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if d.opts.ReadOnly {
		return errors.Wrap(ErrReadOnly, "strata: write to a read-only database")
	}
	if wo != nil && wo.Sync && wo.DisableWAL {
		// As RocksDB: there is no log to sync.
		return errors.Wrap(ErrInvalidArgument, "strata: WriteOptions Sync and DisableWAL together: a synced write needs the WAL")
	}
	if b.Count() == 0 {
		return nil
	}
	if need := arenaNeed(b); int64(need) > maxBatchArena {
		// The public entry points refuse such batches before building
		// them; this keeps the memtable limit an error whatever the path.
		return errors.Wrapf(ErrInvalidArgument, "strata: batch of %d bytes and %d records needs %d memtable bytes, above the limit of %d",
			b.Len(), b.Count(), need, maxBatchArena)
	}
	w := writerPool.Get().(*writer)
	*w = writer{b: b}
	if wo != nil {
		w.sync, w.disableWAL = wo.Sync, wo.DisableWAL
	}
	err := d.commitWrite(w)
	writerPool.Put(w)
	return err
}

// applyBatch inserts the records of b, numbered from seq, into mem and
// returns the last sequence number used.
// With concurrent, points go in through AddConcurrent (b must then hold no
// range deletion).
func applyBatch(mem *memtable.MemTable, b *batch.Batch, seq base.SeqNum, concurrent bool) (base.SeqNum, error) {
	r, err := batch.NewReader(b.Data())
	if err != nil {
		return 0, err
	}
	for {
		kind, key, value, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		switch kind {
		case base.KindRangeDelete:
			if base.CompareUser(key, value) < 0 {
				if err := mem.AddRangeDel(base.Tombstone{Start: key, End: value, Seq: seq}); err != nil {
					return 0, errors.Wrapf(err, "strata: memtable insert of range deletion [%q, %q)", key, value)
				}
			}
		default:
			add := mem.Add
			if concurrent {
				add = mem.AddConcurrent
			}
			if err := add(base.MakeInternalKey(key, seq, kind), value); err != nil {
				return 0, errors.Wrapf(err, "strata: memtable insert of %q", key)
			}
		}
		seq++
	}
	return seq - 1, nil
}

// arenaNeed estimates the arena bytes a batch takes in a memtable.
func arenaNeed(b *batch.Batch) int {
	// Per record: a node with the tallest tower and a trailer; the key and
	// value bytes are within b.Len().
	return b.Len() + int(b.Count())*int(perRecordArena)
}
