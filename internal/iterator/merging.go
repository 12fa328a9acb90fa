package iterator

import (
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/invariants"
)

// Merging merges child iterators into one stream in internal-key order.
//
// Order: entries are ordered by (internal key, child index). Equal internal
// keys in two children happen only through misuse (the engine gives every
// version its own sequence number), but the order stays deterministic: a
// forward walk yields the lower child index first, and a backward walk
// yields exactly the reverse of the forward walk.
//
// Invariants, while the last positioning call returned true:
//   - heap holds the indexes of the children that rest on an entry, ordered
//     as a min-heap of (key, index) when dir > 0 and as a max-heap when
//     dir < 0; heap[0] is the current entry.
//   - In the forward direction every child in the heap rests on its first
//     entry after the current position in merged order, and every child not
//     in the heap has no such entry; symmetrically backward. A direction
//     switch re-establishes this for every child but the current one.
//   - items[i].key caches children[i].Key() for every i in the heap, so
//     that comparisons do not call through the interface.
//   - When second >= 1, heap[second] is the runner-up: the first of
//     heap[1] and heap[2] in the current direction. Only the top's key
//     changes while the top keeps winning, so the runner-up stays valid
//     until the heap changes shape; second is 0 (unknown) otherwise.
//
// Fast path: step compares the top's new entry with the cached runner-up
// only. While one child keeps winning (a long run of keys from one level,
// the common case of a sequential scan), that is one comparison a step and
// no heap work; when the top loses, it swaps with the runner-up and sifts
// down from there.
//
// Bounds (SetBounds) and spans (SetSpans): a bounded merge yields only
// entries whose user keys are in [lower, upper), and a child known (by its
// span) to hold no key of the range a positioning call can reach is not
// positioned at all. A child that steps past the bound in the direction of
// travel leaves the heap as if exhausted, so that the heap holds only the
// children that still have entries in range: a bounded scan of a range
// that one child holds runs over that child alone (no runner-up to
// compare), whatever the other children hold around it. The choice is made
// at each positioning call and each direction switch, from the bounds
// then in force, so a cached merge serves iterators of different bounds.
//
// Next, Prev, Key and Value do not allocate.
type Merging struct {
	items []mergeItem
	heap  []int
	dir   int
	err   error
	// second is the heap position (1 or 2) of the runner-up, or 0 when not
	// known.
	second int
	// cmp orders the keys (never nil after Init).
	cmp *base.Comparer
	// lower and upper bound the user keys yielded (nil: none; an empty,
	// non-nil upper yields nothing).
	lower, upper []byte
}

// Span is the user-key range [Smallest, Largest] (both inclusive) outside
// of which a child holds no entry. A child without a span (Smallest and
// Largest nil) may hold any key.
type Span struct {
	Smallest, Largest []byte
}

type mergeItem struct {
	iter Iterator
	// level and kv are iter as a *Level and as a KVNexter (nil when it is
	// not one), found once at Init: a forward step calls the level's
	// NextKV directly, or the child's NextKV, in place of Next and Key
	// through the interface.
	level *Level
	kv    KVNexter
	key   base.InternalKey
	span  Span
	// hasSpan: span is known.
	hasSpan bool
}

var _ Iterator = (*Merging)(nil)

// setKey caches k, the child's new key. A child's successive keys often
// share their memory (a table's keys rebuilt in one buffer): then only the
// length and trailer change, and no pointer is written (a pointer write
// pays the garbage collector's write barrier while it marks).
func (it *mergeItem) setKey(k base.InternalKey) {
	old := it.key.UserKey
	if n := len(k.UserKey); n > 0 && len(old) > 0 && n <= cap(old) && &old[0] == &k.UserKey[0] {
		it.key.UserKey = old[:n]
	} else {
		it.key.UserKey = k.UserKey
	}
	it.key.Trailer = k.Trailer
}

// NewMerging returns a merging iterator over iters, which it owns: Close
// closes them. Keys order by cmp (nil: bytewise).
func NewMerging(cmp *base.Comparer, iters ...Iterator) *Merging {
	m := &Merging{}
	m.Init(cmp, iters...)
	return m
}

// Init resets m to merge iters, reusing m's memory. m must have been closed
// (or never used).
func (m *Merging) Init(cmp *base.Comparer, iters ...Iterator) {
	m.cmp = cmp.OrDefault()
	if cap(m.items) < len(iters) {
		m.items = make([]mergeItem, len(iters))
		m.heap = make([]int, 0, len(iters))
	}
	m.items = m.items[:len(iters)]
	for i, it := range iters {
		m.items[i] = mergeItem{iter: it}
		m.items[i].level, _ = it.(*Level)
		if m.items[i].level == nil {
			m.items[i].kv, _ = it.(KVNexter)
		}
	}
	m.heap = m.heap[:0]
	m.dir = 0
	m.err = nil
	m.second = 0
	m.lower, m.upper = nil, nil
	for i := range m.items {
		// Children reused from an earlier merge drop its bounds.
		if b, ok := m.items[i].iter.(boundsSetter); ok {
			b.SetBounds(nil, nil)
		}
	}
}

// SetSpans records each child's span (spans[i] for child i; a zero Span is
// unknown). It must follow Init; the spans stay until the next Init.
func (m *Merging) SetSpans(spans []Span) {
	for i := range m.items {
		sp := spans[i]
		m.items[i].span, m.items[i].hasSpan = sp, sp.Smallest != nil || sp.Largest != nil
	}
}

// boundsSetter is a child that can use the merge's bounds to avoid work
// outside them (a Level does not open files outside them).
type boundsSetter interface {
	SetBounds(lower, upper []byte)
}

// SetBounds restricts m to the user keys in [lower, upper): nil is no
// bound, an empty non-nil upper bound is before every key. The slices are
// kept, not copied: the caller leaves them unchanged while they are in
// force. Children that implement SetBounds get them too. m is then
// unpositioned: a Seek, First or Last must follow.
//
// With a lower bound, First is SeekGE(lower) and a SeekGE below it seeks
// it; with an upper bound, Last is SeekLT(upper) and a SeekLT past it
// seeks it. Exhaustion in a direction then means no entry in range.
func (m *Merging) SetBounds(lower, upper []byte) {
	m.lower, m.upper = lower, upper
	m.heap = m.heap[:0]
	m.second = 0
	for i := range m.items {
		if b, ok := m.items[i].iter.(boundsSetter); ok {
			b.SetBounds(lower, upper)
		}
	}
}

// outside reports whether child i's span misses every user key k with
// lo <= k < hi (hiIncl: k <= hi); a nil lo or hi is unbounded.
func (m *Merging) outside(i int, lo, hi []byte, hiIncl bool) bool {
	it := &m.items[i]
	if !it.hasSpan {
		return false
	}
	if lo != nil && it.span.Largest != nil && m.cmp.CompareUser(it.span.Largest, lo) < 0 {
		return true
	}
	if hi != nil && it.span.Smallest != nil {
		c := m.cmp.CompareUser(it.span.Smallest, hi)
		return c > 0 || (c == 0 && !hiIncl)
	}
	return false
}

// sameBound reports whether a and b are the same bound: the same slice
// (both nil, or the same memory and length). A level's NextInBounds is
// relative to its own bounds, which are the merge's unless a caller set
// the level's apart.
func sameBound(a, b []byte) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// pastUpper reports whether k is at or past the upper bound.
func (m *Merging) pastUpper(k []byte) bool {
	return m.upper != nil && m.cmp.CompareUser(k, m.upper) >= 0
}

// belowLower reports whether k is before the lower bound.
func (m *Merging) belowLower(k []byte) bool {
	return m.lower != nil && m.cmp.CompareUser(k, m.lower) < 0
}

// less orders two heap entries for the current direction.
func (m *Merging) less(a, b int) bool {
	c := m.cmp.InternalCompare(m.items[a].key, m.items[b].key)
	if c == 0 {
		c = a - b
	}
	if m.dir < 0 {
		return c > 0
	}
	return c < 0
}

func (m *Merging) down(i int) {
	h := m.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && m.less(h[r], h[l]) {
			j = r
		}
		if !m.less(h[j], h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

func (m *Merging) initHeap() {
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
}

// add records the outcome of a positioning call on child i: it joins the
// heap if valid, and its error, if any, is kept.
// A child resting outside the bounds (past upper when dir > 0, before
// lower when dir < 0) stays out of the heap.
func (m *Merging) add(i int, valid bool, dir int) {
	if valid {
		k := m.items[i].iter.Key()
		if (dir > 0 && m.pastUpper(k.UserKey)) || (dir < 0 && m.belowLower(k.UserKey)) {
			return
		}
		m.items[i].key = k
		m.heap = append(m.heap, i)
	} else if err := m.items[i].iter.Error(); err != nil && m.err == nil {
		m.err = err
	}
}

// finish builds the heap after every child was positioned in direction dir.
func (m *Merging) finish(dir int) bool {
	m.dir = dir
	m.second = 0
	if m.err != nil {
		m.heap = m.heap[:0]
		return false
	}
	m.initHeap()
	if invariants.Enabled {
		m.checkHeap()
	}
	return len(m.heap) > 0
}

func (m *Merging) reset() {
	m.heap = m.heap[:0]
	m.err = nil
}

// SeekGE implements Iterator (within the bounds: see SetBounds).
func (m *Merging) SeekGE(key []byte) bool {
	m.reset()
	if m.belowLower(key) {
		key = m.lower
	}
	if m.pastUpper(key) {
		return m.finish(+1)
	}
	for i := range m.items {
		if m.outside(i, key, m.upper, false) {
			continue
		}
		m.add(i, m.items[i].iter.SeekGE(key), +1)
	}
	return m.finish(+1)
}

// SeekLT implements Iterator (within the bounds: see SetBounds).
func (m *Merging) SeekLT(key []byte) bool {
	m.reset()
	if m.upper != nil && m.cmp.CompareUser(key, m.upper) > 0 {
		key = m.upper
	}
	if m.lower != nil && m.cmp.CompareUser(key, m.lower) <= 0 {
		return m.finish(-1)
	}
	for i := range m.items {
		if m.outside(i, m.lower, key, false) {
			continue
		}
		m.add(i, m.items[i].iter.SeekLT(key), -1)
	}
	return m.finish(-1)
}

// First implements Iterator: with a lower bound, SeekGE(lower).
func (m *Merging) First() bool {
	if m.lower != nil {
		return m.SeekGE(m.lower)
	}
	m.reset()
	for i := range m.items {
		if m.outside(i, nil, m.upper, false) {
			continue
		}
		m.add(i, m.items[i].iter.First(), +1)
	}
	return m.finish(+1)
}

// Last implements Iterator: with an upper bound, SeekLT(upper).
func (m *Merging) Last() bool {
	if m.upper != nil {
		return m.SeekLT(m.upper)
	}
	m.reset()
	for i := range m.items {
		if m.outside(i, m.lower, nil, false) {
			continue
		}
		m.add(i, m.items[i].iter.Last(), -1)
	}
	return m.finish(-1)
}

// step moves the current child one entry in direction m.dir and restores
// the heap.
func (m *Merging) step() bool {
	cur := m.heap[0]
	item := &m.items[cur]
	var valid bool
	var k base.InternalKey
	// inBounds: the new entry is known to be below the upper bound (a
	// level stepping within a file that ends below it).
	inBounds := false
	switch {
	case m.dir < 0:
		if valid = item.iter.Prev(); valid {
			k = item.iter.Key()
		}
	case item.level != nil:
		k, _, valid = item.level.NextKV()
		inBounds = item.level.NextInBounds() && sameBound(item.level.upper, m.upper)
	case item.kv != nil:
		k, _, valid = item.kv.NextKV()
	default:
		if valid = item.iter.Next(); valid {
			k = item.iter.Key()
		}
	}
	if valid {
		if (m.dir > 0 && !inBounds && m.pastUpper(k.UserKey)) || (m.dir < 0 && m.belowLower(k.UserKey)) {
			// Out of range: the child has nothing more for this walk.
			return m.pop()
		}
		item.setKey(k)
		h := m.heap
		if len(h) == 1 {
			// The only child left: no heap to restore.
			return true
		}
		s := m.second
		if s == 0 {
			s = 1
			if len(h) > 2 && m.less(h[2], h[1]) {
				s = 2
			}
			m.second = s
		}
		if m.less(cur, h[s]) {
			// The top keeps winning: nothing else in the heap moved.
			if invariants.Enabled {
				m.checkHeap()
			}
			return true
		}
		// The runner-up takes the top; the old top sifts down from the
		// runner-up's place. The heap's shape changes.
		h[0], h[s] = h[s], h[0]
		m.second = 0
		m.down(s)
		if invariants.Enabled {
			m.checkHeap()
		}
		return true
	}
	if err := item.iter.Error(); err != nil {
		m.err = err
		m.heap = m.heap[:0]
		return false
	}
	return m.pop()
}

// pop removes the exhausted top child from the heap.
func (m *Merging) pop() bool {
	last := len(m.heap) - 1
	m.heap[0] = m.heap[last]
	m.heap = m.heap[:last]
	m.second = 0
	if len(m.heap) == 0 {
		return false
	}
	m.down(0)
	if invariants.Enabled {
		m.checkHeap()
	}
	return true
}

// Next implements Iterator. After a false return (the heap is then empty)
// it returns false.
func (m *Merging) Next() bool {
	if len(m.heap) == 0 {
		return false
	}
	if m.dir < 0 {
		return m.switchToForward()
	}
	return m.step()
}

// Prev implements Iterator. After a false return it returns false.
func (m *Merging) Prev() bool {
	if len(m.heap) == 0 {
		return false
	}
	if m.dir > 0 {
		return m.switchToBackward()
	}
	return m.step()
}

// switchToForward repositions every child but the current one on its first
// entry after the current position (key K from child cur), then steps.
func (m *Merging) switchToForward() bool {
	cur := m.heap[0]
	k := m.items[cur].key // owned by child cur, which does not move here
	m.heap = m.heap[:0]
	for i := range m.items {
		if i == cur || m.outside(i, k.UserKey, m.upper, false) {
			continue
		}
		it := m.items[i].iter
		valid := it.SeekGE(k.UserKey)
		for valid && m.before(it.Key(), i, k, cur) {
			valid = it.Next()
		}
		m.add(i, valid, +1)
	}
	m.add(cur, m.items[cur].iter.Next(), +1)
	return m.finish(+1)
}

// switchToBackward repositions every child but the current one on its last
// entry before the current position, then steps.
func (m *Merging) switchToBackward() bool {
	cur := m.heap[0]
	k := m.items[cur].key
	m.heap = m.heap[:0]
	for i := range m.items {
		if i == cur || m.outside(i, m.lower, k.UserKey, true) {
			continue
		}
		// Walk forward from the first version of K's user key to the first
		// entry at or after the current position, then step back one. If the
		// walk runs off the end, the child's last entry is the one; under
		// an upper bound, its last entry before the bound (a child given
		// the bounds, a Level, stops at them, and whatever lies past them
		// is not the merge's).
		it := m.items[i].iter
		valid := it.SeekGE(k.UserKey)
		for valid && m.before(it.Key(), i, k, cur) {
			valid = it.Next()
		}
		if valid {
			valid = it.Prev()
		} else if it.Error() == nil {
			if m.upper != nil {
				valid = it.SeekLT(m.upper)
			} else {
				valid = it.Last()
			}
		}
		m.add(i, valid, -1)
	}
	m.add(cur, m.items[cur].iter.Prev(), -1)
	return m.finish(-1)
}

// before reports whether entry (a, i) precedes entry (b, j) in merged order.
func (m *Merging) before(a base.InternalKey, i int, b base.InternalKey, j int) bool {
	c := m.cmp.InternalCompare(a, b)
	return c < 0 || (c == 0 && i < j)
}

// Key implements Iterator.
func (m *Merging) Key() base.InternalKey { return m.items[m.heap[0]].key }

// Value implements Iterator.
func (m *Merging) Value() []byte {
	it := &m.items[m.heap[0]]
	if it.level != nil {
		return it.level.Value() // a direct call, not through the interface
	}
	return it.iter.Value()
}

// Error implements Iterator.
func (m *Merging) Error() error { return m.err }

// Close closes every child and returns the first error among m's and the
// children's.
func (m *Merging) Close() error {
	err := m.err
	for i := range m.items {
		if cerr := m.items[i].iter.Close(); err == nil {
			err = cerr
		}
		m.items[i] = mergeItem{}
	}
	m.heap = m.heap[:0]
	m.second = 0
	return err
}
