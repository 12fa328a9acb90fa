package db

import "github.com/stratadb/strata/internal/batch"

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
	// hasMerge: the batch holds a merge operand (Write refuses it when no
	// merge operator is configured).
	hasMerge bool
}

// NewBatch returns an empty batch.
func NewBatch() *Batch { return &Batch{} }

// Put adds a write of value under key.
func (b *Batch) Put(key, value []byte) {
	if b.refuse(len(key), len(value), true) {
		return
	}
	b.b.Put(key, value)
}

// Delete adds a deletion of key.
func (b *Batch) Delete(key []byte) {
	if b.refuse(len(key), 0, false) {
		return
	}
	b.b.Delete(key)
}

// DeleteRange adds a deletion of every key in [start, end). An empty or
// inverted range deletes nothing.
func (b *Batch) DeleteRange(start, end []byte) {
	if b.refuse(len(start), len(end), true) {
		return
	}
	b.b.DeleteRange(start, end)
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
func (b *Batch) Reset() { b.b.Reset(); b.err, b.hasMerge = nil, false }
