package table

import (
	"bytes"
	"encoding/binary"

	"github.com/stratadb/strata/internal/base"
)

// keyPrefixes narrows the binary search of a pinned index block (or
// partition) before any of its keys is read. For each restart point it keeps
// the 8 bytes of the restart key's user key that follow the prefix every
// user key in the block shares, big-endian and zero-padded: that maps user
// keys to integers without inverting their order, so a restart whose
// integer is below the target's holds a smaller key and one above it a
// larger key. A seek then compares full keys only among the restarts whose
// integer ties with the target's, usually none or one, instead of probing
// keys scattered over a block of hundreds of kilobytes (a cache miss each).
//
// Invariant: len(p) is the block's number of restarts, and every restart
// key's user key starts with common.
type keyPrefixes struct {
	common []byte
	p      []uint64
}

// minPrefixRestarts is the number of restarts below which a block is
// searched directly: the array would not save a cache miss.
const minPrefixRestarts = 32

// prefixAfter returns the 8 bytes of ukey after its first skip bytes as a
// big-endian integer, zero-padded.
func prefixAfter(ukey []byte, skip int) uint64 {
	if len(ukey) >= skip+8 {
		return binary.BigEndian.Uint64(ukey[skip:])
	}
	var b [8]byte
	if skip < len(ukey) {
		copy(b[:], ukey[skip:])
	}
	return binary.BigEndian.Uint64(b[:])
}

// userPart returns the part of a key of it that orders first: the user key
// of an internal key (empty for a key shorter than a trailer, as
// base.CompareEncoded reads it), the key itself otherwise.
func (i *blockIter) userPart(k []byte) []byte {
	if i.mode != cmpInternal {
		return k
	}
	if n := len(k) - base.TrailerLen; n >= 0 {
		return k[:n]
	}
	return nil
}

// buildKeyPrefixes returns the prefixes of the index block or partition
// block, or nil when the block is small, its comparator is not one the
// prefixes model, or a restart key does not parse (seeks then report the
// corruption).
func (r *Reader) buildKeyPrefixes(block []byte, firstKey bool) *keyPrefixes {
	if !r.cmp.Bytewise {
		return nil // the prefixes model bytewise order only
	}
	var it blockIter
	if !r.initIndexIter(&it, block, firstKey, false) || it.numRestarts < minPrefixRestarts {
		return nil
	}
	n := it.numRestarts
	first, ok1 := it.restartKey(0)
	last, ok2 := it.restartKey(n - 1)
	if !ok1 || !ok2 {
		return nil
	}
	first, last = it.userPart(first), it.userPart(last)
	c := base.SharedPrefixLen(first, last)
	kp := &keyPrefixes{common: bytes.Clone(first[:c]), p: make([]uint64, n)}
	for j := 0; j < n; j++ {
		k, ok := it.restartKey(j)
		if !ok {
			return nil
		}
		u := it.userPart(k)
		if !bytes.HasPrefix(u, kp.common) {
			return nil // unsorted: leave it to the plain search
		}
		kp.p[j] = prefixAfter(u, c)
	}
	return kp
}

// bounds returns the range of restarts [lo, hi] that holds the last restart
// whose key is below a target with user key t (lo when there is none): every
// restart before lo has a smaller key, every one after hi a larger one.
func (kp *keyPrefixes) bounds(t []byte) (lo, hi int) {
	n, c := len(kp.p), len(kp.common)
	if len(t) < c {
		if bytes.Compare(t, kp.common[:len(t)]) <= 0 {
			return 0, 0 // below every key
		}
		return n - 1, n - 1
	}
	switch bytes.Compare(t[:c], kp.common) {
	case -1:
		return 0, 0
	case 1:
		return n - 1, n - 1
	}
	tp := prefixAfter(t, c)
	// a: first restart with a prefix >= tp; b: first with a prefix > tp.
	a, b := 0, n
	for a < b {
		m := int(uint(a+b) >> 1)
		if kp.p[m] < tp {
			a = m + 1
		} else {
			b = m
		}
	}
	b = a
	for e := n; b < e; {
		m := int(uint(b+e) >> 1)
		if kp.p[m] <= tp {
			b = m + 1
		} else {
			e = m
		}
	}
	return max(a-1, 0), max(b-1, 0)
}
