package memtable

import (
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// TestSkiplist_LaggingPrev simulates a reader that runs between the two
// stores of an insert: the new node is linked forward but its successor's
// back link still names the old predecessor. Prev must not skip the node.
func TestSkiplist_LaggingPrev(t *testing.T) {
	m := New(1 << 12)
	for _, k := range []string{"a", "c", "b"} {
		require.NoError(t, m.Add(base.MakeInternalKey([]byte(k), 1, base.KindSet), nil))
	}
	s := m.points
	a := s.next(s.head, 0)
	b := s.next(a, 0)
	c := s.next(b, 0)
	require.Equal(t, "b", string(s.key(b)))
	s.a.store32(c+nodePrev, a) // as before "b" was fully inserted

	var it Iter
	it.Init(m)
	require.True(t, it.Last())
	require.Equal(t, "c", string(it.Key().UserKey))
	require.True(t, it.Prev())
	require.Equal(t, "b", string(it.Key().UserKey))
	require.True(t, it.Prev())
	require.Equal(t, "a", string(it.Key().UserKey))
	require.False(t, it.Prev())
}

// TestSkiplist_Towers checks the structural invariants of the list: every
// level is sorted and a subsequence of the level below, and back links are
// exact once the writer is quiet.
func TestSkiplist_Towers(t *testing.T) {
	m := New(1 << 20)
	for i := 0; i < 5000; i++ {
		k := base.MakeInternalKey([]byte{byte(i * 7), byte(i * 13)}, base.SeqNum(i), base.KindSet)
		require.NoError(t, m.Add(k, nil))
	}
	s := m.points
	require.Greater(t, int(s.height.Load()), 3)
	onLevel0 := map[uint32]bool{}
	for nd, p := s.next(s.head, 0), s.head; ; p, nd = nd, s.next(nd, 0) {
		require.Equal(t, p, s.a.load32(nd+nodePrev))
		if nd == s.tail {
			break
		}
		onLevel0[nd] = true
	}
	require.Len(t, onLevel0, 5000)
	for level := 0; level < maxHeight; level++ {
		prev := uint32(0)
		for nd := s.next(s.head, level); nd != s.tail; nd = s.next(nd, level) {
			require.True(t, onLevel0[nd])
			if prev != 0 {
				pk := base.InternalKey{UserKey: s.key(prev), Trailer: s.trailer(prev)}
				k := base.InternalKey{UserKey: s.key(nd), Trailer: s.trailer(nd)}
				require.Equal(t, -1, base.InternalCompare(pk, k))
			}
			prev = nd
		}
		if level >= int(s.height.Load()) {
			require.Zero(t, prev, "level %d above height has nodes", level)
		}
	}
}
