package table

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/stratadb/strata/internal/base"
)

// cmpMode says how a blockIter compares keys: through its cmp function, or
// inline when cmp is known to be the internal-key or bytewise comparator
// (an indirect call per probe costs more than the comparison of short keys).
type cmpMode uint8

const (
	cmpFunc     cmpMode = iota // i.cmp
	cmpInternal                // base.CompareEncoded, inlined
	cmpBytewise                // bytes.Compare
)

// blockIter walks the entries of one uncompressed block. It serves data
// blocks (internal keys, values with value_len), index blocks (values are
// IndexValues: a block handle, possibly delta-encoded and without value_len,
// possibly followed by the block's first key) and meta blocks.
//
// Invariants: data is immutable while the iterator uses it; entries live in
// data[:restartsOff]; init checked that the restart offsets start at 0 and
// increase strictly within that range. When offset >= 0 the iterator rests
// on the entry at offset, key is its full key (aliasing data at restarts,
// else keyBuf) and nextOffset is where the following entry starts. corrupt
// is set on the first malformed byte and the iterator stays invalid until
// re-initialised.
type blockIter struct {
	data        []byte
	restartsOff int
	numRestarts int
	cmp         func(a, b []byte) int
	mode        cmpMode
	// prefixes, when set (pinned index blocks), narrows seekGE's search.
	prefixes *keyPrefixes

	isIndex     bool // values are IndexValues: decode handle
	deltaValues bool // fv >= 4 index form: no value_len; delta sizes
	firstKey    bool // index values carry a length-prefixed first key

	offset     int
	nextOffset int
	key        []byte
	keyBuf     []byte
	// valOff and valEnd delimit the current value in data (offsets, not a
	// slice: a step then writes no pointer, and the garbage collector's
	// write barrier, on while it marks, costs nothing).
	valOff, valEnd int
	handle         blockHandle
	corrupt        bool
}

// init points the iterator at block. It returns false when the restart
// array or footer is malformed.
func (i *blockIter) init(block []byte, cmp func(a, b []byte) int) bool {
	if !i.initTrusted(block, cmp) {
		return false
	}
	if !i.restartsValid() {
		i.corrupt = true
		i.data = nil
		return false
	}
	return true
}

// initTrusted is init for a block whose restart array init has already
// accepted once (index blocks and partitions, checked when the table is
// opened and pinned for its lifetime): it parses the footer in O(1) instead
// of checking every restart offset, which for an index block of thousands
// of entries would cost more than the lookup itself.
func (i *blockIter) initTrusted(block []byte, cmp func(a, b []byte) int) bool {
	*i = blockIter{cmp: cmp, keyBuf: i.keyBuf[:0], isIndex: i.isIndex,
		deltaValues: i.deltaValues, firstKey: i.firstKey, offset: -1}
	if len(block) < 4 {
		i.corrupt = true
		return false
	}
	end := len(block) - 4
	ft := binary.LittleEndian.Uint32(block[end:])
	if ft&(1<<31) != 0 {
		// Data-block hash index: buckets ‖ fixed16 num_buckets before the
		// footer. Readers only need to skip it.
		if end < 2 {
			i.corrupt = true
			return false
		}
		nb := int(binary.LittleEndian.Uint16(block[end-2:]))
		end -= 2 + nb
		ft &^= 1 << 31
	}
	n := int(ft)
	if n < 1 || end < 0 || n > end/4 {
		i.corrupt = true
		return false
	}
	i.data = block
	i.numRestarts = n
	i.restartsOff = end - 4*n
	return true
}

// setMode declares that i.cmp is the comparator mode names, so that seeks
// compare inline. It must follow init and is reset by the next init.
func (i *blockIter) setMode(m cmpMode) { i.mode = m }

// compare orders a and b as i.cmp does.
func (i *blockIter) compare(a, b []byte) int {
	switch i.mode {
	case cmpInternal:
		return compareInternal(a, b)
	case cmpBytewise:
		return bytes.Compare(a, b)
	}
	return i.cmp(a, b)
}

// compareInternal is base.CompareEncoded with the trailer read in place.
func compareInternal(a, b []byte) int {
	na, nb := len(a)-base.TrailerLen, len(b)-base.TrailerLen
	if na < 0 || nb < 0 {
		return base.CompareEncoded(a, b)
	}
	if c := bytes.Compare(a[:na], b[:nb]); c != 0 {
		return c
	}
	ta, tb := binary.LittleEndian.Uint64(a[na:]), binary.LittleEndian.Uint64(b[nb:])
	switch {
	case ta > tb:
		return -1
	case ta < tb:
		return 1
	}
	return 0
}

// restartsValid reports whether the restart offsets start at 0 and increase
// strictly within the entries (an empty block has the single restart 0):
// the binary searches of seekGE and prev land on wrong entries otherwise.
func (i *blockIter) restartsValid() bool {
	prev := -1
	for r := 0; r < i.numRestarts; r++ {
		o := int(binary.LittleEndian.Uint32(i.data[i.restartsOff+4*r:]))
		if o <= prev || (r == 0 && o != 0) || (o >= i.restartsOff && i.restartsOff > 0) {
			return false
		}
		prev = o
	}
	return true
}

func (i *blockIter) valid() bool { return i.offset >= 0 }

// value is the current entry's value, aliasing the block (its capacity
// runs to the block's end).
func (i *blockIter) value() []byte { return i.data[i.valOff:i.valEnd] }

func (i *blockIter) invalidate() { i.offset = -1 }

func (i *blockIter) fail() bool {
	i.corrupt = true
	i.offset = -1
	return false
}

func (i *blockIter) restartOffset(r int) (int, bool) {
	o := int(binary.LittleEndian.Uint32(i.data[i.restartsOff+4*r:]))
	return o, o < i.restartsOff || (o == 0 && i.restartsOff == 0)
}

// uvarint32 decodes a varint32 from the front of b. Entry headers are
// almost always one byte per varint (lengths under 128), so that case is
// inlined ahead of the general decoder.
func uvarint32(b []byte) (int, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return int(b[0]), 1
	}
	v, n := binary.Uvarint(b)
	if n <= 0 || v > math.MaxInt32 {
		return 0, 0
	}
	return int(v), n
}

// decodeAt decodes the entry at off, which must follow the current entry or
// be a restart point (then key must be empty).
func (i *blockIter) decodeAt(off int) bool {
	if off >= i.restartsOff {
		return i.fail()
	}
	p := i.data[off:i.restartsOff]
	shared, n1 := uvarint32(p)
	if n1 == 0 {
		return i.fail()
	}
	p = p[n1:]
	nonShared, n2 := uvarint32(p)
	if n2 == 0 {
		return i.fail()
	}
	p = p[n2:]
	vlen := 0
	if !i.deltaValues {
		var n3 int
		if vlen, n3 = uvarint32(p); n3 == 0 {
			return i.fail()
		}
		p = p[n3:]
	}
	if shared > len(i.key) || nonShared > len(p) {
		return i.fail()
	}
	delta := p[:nonShared]
	p = p[nonShared:]
	i.setKey(shared, delta)
	if i.deltaValues {
		vlen = i.decodeIndexValue(p, shared != 0)
		if vlen < 0 {
			return i.fail()
		}
	} else {
		if vlen > len(p) {
			return i.fail()
		}
		if i.isIndex {
			if h, n := decodeHandle(p[:vlen]); n > 0 {
				i.handle = h
			} else {
				return i.fail()
			}
		}
	}
	i.valOff = i.restartsOff - len(p)
	i.valEnd = i.valOff + vlen
	i.offset = off
	i.nextOffset = i.restartsOff - len(p) + vlen
	return true
}

// setKey makes the current key the first shared bytes of the previous one
// followed by delta. A restart entry (shared 0) aliases the block. When the
// previous key was itself rebuilt in keyBuf, its shared prefix is already
// in place there and only delta is copied after it, with keyBuf and key
// resliced in place (no pointer written, so no write barrier): a run of
// prefix-compressed keys costs one copy of each entry's own bytes, not of
// the whole key.
func (i *blockIter) setKey(shared int, delta []byte) {
	n := shared + len(delta)
	switch {
	case shared == 0:
		i.key = delta
	case len(i.keyBuf) == len(i.key) && len(i.key) > 0 && &i.keyBuf[0] == &i.key[0] && n <= cap(i.keyBuf):
		i.keyBuf = i.keyBuf[:n]
		copy(i.keyBuf[shared:], delta)
		i.key = i.key[:n]
	default:
		i.keyBuf = append(i.keyBuf[:0], i.key[:shared]...)
		i.keyBuf = append(i.keyBuf, delta...)
		i.key = i.keyBuf
	}
}

// nextData is next for a data block (values with value_len, no handle to
// decode). The entry header of almost every entry is two one-byte varints
// (shared and unshared key lengths under 128) and a value length of one
// or two bytes (under 16 KiB): that form is decoded here inline, and any
// other goes through decodeAt.
func (i *blockIter) nextData() bool {
	off := i.nextOffset
	if i.offset < 0 || off >= i.restartsOff {
		i.invalidate()
		return false
	}
	if i.isIndex || i.deltaValues || off+4 > i.restartsOff {
		return i.decodeAt(off)
	}
	h := i.data[off : off+4 : off+4]
	shared, nonShared, vlen := int(h[0]), int(h[1]), int(h[2])
	ks := off + 3
	if vlen >= 0x80 {
		vlen = vlen&0x7f | int(h[3])<<7
		ks++
		if h[3] >= 0x80 {
			return i.decodeAt(off)
		}
	}
	end := ks + nonShared + vlen
	if (h[0]|h[1])&0x80 != 0 || shared > len(i.key) || end > i.restartsOff {
		return i.decodeAt(off)
	}
	i.setKey(shared, i.data[ks:ks+nonShared:ks+nonShared])
	i.valOff, i.valEnd = ks+nonShared, end
	i.offset = off
	i.nextOffset = end
	return true
}

// decodeIndexValue decodes a delta-form IndexValue at the front of p and
// returns its length, or -1.
func (i *blockIter) decodeIndexValue(p []byte, delta bool) int {
	var n int
	if delta {
		d, m := binary.Varint(p)
		if m <= 0 || i.offset < 0 {
			return -1
		}
		prev := i.handle
		size := int64(prev.size) + d
		if size < 0 {
			return -1
		}
		i.handle = blockHandle{offset: prev.offset + prev.size + blockTrailerLen, size: uint64(size)}
		n = m
	} else {
		h, m := decodeHandle(p)
		if m <= 0 {
			return -1
		}
		i.handle, n = h, m
	}
	if i.firstKey {
		l, m := uvarint32(p[n:])
		if m == 0 || l > len(p)-n-m {
			return -1
		}
		n += m + l
	}
	return n
}

func (i *blockIter) first() bool {
	if i.corrupt || i.restartsOff == 0 {
		i.invalidate()
		return false
	}
	i.key = i.key[:0]
	return i.decodeAt(0)
}

func (i *blockIter) next() bool {
	if i.offset < 0 || i.nextOffset >= i.restartsOff {
		i.invalidate()
		return false
	}
	return i.decodeAt(i.nextOffset)
}

// seekRestart decodes the entry at restart point r.
func (i *blockIter) seekRestart(r int) bool {
	off, ok := i.restartOffset(r)
	if !ok {
		return i.fail()
	}
	i.key = i.key[:0]
	i.offset = -1
	return i.decodeAt(off)
}

func (i *blockIter) last() bool {
	if i.corrupt || i.restartsOff == 0 {
		i.invalidate()
		return false
	}
	if !i.seekRestart(i.numRestarts - 1) {
		return false
	}
	for i.nextOffset < i.restartsOff {
		if !i.decodeAt(i.nextOffset) {
			return false
		}
	}
	return true
}

func (i *blockIter) prev() bool {
	cur := i.offset
	if cur <= 0 {
		i.invalidate()
		return false
	}
	// Largest restart strictly before cur.
	lo, hi := 0, i.numRestarts-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		off, ok := i.restartOffset(mid)
		if !ok {
			return i.fail()
		}
		if off < cur {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if !i.seekRestart(lo) {
		return false
	}
	for i.nextOffset < cur {
		if !i.decodeAt(i.nextOffset) {
			return false
		}
	}
	if i.nextOffset != cur {
		return i.fail()
	}
	return true
}

// restartKey returns the key of the entry at restart point r, read in
// place: a restart entry shares no bytes with its predecessor, so the key
// needs neither keyBuf nor the value decoded. ok is false when the entry's
// header or key is malformed (the value is checked when an entry is
// decoded, as every entry a seek lands on is).
func (i *blockIter) restartKey(r int) ([]byte, bool) {
	off, ok := i.restartOffset(r)
	if !ok || off >= i.restartsOff {
		return nil, false
	}
	p := i.data[off:i.restartsOff]
	n := 1
	if p[0] != 0 {
		// A non-canonical varint zero is accepted, as decodeAt does.
		shared, n1 := uvarint32(p)
		if n1 == 0 || shared != 0 {
			return nil, false
		}
		n = n1
	}
	nonShared, n2 := uvarint32(p[n:])
	if n2 == 0 {
		return nil, false
	}
	n += n2
	if !i.deltaValues {
		_, n3 := uvarint32(p[n:])
		if n3 == 0 {
			return nil, false
		}
		n += n3
	}
	if nonShared > len(p)-n {
		return nil, false
	}
	return p[n : n+nonShared], true
}

// seekGE moves to the first entry whose key is >= target under i.cmp.
func (i *blockIter) seekGE(target []byte) bool {
	if i.corrupt || i.restartsOff == 0 {
		i.invalidate()
		return false
	}
	// Last restart whose key is < target, compared on the restart keys in
	// place; only the entries from there on are decoded.
	lo, hi := 0, i.numRestarts-1
	if kp := i.prefixes; kp != nil && len(kp.p) == i.numRestarts {
		lo, hi = kp.bounds(i.userPart(target))
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		k, ok := i.restartKey(mid)
		if !ok {
			return i.fail()
		}
		if i.compare(k, target) < 0 {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return i.scanFrom(lo, target)
}

// scanFrom decodes the entries from restart point r until one whose key is
// >= target.
func (i *blockIter) scanFrom(r int, target []byte) bool {
	if !i.seekRestart(r) {
		return false
	}
	for i.compare(i.key, target) < 0 {
		if !i.next() {
			return false
		}
	}
	return true
}

// seekLT moves to the last entry whose key is < target.
func (i *blockIter) seekLT(target []byte) bool {
	if i.seekGE(target) {
		return i.prev()
	}
	if i.corrupt {
		return false
	}
	return i.last()
}
