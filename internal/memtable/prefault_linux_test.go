//go:build linux && !race

package memtable

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// residentPages counts the resident pages of b, which must start on a page.
func residentPages(t *testing.T, b []byte) int {
	vec := make([]byte, (len(b)+int(pageSize)-1)/int(pageSize))
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	require.Zero(t, errno)
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

var pageSize = int64(unix.Getpagesize())

// allResident reports whether every page of b is resident.
func allResident(t *testing.T, b []byte) bool {
	return residentPages(t, b) == (len(b)+int(pageSize)-1)/int(pageSize)
}

// The prefaulter keeps the pages ahead of the allocation position resident
// before the writer stores into them, for the single writer's alloc and for
// concurrent inserters' allocConcurrent, and no further than prefaultAhead.
func TestPrefaulterFaultsAhead(t *testing.T) {
	for _, concurrent := range []bool{false, true} {
		var p ArenaPool
		m, _, err := p.Make(32 << 20)
		require.NoError(t, err)
		a := m.arena
		require.NotNil(t, a.pf)
		// Nothing is populated before the first allocation past the
		// sentinels: an arena never written stays small.
		time.Sleep(10 * time.Millisecond)
		require.Less(t, residentPages(t, a.buf[prefaultStep:]), 16)

		alloc := a.alloc
		if concurrent {
			alloc = a.allocConcurrent
		}
		_, ok := alloc(3 << 20)
		require.True(t, ok)
		pos := int(a.used()) &^ (int(pageSize) - 1)
		ahead := a.buf[pos : pos+prefaultAhead-prefaultStep]
		require.Eventually(t, func() bool { return allResident(t, ahead) }, 10*time.Second, time.Millisecond,
			"concurrent=%v: the pages ahead of the writer were not faulted in", concurrent)
		// Past the distance ahead, nothing.
		require.Zero(t, residentPages(t, a.buf[pos+prefaultAhead+prefaultStep:]))

		// Further on, the prefaulter follows.
		_, ok = alloc(16 << 20)
		require.True(t, ok)
		pos = int(a.used()) &^ (int(pageSize) - 1)
		ahead = a.buf[pos : pos+prefaultAhead-prefaultStep]
		require.Eventually(t, func() bool { return allResident(t, ahead) }, 10*time.Second, time.Millisecond)
		p.Put(m)
		p.Close()
	}
}

// A retired arena's prefaulter stops before its pages are dropped, so the
// parked arena holds no memory, and the reused arena gets a new one.
func TestPrefaulterStopsAtRetire(t *testing.T) {
	var p ArenaPool
	defer p.Close()
	m, _, err := p.Make(64 << 20)
	require.NoError(t, err)
	a := m.arena
	pf := a.pf
	_, ok := a.alloc(1 << 20)
	require.True(t, ok)
	p.Put(m) // at once, while the prefaulter is likely populating
	select {
	case <-pf.done:
	default:
		t.Fatal("the prefaulter runs on after retire")
	}
	require.Nil(t, a.pf)
	require.Zero(t, residentPages(t, a.buf))

	m2, reused, err := p.Make(64 << 20)
	require.NoError(t, err)
	require.True(t, reused)
	require.NotNil(t, m2.arena.pf)
	require.NotSame(t, pf, m2.arena.pf)
	_, ok = m2.arena.alloc(1 << 20)
	require.True(t, ok)
	pos := int(m2.arena.used()) &^ (int(pageSize) - 1)
	require.Eventually(t, func() bool { return allResident(t, m2.arena.buf[pos:pos+prefaultStep]) }, 10*time.Second, time.Millisecond)
	p.Put(m2)
}

// Small arenas get no prefaulter, and neither do heap ones.
func TestPrefaulterOnlyLargeMapped(t *testing.T) {
	require.Nil(t, newMappedArena(prefaultMinSize-1).pf)
	require.Nil(t, newArena(64<<20).pf)
	a := newMappedArena(prefaultMinSize)
	pf := a.pf
	require.NotNil(t, pf)
	// free (as the cleanup of an arena nobody freed) stops it before the
	// unmap.
	a.free()
	select {
	case <-pf.done:
	default:
		t.Fatal("the prefaulter runs on after free")
	}
}

// Prepare readies an arena off the caller's path: the pooled one when its
// size matches, a new one otherwise, its first huge page resident. Make of
// that size takes it, Make of another size does not, and Close frees it.
func TestPoolPrepare(t *testing.T) {
	const size = 16 << 20
	var p ArenaPool
	p.Prepare(size)
	require.Equal(t, size, p.PooledBytes())
	m, reused, err := p.Make(size)
	require.NoError(t, err)
	require.False(t, reused, "a new mapping")
	require.Zero(t, p.PooledBytes())
	require.True(t, allResident(t, m.arena.buf[:prefaultStep]), "the first pages were not faulted in")
	require.NotNil(t, m.arena.pf)
	// It works as any new memtable.
	fillAndCheck(t, m, 1000)
	first := &m.arena.buf[0]

	p.Put(m)
	p.Prepare(size)
	require.Equal(t, size, p.PooledBytes(), "the pooled arena became the prepared one")
	m, reused, err = p.Make(size)
	require.NoError(t, err)
	require.True(t, reused)
	require.Same(t, first, &m.arena.buf[0])
	require.True(t, allResident(t, m.arena.buf[:prefaultStep]))
	require.Equal(t, uint32(fixedOverhead), m.arena.used(), "a reused arena starts empty")
	fillAndCheck(t, m, 1000)

	// A prepared arena of another size is left to its Make.
	p.Prepare(2 * size)
	m2, reused, err := p.Make(size)
	require.NoError(t, err)
	require.False(t, reused)
	require.Equal(t, 2*size, p.PooledBytes())
	p.Put(m2)
	p.Put(m)
	p.Close()
	require.Zero(t, p.PooledBytes())
	p.Prepare(size) // after Close: nothing
	require.Zero(t, p.PooledBytes())
}

// fillAndCheck adds n entries to the empty memtable m and reads them back.
func fillAndCheck(t *testing.T, m *MemTable, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		k := []byte(fmt.Sprintf("key%06d", i))
		require.NoError(t, m.Add(base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), k))
	}
	require.Equal(t, uint64(n), m.numEntries.Load())
	for i := 0; i < n; i++ {
		k := []byte(fmt.Sprintf("key%06d", i))
		v, _, _, found := m.Get(k, base.MaxSeqNum)
		require.True(t, found)
		require.Equal(t, k, v)
	}
}
