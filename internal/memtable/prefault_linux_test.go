//go:build linux && !race

package memtable

import (
	"testing"
	"time"
	"unsafe"

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
