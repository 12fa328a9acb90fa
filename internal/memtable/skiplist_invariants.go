package memtable

import "fmt"

// checkInsert panics unless node nd, just linked in, sits strictly between
// its neighbours at every level of its tower, in internal-key order, and
// the level-0 back link agrees. It runs after each insert in builds with
// the invariants tag.
func (s *skiplist) checkInsert(nd uint32, height int) {
	key, trailer := s.key(nd), s.trailer(nd)
	if p := s.prev(nd); p != s.head && !s.before(p, key, trailer) {
		panic(fmt.Sprintf("memtable: skiplist: %q#%x inserted after %q#%x", key, trailer, s.key(p), s.trailer(p)))
	}
	for level := 0; level < height; level++ {
		if next := s.next(nd, level); next != s.tail && s.before(next, key, trailer) {
			panic(fmt.Sprintf("memtable: skiplist: %q#%x inserted before %q#%x at level %d",
				key, trailer, s.key(next), s.trailer(next), level))
		}
	}
	if next := s.next(nd, 0); s.prev(next) != nd {
		panic(fmt.Sprintf("memtable: skiplist: back link of the node after %q#%x is wrong", key, trailer))
	}
}

// checkHint returns why the writer's hint is not the splice just after nd,
// the node of the given height inserted last, or "" when it is. It runs
// after each insert in builds with the invariants tag.
func (s *skiplist) checkHint(nd uint32, height int) string {
	sp := &s.hint
	for level := 0; level < maxHeight; level++ {
		if level < height && sp.preds[level] != nd {
			return fmt.Sprintf("hint pred on level %d is not the new node", level)
		}
		if s.next(sp.preds[level], level) != sp.succs[level] {
			return fmt.Sprintf("hint pair on level %d is not adjacent", level)
		}
	}
	return ""
}
