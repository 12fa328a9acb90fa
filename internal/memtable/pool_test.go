package memtable

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// A pooled arena is reused only by a memtable of its exact size, and the
// memtable made over it is empty: nothing of the retired one shows through.
func TestArenaPoolReuse(t *testing.T) {
	var p ArenaPool
	m, reused, err := p.Make(64 << 10)
	require.NoError(t, err)
	require.False(t, reused)
	for i := range 200 {
		k := []byte(fmt.Sprintf("key%04d", i))
		require.NoError(t, m.Add(base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), k))
	}
	arena := m.arena
	p.Put(m)
	require.Equal(t, 64<<10, p.PooledBytes())

	other, reused, err := p.Make(32 << 10)
	require.NoError(t, err)
	require.False(t, reused, "a different size allocates")
	require.NotSame(t, arena, other.arena)
	require.Equal(t, 64<<10, p.PooledBytes())

	m2, reused, err := p.Make(64 << 10)
	require.NoError(t, err)
	require.True(t, reused)
	require.Same(t, arena, m2.arena)
	require.Zero(t, p.PooledBytes())
	require.True(t, m2.Empty())
	require.Equal(t, EmptySize, m2.ApproximateMemoryUsage())
	// Everything past the sentinels is zero again.
	for i, b := range arena.buf[EmptySize:] {
		require.Zero(t, b, "byte %d", EmptySize+i)
	}
	it := m2.NewIter()
	require.False(t, it.First())
	require.NoError(t, it.Close())
	_, _, _, found := m2.Get([]byte("key0001"), base.MaxSeqNum)
	require.False(t, found)
	k := []byte("key0001")
	require.NoError(t, m2.Add(base.MakeInternalKey(k, 7, base.KindSet), []byte("new")))
	v, _, seq, found := m2.Get(k, base.MaxSeqNum)
	require.True(t, found)
	require.Equal(t, "new", string(v))
	require.Equal(t, base.SeqNum(7), seq)
	// v aliases a mapped arena, which the GC's cleanup unmaps once m2 is
	// unreachable: keep it until v is read.
	runtime.KeepAlive(m2)

	p.Drop()
	require.Zero(t, p.PooledBytes())
}
