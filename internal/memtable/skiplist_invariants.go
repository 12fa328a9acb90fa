package memtable

import (
	"encoding/binary"
	"fmt"
)

// checkInsert panics unless node nd, just linked in, sits strictly between
// its neighbours at every level of its tower, in internal-key order, and
// the level-0 back link agrees. It runs after each insert in builds with
// the invariants tag.
func (s *skiplist) checkInsert(nd uint32, height int) {
	key, trailer := s.checkNeighbours(nd, height)
	if next := s.next(nd, 0); s.prev(next) != nd {
		panic(fmt.Sprintf("memtable: skiplist: back link of the node after %q#%x is wrong", key, trailer))
	}
}

// checkNeighbours panics unless node nd, of the given height, comes after
// its back link and before its successor on every level of its tower. It
// returns nd's key and trailer.
func (s *skiplist) checkNeighbours(nd uint32, height int) (key []byte, trailer uint64) {
	key, trailer = s.key(nd), s.trailer(nd)
	if p := s.prev(nd); p != s.head && !s.before(p, key, trailer) {
		panic(fmt.Sprintf("memtable: skiplist: %q#%x inserted after %q#%x", key, trailer, s.key(p), s.trailer(p)))
	}
	for level := 0; level < height; level++ {
		if next := s.next(nd, level); next != s.tail && s.before(next, key, trailer) {
			panic(fmt.Sprintf("memtable: skiplist: %q#%x inserted before %q#%x at level %d",
				key, trailer, s.key(next), s.trailer(next), level))
		}
		if w := s.link(nd, level); w != s.linkTo(uint32(w)) {
			panic(fmt.Sprintf("memtable: skiplist: the link of %q#%x at level %d has a wrong summary", key, trailer, level))
		}
	}
	return key, trailer
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
		if s.link(sp.preds[level], level) != linkWord(sp.succs[level], sp.sums[level]) {
			return fmt.Sprintf("hint pair on level %d is not adjacent, or its summary is wrong", level)
		}
	}
	return ""
}

// checkInsertConcurrent is checkInsert for a node that insertConcurrent
// just linked while other inserters may still be linking theirs: the node
// after nd at level 0 may already have a newer node before it, so its back
// link is only required to name nd or a node after nd. It also checks that
// nd is reachable at level 0 from its own back link and that the list's
// height covers its tower.
func (s *skiplist) checkInsertConcurrent(nd uint32, height int) {
	key, trailer := s.checkNeighbours(nd, height)
	if next := s.next(nd, 0); next != s.tail {
		if p := s.prev(next); p != nd && s.before(p, key, trailer) {
			panic(fmt.Sprintf("memtable: skiplist: back link of the node after %q#%x points before it", key, trailer))
		}
	}
	if int(s.height.Load()) < height {
		panic(fmt.Sprintf("memtable: skiplist: height %d below the tower of %q#%x (%d)", s.height.Load(), key, trailer, height))
	}
}

// checkList returns why the list is not well formed, or "" when it is: on
// every level the nodes are in strictly increasing order and each node of
// level i+1 is on level i, no node is linked above its tower or the list's
// height, and walking back links from tail visits exactly the nodes of
// level 0 in reverse. It must not run concurrently with writers; tests call
// it after concurrent inserts.
func (s *skiplist) checkList() string {
	h := int(s.height.Load())
	var fwd []uint32
	for nd := s.next(s.head, 0); nd != s.tail; nd = s.next(nd, 0) {
		if len(fwd) > 0 {
			if p := fwd[len(fwd)-1]; !s.before(p, s.key(nd), s.trailer(nd)) {
				return fmt.Sprintf("level 0: %q#%x not before %q#%x", s.key(p), s.trailer(p), s.key(nd), s.trailer(nd))
			}
		}
		fwd = append(fwd, nd)
	}
	onLevel := make(map[uint32]bool, len(fwd))
	pos := make(map[uint32]int, len(fwd)+1)
	pos[s.head] = -1
	for i, nd := range fwd {
		onLevel[nd] = true
		pos[nd] = i
	}
	pos[s.tail] = len(fwd)
	for i, nd := range append(fwd, s.tail) {
		// The raw back link, before prev corrects its lag: a node before.
		if p, ok := pos[s.a.load32(nd+nodePrev)]; !ok || p >= i {
			return fmt.Sprintf("node %d of level 0 has a back link to a node not before it", i)
		}
	}
	for level := 0; level < maxHeight; level++ {
		for nd := s.head; nd != s.tail; nd = s.next(nd, level) {
			if w := s.link(nd, level); w != s.linkTo(uint32(w)) {
				return fmt.Sprintf("level %d: a link names %q with a wrong summary", level, s.key(uint32(w)))
			}
		}
	}
	for level := 1; level < maxHeight; level++ {
		next := make(map[uint32]bool)
		prev := s.head
		for nd := s.next(s.head, level); nd != s.tail; nd = s.next(nd, level) {
			if level >= h {
				return fmt.Sprintf("level %d at or above the height %d has nodes", level, h)
			}
			if !onLevel[nd] {
				return fmt.Sprintf("level %d: %q#%x is not on level %d", level, s.key(nd), s.trailer(nd), level-1)
			}
			if int(binary.LittleEndian.Uint32(s.a.buf[nd+nodeHeight:])) <= level {
				return fmt.Sprintf("level %d: %q#%x is linked above its tower", level, s.key(nd), s.trailer(nd))
			}
			if prev != s.head && !s.before(prev, s.key(nd), s.trailer(nd)) {
				return fmt.Sprintf("level %d: out of order at %q#%x", level, s.key(nd), s.trailer(nd))
			}
			next[nd] = true
			prev = nd
		}
		onLevel = next
	}
	i := len(fwd) - 1
	for nd := s.prev(s.tail); nd != s.head; nd = s.prev(nd) {
		if i < 0 || fwd[i] != nd {
			return "walking back links does not give the reverse of the forward walk"
		}
		i--
	}
	if i != -1 {
		return fmt.Sprintf("walking back links missed %d nodes", i+1)
	}
	return ""
}
