package db

import (
	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/batch"
	"github.com/stratadb/strata/internal/memtable"
)

// Batch is a sequence of writes applied atomically by DB.Write, encoded in
// RocksDB's WriteBatch layout. The slices given to its methods are copied.
// A Batch is not safe for concurrent use.
//
// A batch holds at most about 4 GiB (what one memtable can take): a Put,
// Delete or DeleteRange that would pass that limit is not added, the batch
// adds nothing more, and DB.Write returns an ErrInvalidArgument error naming
// the sizes, writing nothing. Reset clears that state.
type Batch struct {
	b batch.Batch
	// err is the first record refused for size; once set the batch stops
	// growing and Write returns it.
	err error
	// hasMerge: the batch holds a merge operand for the default family
	// (Write refuses it when no merge operator is configured).
	hasMerge bool
	// usesDefault: a record names the default family (through the plain
	// methods or its handle).
	usesDefault bool
	// fams are the other families records name, in order of first use.
	fams []batchFamily
	// index is set on an indexed batch (DB.NewIndexedBatch); nil on a
	// plain one, whose methods then pay one nil check for it.
	index *batchIndex
}

// batchFamily is a family a batch's records name, and whether one of them
// is a merge operand.
type batchFamily struct {
	cf    *ColumnFamily
	merge bool
}

// family notes that a record names cf and returns its id; ok is false (and
// the batch refuses further records) for a nil handle.
func (b *Batch) family(cf *ColumnFamily, merge bool) (id uint32, ok bool) {
	if cf == nil {
		if b.err == nil {
			b.err = errors.Wrap(ErrInvalidArgument, "strata: batch record for a nil column family")
		}
		return 0, false
	}
	if cf.id == 0 {
		b.usesDefault = true
		b.hasMerge = b.hasMerge || merge
		return 0, true
	}
	for i := range b.fams {
		if b.fams[i].cf == cf {
			b.fams[i].merge = b.fams[i].merge || merge
			return cf.id, true
		}
	}
	b.fams = append(b.fams, batchFamily{cf: cf, merge: merge})
	return cf.id, true
}

// PutCF adds a write of value under key in family cf.
func (b *Batch) PutCF(cf *ColumnFamily, key, value []byte) {
	if b.refuse(len(key), len(value), true) {
		return
	}
	if id, ok := b.family(cf, false); ok {
		b.b.PutCF(id, key, value)
		if b.index != nil {
			b.indexLast(id, base.KindSet, key, value)
		}
	}
}

// DeleteCF adds a deletion of key in family cf.
func (b *Batch) DeleteCF(cf *ColumnFamily, key []byte) {
	if b.refuse(len(key), 0, false) {
		return
	}
	if id, ok := b.family(cf, false); ok {
		b.b.DeleteCF(id, key)
		if b.index != nil {
			b.indexLast(id, base.KindDelete, key, nil)
		}
	}
}

// DeleteRangeCF adds a deletion of every key in [start, end) in family cf.
func (b *Batch) DeleteRangeCF(cf *ColumnFamily, start, end []byte) {
	if b.refuse(len(start), len(end), true) {
		return
	}
	if id, ok := b.family(cf, false); ok {
		b.b.DeleteRangeCF(id, start, end)
		if b.index != nil {
			b.indexLast(id, base.KindRangeDelete, start, end)
		}
	}
}

// SingleDeleteCF adds a single deletion of key in family cf (see
// DB.SingleDelete).
func (b *Batch) SingleDeleteCF(cf *ColumnFamily, key []byte) {
	if b.refuse(len(key), 0, false) {
		return
	}
	if id, ok := b.family(cf, false); ok {
		b.b.SingleDeleteCF(id, key)
		if b.index != nil {
			b.indexLast(id, base.KindSingleDelete, key, nil)
		}
	}
}

// MergeCF adds a merge operand for key in family cf.
func (b *Batch) MergeCF(cf *ColumnFamily, key, operand []byte) {
	if b.refuse(len(key), len(operand), true) {
		return
	}
	if id, ok := b.family(cf, true); ok {
		b.b.MergeCF(id, key, operand)
		if b.index != nil {
			b.indexLast(id, base.KindMerge, key, operand)
		}
	}
}

// NewBatch returns an empty batch.
func NewBatch() *Batch { return &Batch{} }

// Put adds a write of value under key.
func (b *Batch) Put(key, value []byte) {
	if b.refuse(len(key), len(value), true) {
		return
	}
	b.b.Put(key, value)
	if b.index != nil {
		b.indexLast(0, base.KindSet, key, value)
	}
	b.usesDefault = true
}

// Delete adds a deletion of key.
func (b *Batch) Delete(key []byte) {
	if b.refuse(len(key), 0, false) {
		return
	}
	b.b.Delete(key)
	if b.index != nil {
		b.indexLast(0, base.KindDelete, key, nil)
	}
	b.usesDefault = true
}

// DeleteRange adds a deletion of every key in [start, end). An empty or
// inverted range deletes nothing.
func (b *Batch) DeleteRange(start, end []byte) {
	if b.refuse(len(start), len(end), true) {
		return
	}
	b.b.DeleteRange(start, end)
	if b.index != nil {
		b.indexLast(0, base.KindRangeDelete, start, end)
	}
	b.usesDefault = true
}

// refuse reports whether a record of the given sizes must not be added,
// recording the error for Write.
func (b *Batch) refuse(keyLen, valueLen int, hasValue bool) bool {
	if b.err == nil && batchFits(b.b.Len(), b.b.Count(), keyLen+valueLen) {
		return false
	}
	return b.refuseSlow(keyLen, valueLen, hasValue)
}

func (b *Batch) refuseSlow(keyLen, valueLen int, hasValue bool) bool {
	if b.err != nil {
		return true
	}
	if err := batchGrowthError(b.b.Len(), b.b.Count(), keyLen, valueLen, hasValue); err != nil {
		b.err = err
		return true
	}
	return false
}

// Count returns the number of writes in the batch (a refused one is not
// counted).
func (b *Batch) Count() int { return int(b.b.Count()) }

// Reset empties the batch, keeping its memory, and forgets a refused write.
func (b *Batch) Reset() {
	b.b.Reset()
	b.err, b.hasMerge, b.usesDefault = nil, false, false
	clear(b.fams)
	b.fams = b.fams[:0]
	if b.index != nil {
		b.index.mems = map[uint32]*memtable.MemTable{}
		b.index.saves = nil
	}
}
