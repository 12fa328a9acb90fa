package main

import "fmt"

// seekRandom is db_bench's seekrandom: per op a new iterator, one Seek to a
// random key (one draw), "found" when it lands exactly on that key, then up
// to -seek_nexts Next calls whose keys and values are read.
//
// Prefix semantics: db_bench's iterators run in RocksDB's prefix seek mode
// whenever a prefix extractor is set and -total_order_seek is false, which
// in practice confines a Seek to the seek key's prefix. Our engine has no
// such mode (it always iterates in total order unless PrefixSameAsStart),
// so to do the same work we set PrefixSameAsStart in that case, as well as
// when -prefix_same_as_start asks for it. -total_order_seek sets
// TotalOrderSeek (no prefix filters).
func (b *bench) seekRandom(t *threadState) error {
	ro := b.seekReadOpts()
	key := make([]byte, b.keySize)
	var valueBuf [256]byte
	var read, found, nbytes int64
	d := b.newDuration(b.cfg.duration, b.reads)
	for !d.done(1) {
		n := b.randomKey(t, key)
		var it iter
		if b.fams != nil {
			it = b.cfe.NewIteratorCF(b.fams.of(n), ro)
		} else {
			it = b.eng.NewIterator(ro)
		}
		it.Seek(key)
		read++
		if it.Valid() && equalKey(it.Key(), key) {
			found++
		}
		for j := 0; j < b.cfg.seekNexts && it.Valid(); j++ {
			v := it.Value()
			copy(valueBuf[:], v)
			nbytes += int64(len(it.Key()) + len(v))
			it.Next()
		}
		if err := closeIter(it); err != nil {
			return err
		}
		t.stats.finishedOps(1, opSeek)
	}
	t.stats.bytes += nbytes
	t.stats.addMessage(fmt.Sprintf("(%d of %d found)\n", found, read))
	return nil
}

// seekReadOpts returns the read options of seekrandom's iterators.
func (b *bench) seekReadOpts() readOpts {
	c := b.cfg
	return readOpts{
		prefixSameAsStart: c.prefixSameAsStart || (c.prefixSize > 0 && !c.totalOrderSeek),
		totalOrderSeek:    c.totalOrderSeek,
	}
}
