package iterator

import "fmt"

// checkHeap panics unless the heap is ordered for the current direction
// and every cached key is its child's current key. It runs after each
// heap change in builds with the invariants tag.
func (m *Merging) checkHeap() {
	for i, c := range m.heap {
		if got := m.items[c].iter.Key(); m.cmp.InternalCompare(got, m.items[c].key) != 0 {
			panic(fmt.Sprintf("iterator: merging: child %d's cached key %s is not its key %s", c, m.items[c].key, got))
		}
		if i > 0 && m.less(c, m.heap[(i-1)/2]) {
			panic(fmt.Sprintf("iterator: merging: heap out of order at %d (dir %d): child %d (%s) above child %d (%s)",
				i, m.dir, m.heap[(i-1)/2], m.items[m.heap[(i-1)/2]].key, c, m.items[c].key))
		}
	}
	if s := m.second; s != 0 {
		if s > 2 || s >= len(m.heap) {
			panic(fmt.Sprintf("iterator: merging: runner-up position %d in a heap of %d", s, len(m.heap)))
		}
		if o := 3 - s; o < len(m.heap) && m.less(m.heap[o], m.heap[s]) {
			panic(fmt.Sprintf("iterator: merging: cached runner-up at %d (child %d) loses to child %d",
				s, m.heap[s], m.heap[o]))
		}
	}
}
