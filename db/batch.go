package db

import "github.com/stratadb/strata/internal/batch"

// Batch is a sequence of writes applied atomically by DB.Write, encoded in
// RocksDB's WriteBatch layout. The slices given to its methods are copied.
// A Batch is not safe for concurrent use.
type Batch struct {
	b batch.Batch
}

// NewBatch returns an empty batch.
func NewBatch() *Batch { return &Batch{} }

// Put adds a write of value under key.
func (b *Batch) Put(key, value []byte) { b.b.Put(key, value) }

// Delete adds a deletion of key.
func (b *Batch) Delete(key []byte) { b.b.Delete(key) }

// DeleteRange adds a deletion of every key in [start, end). An empty or
// inverted range deletes nothing.
func (b *Batch) DeleteRange(start, end []byte) { b.b.DeleteRange(start, end) }

// Count returns the number of writes in the batch.
func (b *Batch) Count() int { return int(b.b.Count()) }

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() { b.b.Reset() }
