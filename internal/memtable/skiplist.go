package memtable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"

	"github.com/stratadb/strata/internal/invariants"
)

// maxHeight is the tallest tower a node can have. With a branching factor
// of 4 it keeps searches logarithmic up to 4^16 (about 4 billion) entries,
// far more than a 4 GiB arena can hold.
const maxHeight = 16

// Offsets of the fields of a node, relative to the node's offset. See the
// package comment for the layout.
const (
	nodeTrailer = 0
	nodeKeyLen  = 8
	nodeValLen  = 12
	nodeHeight  = 16
	nodePrev    = 20
	nodeTower   = 24 // next[0], next[1], ... one link word (uint64) per level
)

// nodeSize is the number of arena bytes a node of the given height with the
// given key and value needs, not counting alignment padding.
func nodeSize(height int, keyLen, valueLen uint64) uint64 {
	return nodeTower + 8*uint64(height) + keyLen + valueLen
}

// A link word names the next node on a level: its offset in the low 32 bits
// and the summary of its key (see summarize) in the high 32. A search decides
// which side of a node its key lies on from the summary in the link it
// followed, without loading the node, whenever the two summaries are valid
// and differ; only on a tie does it load the node and compare keys. A
// search is a chain of dependent cache misses, one per node it loads, so
// every node the summaries rule out is a miss saved: the comparisons that
// end a level (the successor is past the key) stop costing one.
// The summary is a function of the node's key, which never changes, so a
// link word changes exactly when its offset does, and compare-and-swap on
// the word is compare-and-swap on the link.
func linkWord(nd, sum uint32) uint64 { return uint64(sum)<<32 | uint64(nd) }

// summaryValid is set in the summary of every key that has one.
const summaryValid = 1 << 31

// summarize returns an order-preserving summary of a user key: for keys a
// and b whose summaries are both valid and differ, a < b exactly when
// summarize(a) < summarize(b). It is 0 (not valid) for keys whose first 7
// bytes, or all bytes, are zero.
//
// Below the valid bit it holds 6-z in 3 bits, where z < 7 is the number of
// leading zero bytes, and the 28 bits after them (key[z:], zero-padded).
// Skipping the zeros keeps the bits that differ: keys that are big-endian
// integers (db_bench's, and many systems' row ids) start with zeros. Order:
// a key with more leading zeros is smaller than one with fewer (at the
// first non-zero byte of the latter the former has a zero, and the former
// is longer than its zeros, so it is not a prefix issue); with z equal, the
// bits after the zeros order the keys as bytes.Compare does unless they are
// equal, as any zero-padded prefix does.
func summarize(key []byte) uint32 {
	z := 0
	for z < len(key) && z < 7 && key[z] == 0 {
		z++
	}
	if z == len(key) || z == 7 {
		return 0
	}
	var b [4]byte
	copy(b[:], key[z:])
	return summaryValid | uint32(6-z)<<28 | binary.BigEndian.Uint32(b[:])>>4
}

// summarize returns the summary of a user key in this list: keys that
// start with the list's summary prefix are summarized after it (so that
// keys sharing a long prefix, such as "user" and digits, still differ in
// their summaries), the others have none. Order holds between keys that
// both have the prefix, the only ones with valid summaries.
func (s *skiplist) summarize(key []byte) uint32 {
	if s.general != nil {
		return 0
	}
	if !bytes.HasPrefix(key, s.pfx) {
		return 0
	}
	return summarize(key[len(s.pfx):])
}

// summaryOrder tells, from the summaries of a node's key (ws) and a search
// key (sum), whether the node sorts before the search key. decided is false
// when only the keys can tell (a summary is not valid, or they tie).
func summaryOrder(ws, sum uint32) (before, decided bool) {
	return ws < sum, ws != sum && ws&sum&summaryValid != 0
}

// skiplist is a sorted linked list with express lanes, stored in an arena.
// Nodes are ordered by internal key: user key ascending, then trailer
// descending.
//
// Thread safety: writers either take turns with insert (callers serialize
// them: one goroutine at a time) or run insertConcurrent, any number at
// once; the two never overlap (callers finish every concurrent insert
// before the next insert, and the other way around). Any number of
// goroutines may search and walk the list at the same time without a lock.
// A node is fully written before it is published by an atomic store (insert)
// or compare-and-swap (insertConcurrent) of its offset into its
// predecessor's next[0]; readers load links atomically, so they see either
// the old or the new link and, in the latter case, the whole node.
//
// Invariants (at every instant, under concurrent inserts too):
//   - head and tail are sentinels of height maxHeight with empty keys; they
//     are never compared. Every level runs from head to tail: head.next[i]
//     is tail on levels no node reaches yet.
//   - On every level, following next from head visits nodes in strictly
//     increasing internal-key order; level i+1 is a subsequence of level i.
//     A link changes only from pred->succ to pred->nd->succ for a new nd
//     between them, so a node once before another stays before it.
//   - A node is linked at level 0 before any higher level, and at level i
//     before level i+1, so a node reachable at some level is reachable at
//     every level below it.
//   - prev (level 0 only) points to a node that precedes the node; it may
//     lag behind concurrent inserts, never ahead. Every store of n.prev
//     names a node that was, at some instant, directly before n at level 0
//     (a concurrent inserter stores its own node into its successor's
//     prev after linking it; a late store may overwrite a newer node's,
//     which only makes the link lag more). Walking next[0] from prev(n)
//     always reaches n.
//   - height only grows (a compare-and-swap maximum under concurrent
//     inserts, raised before the new levels are linked); it is at least
//     the height of every linked node.
//   - Nodes are never removed or changed after publication, except their
//     link words.
type skiplist struct {
	a          *arena
	head, tail uint32
	height     atomic.Uint32 // tallest tower in the list, >= 1
	// pfx is the summary prefix (see summarize), set before the list is
	// shared and never changed: a link's summary depends on it.
	pfx []byte
	// general is the family's user-key order when it is not bytewise, nil
	// for bytewise. Summaries order keys bytewise, so a list with a general
	// order has none (every summary is 0, never decisive) and compares
	// through general. Set before the list is used, never changed.
	general func(a, b []byte) int

	// hint is the splice just after the node the last insert added (or
	// head..tail on every level before the first): preds[i] is the last
	// node at or before it on level i and succs[i] the one after preds[i].
	// Only the writer touches it. Every level of it is always an adjacent
	// pair of the list (the writer is the only one to change links), and
	// the pairs nest: preds[i+1] is at or before preds[i], succs[i+1] at or
	// after succs[i]. So a key that the pair of some level brackets is
	// bracketed on every level above, and insert searches only the levels
	// below the lowest one that brackets it: ascending keys cost O(1).
	hint splice
	// useHint says whether findSplice starts from hint (see there).
	useHint bool
	// hintStale is set by insertConcurrent: nodes were linked that the hint
	// did not see, so its pairs may no longer be adjacent and a search from
	// it could link past them. insert resets the hint before using it.
	// (A flag rather than a counter: the two kinds of insert never overlap,
	// and an inserter only stores it when it reads false, so concurrent
	// inserters do not contend on its cache line.)
	hintStale atomic.Bool
}

// touchBelow loads the node after pred one level down, the node the
// search meets first on that level if it stops at pred on this one, unless
// the summaries already tell that the search will not load it (it sorts
// after the key). Its cache miss then overlaps the comparison on this level
// instead of following it: a search is a chain of dependent cache misses,
// and this takes one link per level out of the chain. It loads the line the
// search reads first: the node's link word on that level when the summary
// says the search moves to the node, its key length otherwise. The load is
// atomic so that the compiler keeps it although its value is unused.
func (s *skiplist) touchBelow(pred uint32, level int, sum uint32) {
	if level > 0 {
		w := s.link(pred, level-1)
		before, decided := summaryOrder(uint32(w>>32), sum)
		switch {
		case !decided:
			s.a.load32(uint32(w) + nodeKeyLen)
		case before:
			s.a.load64(uint32(w) + nodeTower + 8*uint32(level-1))
		}
	}
}

// newSkiplist allocates the two sentinels. ok is false when the arena is
// too small for them.
func newSkiplist(a *arena) (s *skiplist, ok bool) {
	s = &skiplist{a: a}
	if s.head, ok = s.newNode(maxHeight, nil, 0, nil); !ok {
		return nil, false
	}
	if s.tail, ok = s.newNode(maxHeight, nil, 0, nil); !ok {
		return nil, false
	}
	for i := 0; i < maxHeight; i++ {
		s.setLink(s.head, i, linkWord(s.tail, 0))
	}
	a.store32(s.tail+nodePrev, s.head)
	s.height.Store(1)
	for i := range s.hint.preds {
		s.hint.preds[i], s.hint.succs[i] = s.head, s.tail
	}
	return s, true
}

// sentinelBytes is the arena space the sentinels of one list take.
const sentinelBytes = 2 * (nodeTower + 8*maxHeight)

// newNode allocates a node and copies key and value into it. Its links are
// zero. ok is false when it does not fit.
func (s *skiplist) newNode(height int, key []byte, trailer uint64, value []byte) (nd uint32, ok bool) {
	nd, ok = s.a.alloc(nodeSize(height, uint64(len(key)), uint64(len(value))))
	if !ok {
		return 0, false
	}
	s.fillNode(nd, height, key, trailer, value)
	return nd, true
}

// fillNode writes the header, key and value of the node just allocated at
// nd. Its links are zero (the arena is zero beyond its high-water mark).
func (s *skiplist) fillNode(nd uint32, height int, key []byte, trailer uint64, value []byte) {
	b := s.a.buf[nd:]
	binary.LittleEndian.PutUint64(b[nodeTrailer:], trailer)
	binary.LittleEndian.PutUint32(b[nodeKeyLen:], uint32(len(key)))
	binary.LittleEndian.PutUint32(b[nodeValLen:], uint32(len(value)))
	binary.LittleEndian.PutUint32(b[nodeHeight:], uint32(height))
	k := nodeTower + 8*height
	copy(b[k:], key)
	copy(b[k+len(key):], value)
}

func (s *skiplist) trailer(nd uint32) uint64 {
	return binary.LittleEndian.Uint64(s.a.buf[nd+nodeTrailer:])
}

// key returns the user key of nd, aliasing the arena, with its capacity
// limited to its length so that appends cannot overwrite the arena.
func (s *skiplist) key(nd uint32) []byte {
	b := s.a.buf[nd:]
	n := binary.LittleEndian.Uint32(b[nodeKeyLen:])
	h := binary.LittleEndian.Uint32(b[nodeHeight:])
	start := nodeTower + 8*h
	return b[start : start+n : start+n]
}

// value returns the value of nd, aliasing the arena.
func (s *skiplist) value(nd uint32) []byte {
	b := s.a.buf[nd:]
	kn := binary.LittleEndian.Uint32(b[nodeKeyLen:])
	vn := binary.LittleEndian.Uint32(b[nodeValLen:])
	h := binary.LittleEndian.Uint32(b[nodeHeight:])
	start := nodeTower + 8*h + kn
	return b[start : start+vn : start+vn]
}

// link returns nd's link word on level.
func (s *skiplist) link(nd uint32, level int) uint64 {
	return s.a.load64(nd + nodeTower + 8*uint32(level))
}

func (s *skiplist) setLink(nd uint32, level int, w uint64) {
	s.a.store64(nd+nodeTower+8*uint32(level), w)
}

func (s *skiplist) next(nd uint32, level int) uint32 {
	return uint32(s.link(nd, level))
}

// linkTo returns the link word naming nd.
func (s *skiplist) linkTo(nd uint32) uint64 {
	if nd == s.tail {
		return linkWord(nd, 0)
	}
	return linkWord(nd, s.summarize(s.key(nd)))
}

// prev returns the node before nd at level 0, as of now. It corrects a
// back link that lags behind a concurrent insert by walking forward.
func (s *skiplist) prev(nd uint32) uint32 {
	p := s.a.load32(nd + nodePrev)
	for {
		nx := s.next(p, 0)
		if nx == nd {
			return p
		}
		p = nx
	}
}

// before reports whether nd sorts before the internal key (ukey, trailer).
func (s *skiplist) before(nd uint32, ukey []byte, trailer uint64) bool {
	var c int
	if s.general == nil {
		c = bytes.Compare(s.key(nd), ukey)
	} else {
		c = s.general(s.key(nd), ukey)
	}
	return c < 0 || (c == 0 && s.trailer(nd) > trailer)
}

// beforeLink reports whether the node that the link word w names (not tail)
// sorts before (ukey, trailer), whose key's summary is sum: from the
// summaries when they tell, else from the node itself.
func (s *skiplist) beforeLink(w uint64, ukey []byte, sum uint32, trailer uint64) bool {
	if before, decided := summaryOrder(uint32(w>>32), sum); decided {
		return before
	}
	return s.before(uint32(w), ukey, trailer)
}

// seek returns the last node before (ukey, trailer) and the first node not
// before it, at level 0. pred may be head and succ may be tail.
func (s *skiplist) seek(ukey []byte, trailer uint64) (pred, succ uint32) {
	sum := s.summarize(ukey)
	pred = s.head
	for level := int(s.height.Load()) - 1; ; level-- {
		w := s.link(pred, level)
		for succ = uint32(w); succ != s.tail && s.beforeLink(w, ukey, sum, trailer); succ = uint32(w) {
			pred = succ
			w = s.link(pred, level)
		}
		if level == 0 {
			return pred, succ
		}
	}
}

// last returns the last node, or head when the list is empty.
func (s *skiplist) last() uint32 { return s.prev(s.tail) }

// splice holds, for every level, the nodes between which a new key goes,
// and the summary of each succ's key (0 for tail), so that the link word
// naming succs[i] is linkWord(succs[i], sums[i]).
type splice struct {
	preds, succs [maxHeight]uint32
	sums         [maxHeight]uint32
}

// findSplice updates sp, which must be the list's hint, to the splice of
// the internal key (ukey, trailer). Only the writer calls it.
//
// When the last insert's hint bracketed its key on a low level, it keeps the
// levels whose pair still brackets the key and searches down from the lowest
// of them: ascending or descending keys cost O(1) comparisons. Otherwise
// (random keys), checking the hint would only add comparisons, so it
// searches from the top of the list and notes, by comparing node offsets
// only, how low the hint would have bracketed the key.
func (s *skiplist) findSplice(ukey []byte, sum uint32, trailer uint64, sp *splice) {
	h := int(s.height.Load())
	// Search levels below level, on each from pred, stopping at bound at
	// the latest. Levels from h up are head..tail in every splice.
	level, pred, bound := h, s.head, s.tail
	if s.useHint {
		if level, pred, bound = s.bracket(ukey, trailer, sp, h); level == 0 {
			return
		}
	}
	lowest := s.searchBelow(ukey, sum, trailer, sp, level, pred, bound)
	// The hint saves the search of the levels from lowest up, and costs
	// two comparisons on level 0 and a binary search over the levels.
	s.useHint = lowest+2 < h
}

// searchBelow fills the pairs of sp for the levels below level, searching
// each from pred and stopping at bound at the latest; pred must be before
// the key (or head) and bound not before it (or tail), on level-1 and so on
// every level below; sum is the key's summary. It returns the lowest level
// from which the pairs sp held already were the right ones (level when none
// was). It writes only sp, so concurrent inserters may run it on splices of
// their own.
func (s *skiplist) searchBelow(ukey []byte, sum uint32, trailer uint64, sp *splice, level int, pred, bound uint32) (lowest int) {
	lowest = level
	for level--; level >= 0; level-- {
		// bound, the succ of the level above, is on this level too and not
		// before the key: the walk stops there at the latest, without
		// comparing it again.
		w := s.link(pred, level)
		s.touchBelow(pred, level, sum)
		for uint32(w) != bound && s.beforeLink(w, ukey, sum, trailer) {
			pred = uint32(w)
			w = s.link(pred, level)
			s.touchBelow(pred, level, sum)
		}
		succ := uint32(w)
		if sp.preds[level] == pred && sp.succs[level] == succ {
			lowest = level // the old pair was the right one
		}
		sp.preds[level], sp.succs[level], sp.sums[level] = pred, succ, uint32(w>>32)
		bound = succ
	}
	return lowest
}

// bracket finds the lowest level whose pair in sp brackets the key (pred
// before it, succ not before it), where the search of the levels below
// starts. h is the list height. level is 0 when level 0 brackets the key.
//
// The pairs nest, so a level that brackets the key brackets it on every
// level above too, and level 0 tells which side of the splice the key lies
// on: only the bound on that side needs comparing. A binary search over the
// levels then costs O(log maxHeight) comparisons.
func (s *skiplist) bracket(ukey []byte, trailer uint64, sp *splice, h int) (level int, pred, bound uint32) {
	if p := sp.preds[0]; p != s.head && !s.before(p, ukey, trailer) {
		// The key is at or before preds[0]. Level lo's pred is not before
		// the key, level hi brackets it (maxHeight stands for a virtual
		// head..tail level above the top).
		lo, hi := 0, h
		for hi-lo > 1 {
			mid := int(uint(lo+hi) >> 1)
			if q := sp.preds[mid]; q != sp.preds[lo] && (q == s.head || s.before(q, ukey, trailer)) {
				hi = mid
			} else {
				lo = mid
			}
		}
		// preds[lo], on level hi-1, is not before the key: the search of
		// that level stops there at the latest.
		pred = s.head
		if hi < maxHeight {
			pred = sp.preds[hi]
		}
		return hi, pred, sp.preds[lo]
	}
	if n := sp.succs[0]; n != s.tail && s.before(n, ukey, trailer) {
		// The key is after succs[0]: as above, with succs.
		lo, hi := 0, h
		for hi-lo > 1 {
			mid := int(uint(lo+hi) >> 1)
			if q := sp.succs[mid]; q != sp.succs[lo] && (q == s.tail || !s.before(q, ukey, trailer)) {
				hi = mid
			} else {
				lo = mid
			}
		}
		// succs[lo], on level hi-1, is before the key: the search of that
		// level starts there.
		bound = s.tail
		if hi < maxHeight {
			bound = sp.succs[hi]
		}
		return hi, sp.succs[lo], bound
	}
	return 0, 0, 0
}

// insert adds (key, trailer) -> value. It returns errDuplicate when the
// internal key is already present and errFull when the node does not fit;
// the list is unchanged in both cases. Callers serialize insert.
func (s *skiplist) insert(key []byte, trailer uint64, value []byte) error {
	sp := &s.hint
	if s.hintStale.Load() {
		s.resetHint()
	}
	sum := s.summarize(key)
	s.findSplice(key, sum, trailer, sp)
	if s.isKey(sp.succs[0], sp.sums[0], key, sum, trailer) {
		return errDuplicate
	}
	h := randomHeight()
	nd, ok := s.newNode(h, key, trailer, value)
	if !ok {
		return errFull
	}
	for i := 0; i < h; i++ {
		s.setLink(nd, i, linkWord(sp.succs[i], sp.sums[i]))
	}
	s.a.store32(nd+nodePrev, sp.preds[0])
	if uint32(h) > s.height.Load() {
		// Readers that see the new height before the links find
		// head.next == tail on the new levels, which is still correct.
		s.height.Store(uint32(h))
	}
	// Publish bottom-up: once a reader can reach nd at some level, it can
	// reach it at level 0.
	link := linkWord(nd, sum)
	for i := 0; i < h; i++ {
		s.setLink(sp.preds[i], i, link)
		sp.preds[i] = nd // the hint now brackets the keys just after nd
	}
	s.a.store32(sp.succs[0]+nodePrev, nd)
	if invariants.Enabled {
		s.checkInsert(nd, h)
		if err := s.checkHint(nd, h); err != "" {
			panic(fmt.Sprintf("memtable: skiplist: after inserting %q#%x: %s", key, trailer, err))
		}
	}
	return nil
}

// resetHint forgets the hint after concurrent inserts: head..tail on every
// level is a valid splice whatever the list holds, and findSplice then
// searches from the top.
func (s *skiplist) resetHint() {
	for i := range s.hint.preds {
		s.hint.preds[i], s.hint.succs[i], s.hint.sums[i] = s.head, s.tail, 0
	}
	s.useHint = false
	s.hintStale.Store(false)
}

// insertConcurrent is insert for writers that run at the same time as one
// another (and as readers, as always). It allocates with a compare-and-swap,
// searches without the hint, and publishes each level with a
// compare-and-swap on the predecessor's link, level 0 first; when another
// inserter changed that link first, it searches that level again from the
// same predecessor (still before the key: nodes are never removed) and
// retries. It returns errDuplicate when the internal key is present, also
// when a racing inserter adds it first (the node allocated for it then stays
// unreachable in the arena), and errFull when the node does not fit; the list
// is unchanged in both cases.
func (s *skiplist) insertConcurrent(key []byte, trailer uint64, value []byte) error {
	if !s.hintStale.Load() {
		s.hintStale.Store(true)
	}
	var sp splice
	listHeight := int(s.height.Load())
	sum := s.summarize(key)
	s.searchBelow(key, sum, trailer, &sp, listHeight, s.head, s.tail)
	if s.isKey(sp.succs[0], sp.sums[0], key, sum, trailer) {
		return errDuplicate
	}
	h := randomHeight()
	nd, ok := s.a.allocConcurrent(nodeSize(h, uint64(len(key)), uint64(len(value))))
	if !ok {
		return errFull
	}
	s.fillNode(nd, h, key, trailer, value)
	for {
		cur := s.height.Load()
		if uint32(h) <= cur || s.height.CompareAndSwap(cur, uint32(h)) {
			break
		}
	}
	// Levels at or above listHeight were head..tail when we read the
	// height; if that changed, their compare-and-swap fails and they are
	// searched again.
	for i := listHeight; i < h; i++ {
		sp.preds[i], sp.succs[i], sp.sums[i] = s.head, s.tail, 0
	}
	link := linkWord(nd, sum)
	for i := 0; i < h; i++ {
		for {
			pred, old := sp.preds[i], linkWord(sp.succs[i], sp.sums[i])
			s.setLink(nd, i, old)
			if i == 0 {
				s.a.store32(nd+nodePrev, pred)
			}
			if s.a.cas64(pred+nodeTower+8*uint32(i), old, link) {
				break
			}
			pred, w := s.findLevel(key, sum, trailer, pred, i)
			if i == 0 && s.isKey(uint32(w), uint32(w>>32), key, sum, trailer) {
				return errDuplicate
			}
			sp.preds[i], sp.succs[i], sp.sums[i] = pred, uint32(w), uint32(w>>32)
		}
		if i == 0 {
			// succ may since have got a newer node before it, whose
			// inserter may store it after us or may already have: either
			// way succ.prev names a node before succ.
			s.a.store32(sp.succs[0]+nodePrev, nd)
		}
	}
	if invariants.Enabled {
		s.checkInsertConcurrent(nd, h)
	}
	return nil
}

// findLevel walks level from pred, which must sort before the key (or be
// head), to the last node before (ukey, trailer), whose summary is sum; it
// returns that node and its link word on level (naming the node after it).
func (s *skiplist) findLevel(ukey []byte, sum uint32, trailer uint64, pred uint32, level int) (uint32, uint64) {
	w := s.link(pred, level)
	for uint32(w) != s.tail && s.beforeLink(w, ukey, sum, trailer) {
		pred = uint32(w)
		w = s.link(pred, level)
	}
	return pred, w
}

// isKey reports whether nd, which may be tail, has the internal key
// (ukey, trailer); ndSum and sum are the summaries of their user keys. Keys
// with different summaries differ, which spares loading nd.
func (s *skiplist) isKey(nd, ndSum uint32, ukey []byte, sum uint32, trailer uint64) bool {
	return nd != s.tail && ndSum == sum && s.trailer(nd) == trailer && bytes.Equal(s.key(nd), ukey)
}

// randomHeight draws a tower height: 1 with probability 3/4, 2 with 3/16,
// and so on, capped at maxHeight.
func randomHeight() int {
	r := rand.Uint32()
	h := 1
	for h < maxHeight && r&3 == 0 {
		h++
		r >>= 2
	}
	return h
}

// maxEntryBytes is the arena space one entry may need at most, including
// alignment padding, or math.MaxUint64 on overflow.
func maxEntryBytes(keyLen, valueLen int) uint64 {
	if keyLen < 0 || valueLen < 0 || uint64(keyLen) > math.MaxUint32 || uint64(valueLen) > math.MaxUint32 {
		return math.MaxUint64
	}
	return nodeSize(maxHeight, uint64(keyLen), uint64(valueLen)) + arenaAlign - 1
}
