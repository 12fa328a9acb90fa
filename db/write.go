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

// Write applies the batch atomically, across every family it names. The
// batch's slices must stay untouched until Write returns. A batch that names
// a dropped family, or one of another database, applies nothing and returns
// an error wrapping ErrInvalidArgument.
func (d *DB) Write(b *Batch, wo *WriteOptions) error {
	if b == nil {
		return errors.Wrap(ErrInvalidArgument, "strata: nil batch")
	}
	if b.err != nil {
		return b.err
	}
	if len(b.fams) == 0 {
		if b.hasMerge && d.def.opts.MergeOperator == nil {
			return errMergeWithoutOperator
		}
		if d.def.opts.TTL > 0 {
			tb, err := d.ttlBatch(&b.b, []*ColumnFamily{d.def})
			if err != nil {
				return err
			}
			return d.write(tb, wo, d.def, nil)
		}
		return d.write(&b.b, wo, d.def, nil)
	}
	if err := d.checkOpen(); err != nil {
		return err
	}
	for _, f := range b.fams {
		if err := f.cf.check(d); err != nil {
			return err
		}
		if f.merge && f.cf.opts.MergeOperator == nil {
			return errors.Wrapf(errMergeWithoutOperator, "strata: column family %q", f.cf.name)
		}
	}
	if b.hasMerge && d.def.opts.MergeOperator == nil {
		return errMergeWithoutOperator
	}
	fams := make([]*ColumnFamily, 0, len(b.fams)+1)
	if b.usesDefault {
		fams = append(fams, d.def)
	}
	ttl := false
	for _, f := range b.fams {
		fams = append(fams, f.cf)
	}
	for _, cf := range fams {
		ttl = ttl || cf.opts.TTL > 0
	}
	bb := &b.b
	if ttl {
		var err error
		if bb, err = d.ttlBatch(bb, fams); err != nil {
			return err
		}
	}
	if !b.usesDefault && len(b.fams) == 1 {
		return d.write(bb, wo, b.fams[0].cf, nil)
	}
	return d.write(bb, wo, nil, fams)
}

// Put sets key to value in the default family.
func (d *DB) Put(key, value []byte, wo *WriteOptions) error { return d.def.Put(key, value, wo) }

// Delete removes key from the default family.
func (d *DB) Delete(key []byte, wo *WriteOptions) error { return d.def.Delete(key, wo) }

// DeleteRange removes every key in [start, end) from the default family.
// start > end is ErrInvalidArgument; start == end is a no-op.
func (d *DB) DeleteRange(start, end []byte, wo *WriteOptions) error {
	return d.def.DeleteRange(start, end, wo)
}

// Put sets key to value in the family.
func (cf *ColumnFamily) Put(key, value []byte, wo *WriteOptions) error {
	if err := checkBatchGrowth(0, 0, len(key), len(value), true); err != nil {
		return err
	}
	if cf != nil && cf.opts.TTL > 0 {
		value = appendTTL(value, cf.d.nowUnix())
	}
	b := batchPool.Get().(*batch.Batch)
	b.Reset()
	b.PutCF(cf.id, key, value)
	err := cf.write(b, wo)
	batchPool.Put(b)
	return err
}

// Delete removes key from the family.
func (cf *ColumnFamily) Delete(key []byte, wo *WriteOptions) error {
	if err := checkBatchGrowth(0, 0, len(key), 0, false); err != nil {
		return err
	}
	b := batchPool.Get().(*batch.Batch)
	b.Reset()
	b.DeleteCF(cf.id, key)
	err := cf.write(b, wo)
	batchPool.Put(b)
	return err
}

// DeleteRange removes every key in [start, end) from the family. start >
// end is ErrInvalidArgument; start == end is a no-op.
func (cf *ColumnFamily) DeleteRange(start, end []byte, wo *WriteOptions) error {
	if cf.cmp.CompareUser(start, end) > 0 {
		return errors.Wrapf(ErrInvalidArgument, "strata: DeleteRange start %q > end %q", start, end)
	}
	if err := checkBatchGrowth(0, 0, len(start), len(end), true); err != nil {
		return err
	}
	b := batchPool.Get().(*batch.Batch)
	b.Reset()
	b.DeleteRangeCF(cf.id, start, end)
	err := cf.write(b, wo)
	batchPool.Put(b)
	return err
}

// write writes b, whose records all belong to cf.
func (cf *ColumnFamily) write(b *batch.Batch, wo *WriteOptions) error {
	if cf == nil {
		return errors.Wrap(ErrInvalidArgument, "strata: nil column family")
	}
	d := cf.d
	if cf.dropped.Load() {
		if err := d.checkOpen(); err != nil {
			return err
		}
		return errors.Wrapf(ErrInvalidArgument, "strata: column family %q (id %d) was dropped", cf.name, cf.id)
	}
	return d.write(b, wo, cf, nil)
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

// write runs b through the commit pipeline: every record of b belongs to cf,
// or, with cf nil, to one of fams (a batch over several families).
func (d *DB) write(b *batch.Batch, wo *WriteOptions, cf *ColumnFamily, fams []*ColumnFamily) error {
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
	*w = writer{b: b, cf: cf, fams: fams}
	if wo != nil {
		w.sync, w.disableWAL = wo.Sync, wo.DisableWAL
	}
	err := d.commitWrite(w)
	writerPool.Put(w)
	return err
}

// applyBatch inserts the records of b, numbered from seq, into mem and
// returns the last sequence number used. Every record of b belongs to mem's
// family.
// With concurrent, points go in through AddConcurrent (b must then hold no
// range deletion).
func applyBatch(mem *memtable.MemTable, b *batch.Batch, seq base.SeqNum, concurrent bool) (base.SeqNum, error) {
	r, err := batch.NewReader(b.Data())
	if err != nil {
		return 0, err
	}
	for {
		_, kind, key, value, err := r.NextCF()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		if err := applyRecord(mem, kind, key, value, seq, concurrent); err != nil {
			return 0, err
		}
		seq++
	}
	return seq - 1, nil
}

// applyRecord inserts one record at seq into mem.
func applyRecord(mem *memtable.MemTable, kind base.Kind, key, value []byte, seq base.SeqNum, concurrent bool) error {
	switch kind {
	case base.KindRangeDelete:
		if mem.Comparer().CompareUser(key, value) < 0 {
			if err := mem.AddRangeDel(base.Tombstone{Start: key, End: value, Seq: seq}); err != nil {
				return errors.Wrapf(err, "strata: memtable insert of range deletion [%q, %q)", key, value)
			}
		}
	default:
		add := mem.Add
		if concurrent {
			add = mem.AddConcurrent
		}
		if err := add(base.MakeInternalKey(key, seq, kind), value); err != nil {
			return errors.Wrapf(err, "strata: memtable insert of %q", key)
		}
	}
	return nil
}

// applyBatchFamilies inserts the records of b, numbered from seq, each into
// the mutable memtable of its family among fams, through the single-writer
// path.
func applyBatchFamilies(fams []*ColumnFamily, b *batch.Batch, seq base.SeqNum) error {
	r, err := batch.NewReader(b.Data())
	if err != nil {
		return err
	}
	for {
		id, kind, key, value, err := r.NextCF()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var cf *ColumnFamily
		for _, f := range fams {
			if f.id == id {
				cf = f
				break
			}
		}
		if cf == nil {
			return errors.AssertionFailedf("strata: batch record for column family %d, which the batch does not name", id)
		}
		if err := applyRecord(cf.mu.mem.MemTable, kind, key, value, seq, false); err != nil {
			return err
		}
		seq++
	}
}

// arenaNeed estimates the arena bytes a batch takes in a memtable.
func arenaNeed(b *batch.Batch) int {
	// Per record: a node with the tallest tower and a trailer; the key and
	// value bytes are within b.Len().
	return b.Len() + int(b.Count())*int(perRecordArena)
}
