package table

import (
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/iterator"
)

// Iter walks a table's point entries in internal-key order; it implements
// iterator.Iterator (range tombstones come from Reader.Tombstones).
//
// Invariants: when valid, index rests on the entry of the loaded data
// block (dataH) and data rests on an entry with a key of at least 8 bytes.
// Key's UserKey and Value alias the block (or keyBuf inside data) and stay
// valid until the next positioning call. err is reset by each positioning
// call.
type Iter struct {
	r       *Reader
	index   indexIter
	data    blockIter
	dataH   blockHandle
	loaded  bool
	scratch []byte
	// ownBlocks: every block read without the cache gets a fresh buffer,
	// so values outlive the iterator (Get hands them out).
	ownBlocks bool
	seekBuf   []byte
	err       error
}

var _ iterator.Iterator = (*Iter)(nil)

// NewIter returns an iterator over the table's point entries.
func (r *Reader) NewIter() *Iter {
	it := &Iter{r: r}
	it.index.init(r)
	return it
}

// readDataBlock returns the data block at h, from the cache if possible.
func (it *Iter) readDataBlock(h blockHandle) ([]byte, error) {
	r := it.r
	if c := r.opts.Cache; c != nil {
		if b, ok := c.Get(r.cacheID, h.offset); ok {
			return b, nil
		}
		b, err := r.readRaw(h, nil, true)
		if err != nil {
			return nil, err
		}
		c.Set(r.cacheID, h.offset, b)
		return b, nil
	}
	if it.ownBlocks {
		return r.readRaw(h, nil, true)
	}
	if n := int(h.size) + blockTrailerLen; cap(it.scratch) < n && n <= maxBlockSize {
		it.scratch = make([]byte, n)
	}
	return r.readRaw(h, it.scratch, true)
}

// loadData loads the block the index rests on.
func (it *Iter) loadData() bool {
	h := it.index.handle()
	if it.loaded && h == it.dataH {
		return true
	}
	it.loaded = false
	b, err := it.readDataBlock(h)
	if err != nil {
		it.err = err
		return false
	}
	if !it.data.init(b, base.CompareEncoded) {
		it.err = it.r.corruptf("bad data block at offset %d", h.offset)
		return false
	}
	it.dataH, it.loaded = h, true
	return true
}

// settle checks the data move's result and converts corruption.
func (it *Iter) settle(ok bool) bool {
	if ok {
		if len(it.data.key) < base.TrailerLen {
			it.err = it.r.corruptf("short key in data block at offset %d", it.dataH.offset)
			it.data.invalidate()
			return false
		}
		return true
	}
	if it.data.corrupt && it.err == nil {
		it.err = it.r.corruptf("bad data block at offset %d", it.dataH.offset)
	}
	return false
}

func (it *Iter) indexErr() bool {
	if it.index.err != nil {
		it.err = it.index.err
	}
	return false
}

// forward moves to the first entry of the next non-empty data block.
func (it *Iter) forward() bool {
	for it.err == nil && it.index.next() {
		if !it.loadData() {
			return false
		}
		if it.settle(it.data.first()) {
			return true
		}
	}
	return it.indexErr()
}

// backward moves to the last entry of the previous non-empty data block.
func (it *Iter) backward() bool {
	for it.err == nil && it.index.prev() {
		if !it.loadData() {
			return false
		}
		if it.settle(it.data.last()) {
			return true
		}
	}
	return it.indexErr()
}

// First implements iterator.Iterator.
func (it *Iter) First() bool {
	it.err = nil
	if !it.index.first() {
		return it.indexErr()
	}
	if !it.loadData() {
		return false
	}
	if it.settle(it.data.first()) {
		return true
	}
	return it.err == nil && it.forward()
}

// Last implements iterator.Iterator.
func (it *Iter) Last() bool {
	it.err = nil
	if !it.index.last() {
		return it.indexErr()
	}
	if !it.loadData() {
		return false
	}
	if it.settle(it.data.last()) {
		return true
	}
	return it.err == nil && it.backward()
}

// Next implements iterator.Iterator.
func (it *Iter) Next() bool {
	if it.settle(it.data.next()) {
		return true
	}
	return it.err == nil && it.forward()
}

// Prev implements iterator.Iterator.
func (it *Iter) Prev() bool {
	if it.settle(it.data.prev()) {
		return true
	}
	return it.err == nil && it.backward()
}

// seekTargets encodes the data-block target (ukey, seq, KindSeek) and
// returns it with the index target in the table's index key form.
func (it *Iter) seekTargets(ukey []byte, seq base.SeqNum) (data, index []byte) {
	it.seekBuf = base.MakeInternalKey(ukey, seq, base.KindSeek).Append(it.seekBuf[:0])
	if it.r.userKeyIndex {
		return it.seekBuf, ukey
	}
	return it.seekBuf, it.seekBuf
}

func (it *Iter) seekGE(ukey []byte, seq base.SeqNum) bool {
	it.err = nil
	target, itarget := it.seekTargets(ukey, seq)
	if !it.index.seekGE(itarget) {
		return it.indexErr()
	}
	if !it.loadData() {
		return false
	}
	if it.settle(it.data.seekGE(target)) {
		return true
	}
	return it.err == nil && it.forward()
}

// SeekGE implements iterator.Iterator: the first entry with user key >= key.
func (it *Iter) SeekGE(key []byte) bool { return it.seekGE(key, base.MaxSeqNum) }

// SeekLT implements iterator.Iterator: the last entry with user key < key.
func (it *Iter) SeekLT(key []byte) bool {
	it.err = nil
	target, itarget := it.seekTargets(key, base.MaxSeqNum)
	if !it.index.seekGE(itarget) {
		if it.index.err != nil {
			return it.indexErr()
		}
		return it.Last()
	}
	if !it.loadData() {
		return false
	}
	if it.settle(it.data.seekLT(target)) {
		return true
	}
	return it.err == nil && it.backward()
}

// Key implements iterator.Iterator.
func (it *Iter) Key() base.InternalKey {
	k, _ := base.DecodeInternalKey(it.data.key)
	return k
}

// Value implements iterator.Iterator.
func (it *Iter) Value() []byte { return it.data.val }

// Error implements iterator.Iterator.
func (it *Iter) Error() error { return it.err }

// Close implements iterator.Iterator.
func (it *Iter) Close() error {
	err := it.err
	it.data = blockIter{}
	it.loaded = false
	return err
}

// Get returns the newest entry for ukey visible at snap (seq < snap). It
// does not consult the filter. The value aliases an immutable block and may
// be kept.
func (r *Reader) Get(ukey []byte, snap base.SeqNum) (value []byte, kind base.Kind, seq base.SeqNum, found bool, err error) {
	if snap == 0 {
		return nil, 0, 0, false, nil
	}
	it, _ := r.iterPool.Get().(*Iter)
	if it == nil {
		it = &Iter{r: r, ownBlocks: true}
	}
	it.index.init(r)
	it.loaded = false
	if it.seekGE(ukey, snap-1) {
		k := it.Key()
		if base.CompareUser(k.UserKey, ukey) == 0 {
			value, kind, seq, found = it.Value(), k.Kind(), k.SeqNum(), true
		}
	}
	err = it.err
	it.data.data = nil
	r.iterPool.Put(it)
	if err != nil {
		return nil, 0, 0, false, err
	}
	return value, kind, seq, found, nil
}

// VerifyChecksums reads every block of the table from the file (bypassing
// the cache), verifying checksums and decompressing.
func (r *Reader) VerifyChecksums() error {
	for _, h := range r.metaHandles {
		if _, err := r.readRaw(h, nil, true); err != nil {
			return err
		}
	}
	var x indexIter
	x.init(r)
	for ok := x.first(); ok; ok = x.next() {
		if _, err := r.readRaw(x.handle(), nil, true); err != nil {
			return err
		}
	}
	return x.err
}
