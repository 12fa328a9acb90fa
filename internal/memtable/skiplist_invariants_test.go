package memtable

import (
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// TestSkiplist_CheckInsert: the invariants-build check accepts every node
// of a well-formed list and panics on a node linked out of order.
func TestSkiplist_CheckInsert(t *testing.T) {
	m := New(1 << 12)
	for _, k := range []string{"a", "c", "b", "d"} {
		require.NoError(t, m.Add(base.MakeInternalKey([]byte(k), 1, base.KindSet), nil))
	}
	s := m.points
	for nd := s.next(s.head, 0); nd != s.tail; nd = s.next(nd, 0) {
		require.NotPanics(t, func() { s.checkInsert(nd, 1) }, "%q", s.key(nd))
	}
	a := s.next(s.head, 0)
	b := s.next(a, 0)
	c := s.next(b, 0)
	d := s.next(c, 0)
	s.setLink(b, 0, s.linkTo(d)) // b now skips c ...
	s.setLink(a, 0, s.linkTo(c)) // ... and a links to c, so c comes before b
	s.setLink(c, 0, s.linkTo(b))
	s.a.store32(b+nodePrev, c)
	s.a.store32(c+nodePrev, a)
	require.PanicsWithValue(t, `memtable: skiplist: "b"#101 inserted after "c"#101`, func() { s.checkInsert(b, 1) })
	require.Panics(t, func() { s.checkInsert(c, 1) }) // c before b at level 0
}
