package stress

import "sort"

// keyOrder is the order of one family's key indexes under Config.Compare,
// the DB's key order: position p holds key index idx[p], and index i sits
// at position pos[i]. Every range the runner checks (iterator bounds and
// direction, range deletions, compaction and ingestion ranges, snapshot
// ranges) is a run of positions. Under bytewise order (Compare nil) Key
// keeps index order, the tables are nil and a position is its index.
type keyOrder struct {
	idx, pos []int
}

// newKeyOrder returns the order of keys Key(0..n-1) under cmp (nil:
// bytewise).
func newKeyOrder(n int, cmp func(a, b []byte) int) keyOrder {
	if cmp == nil {
		return keyOrder{}
	}
	o := keyOrder{idx: make([]int, n), pos: make([]int, n)}
	keys := make([][]byte, n)
	for i := range o.idx {
		o.idx[i], keys[i] = i, Key(i)
	}
	sort.SliceStable(o.idx, func(a, b int) bool { return cmp(keys[o.idx[a]], keys[o.idx[b]]) < 0 })
	for p, i := range o.idx {
		o.pos[i] = p
	}
	return o
}

// at is the key index at position p (0 <= p < n).
func (o keyOrder) at(p int) int {
	if o.idx == nil {
		return p
	}
	return o.idx[p]
}

// posOf is the position of key index i.
func (o keyOrder) posOf(i int) int {
	if o.pos == nil {
		return i
	}
	return o.pos[i]
}

// bound is the key that bounds a range at position p, 0 <= p <= n: the
// key there, or for p == n a key after every key: Key(n) under bytewise
// order, nil (no bound) under another.
func (o keyOrder) bound(p, n int) []byte {
	if p < n {
		return Key(o.at(p))
	}
	if o.idx == nil {
		return Key(n)
	}
	return nil
}

// sortedIndexes returns the key indexes base+at(p) of positions [lo, hi)
// of a family whose first index is base, ascending (the order LockKeys
// wants).
func (o keyOrder) sortedIndexes(base, lo, hi int) []int {
	out := make([]int, 0, hi-lo)
	for p := lo; p < hi; p++ {
		out = append(out, base+o.at(p))
	}
	sort.Ints(out)
	return out
}
