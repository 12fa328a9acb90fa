package main

import (
	"bytes"
	"fmt"
)

// Read benchmarks: readrandom, readmissing (readrandom with keys one byte
// longer, so none exists), multireadrandom, readseq and readreverse. Each
// random Get draws twice (database selector, then the key), a MultiGet
// once per batch plus once per key, as in db_bench.

func (b *bench) readRandom(t *threadState) error {
	key := make([]byte, b.keySize)
	var read, found, nbytes int64
	d := b.newDuration(b.cfg.duration, b.reads)
	for !d.done(1) {
		t.rand.Next() // database selector
		n := b.randomKey(t, key)
		read++
		var v []byte
		var ok bool
		var err error
		if b.fams != nil {
			v, ok, err = b.cfe.GetCF(b.fams.of(n), key)
		} else {
			v, ok, err = b.eng.Get(key)
		}
		if err != nil {
			return fmt.Errorf("Get returned an error: %w", err)
		}
		if ok {
			found++
			nbytes += int64(len(key) + len(v))
		}
		t.stats.finishedOps(1, opRead)
	}
	t.stats.bytes += nbytes
	// db_bench's message ends in a newline, which leaves a blank line.
	t.stats.addMessage(fmt.Sprintf("(%d of %d found)\n", found, read))
	return nil
}

func (b *bench) multiReadRandom(t *threadState) error {
	keys := b.newKeys(b.batch)
	var read, found, nbytes int64
	d := b.newDuration(b.cfg.duration, b.reads)
	for !d.done(b.batch) {
		t.rand.Next() // database selector
		for _, k := range keys {
			b.randomKey(t, k)
		}
		vals, ok, err := b.eng.MultiGet(keys)
		if err != nil {
			return fmt.Errorf("MultiGet returned an error: %w", err)
		}
		read += b.batch
		for i := range keys {
			if ok[i] {
				found++
				nbytes += int64(len(keys[i]) + len(vals[i]))
			}
		}
		t.stats.finishedOps(b.batch, opRead)
	}
	t.stats.bytes += nbytes
	t.stats.addMessage(fmt.Sprintf("(%d of %d found)", found, read))
	return nil
}

func (b *bench) readSeq(t *threadState) error     { return b.scan(t, false) }
func (b *bench) readReverse(t *threadState) error { return b.scan(t, true) }

// scan reads up to -reads entries in key order, or in reverse order; with
// column families, each hot family in turn (see families).
func (b *bench) scan(t *threadState, reverse bool) error {
	ro := readOpts{totalOrderSeek: b.cfg.totalOrderSeek}
	if b.fams == nil {
		_, err := b.scanOne(t, b.eng.NewIterator(ro), reverse, b.reads)
		return err
	}
	left := b.reads
	created := int(b.fams.created.Load())
	for cf := created - b.fams.hot; cf < created && left > 0; cf++ {
		n, err := b.scanOne(t, b.cfe.NewIteratorCF(cf, ro), reverse, left)
		if err != nil {
			return err
		}
		left -= n
	}
	return nil
}

// scanOne reads up to limit entries of it and closes it.
func (b *bench) scanOne(t *threadState, it iter, reverse bool, limit int64) (int64, error) {
	var i, nbytes int64
	if reverse {
		it.SeekToLast()
	} else {
		it.SeekToFirst()
	}
	for ; i < limit && it.Valid(); i++ {
		nbytes += int64(len(it.Key()) + len(it.Value()))
		t.stats.finishedOps(1, opRead)
		if reverse {
			it.Prev()
		} else {
			it.Next()
		}
	}
	t.stats.bytes += nbytes
	return i, closeIter(it)
}

// closeIter closes it and returns its first error.
func closeIter(it iter) error {
	err := it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("iterator error: %w", err)
	}
	return nil
}

// equalKey is bytes.Equal, named for the found checks.
func equalKey(a, b []byte) bool { return bytes.Equal(a, b) }
