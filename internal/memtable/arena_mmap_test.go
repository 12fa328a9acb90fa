//go:build linux && !race

package memtable

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/invariants"
	"github.com/stretchr/testify/require"
)

// A pool's arena of a page or more is mapped outside the Go heap; a
// smaller one is not worth a mapping, and New and Make stay on the heap.
func TestArenaMapped(t *testing.T) {
	require.True(t, newMappedArena(mmapMinSize).mapped)
	require.False(t, newMappedArena(mmapMinSize-1).mapped)
	require.False(t, New(1<<20).arena.mapped)
	var p ArenaPool
	m, _, err := p.Make(1 << 20)
	require.NoError(t, err)
	require.True(t, m.arena.mapped)
	k := []byte("k")
	require.NoError(t, m.Add(base.MakeInternalKey(k, 1, base.KindSet), []byte("v")))
	v, _, _, found := m.Get(k, base.MaxSeqNum)
	require.True(t, found)
	require.Equal(t, "v", string(v))
	m.arena.free()
	require.Panics(t, func() { m.arena.free() }, "a second free")
}

// A pooled mapping keeps its address space but reads as zeros, and a
// memtable made over it works; the pool frees what it drops.
func TestArenaPoolMapped(t *testing.T) {
	var p ArenaPool
	m, _, err := p.Make(1 << 20)
	require.NoError(t, err)
	for i := range 1000 {
		k := []byte(fmt.Sprintf("key%04d", i))
		require.NoError(t, m.Add(base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), k))
	}
	a := m.arena
	p.Put(m)
	m2, reused, err := p.Make(1 << 20)
	require.NoError(t, err)
	require.True(t, reused)
	require.Same(t, a, m2.arena)
	for i, b := range a.buf[EmptySize:] { // past the new sentinels
		require.Zero(t, b, "byte %d", EmptySize+i)
	}
	p.Put(m2)
	m3, _, err := p.Make(1 << 20)
	require.NoError(t, err)
	other, _, err := p.Make(2 << 20)
	require.NoError(t, err)
	p.Put(other)
	p.Put(m3) // replaces other, which the pool frees
	require.True(t, other.arena.state.freed.Load())
	p.Close()
	require.True(t, m3.arena.state.freed.Load())
	m4, _, err := p.Make(1 << 20)
	require.NoError(t, err)
	p.Put(m4) // after Close: freed at once
	require.True(t, m4.arena.state.freed.Load())
	require.Zero(t, p.PooledBytes())
}

// Under the invariants tag a freed (or pooled) arena is inaccessible: a
// late read faults instead of returning stale bytes. The read runs in a
// child process, which must die of the fault.
func TestArenaFreedReadFaults(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("freed arenas are only made inaccessible under -tags invariants")
	}
	for _, mode := range []string{"free", "pool"} {
		t.Run(mode, func(t *testing.T) {
			if os.Getenv("STRATA_ARENA_FAULT") == mode {
				var p ArenaPool
				m, _, _ := p.Make(1 << 20)
				k := []byte("k")
				_ = m.Add(base.MakeInternalKey(k, 1, base.KindSet), []byte("v"))
				if mode == "free" {
					m.arena.free()
				} else {
					p.Put(m)
				}
				m.Get(k, base.MaxSeqNum) // faults
				os.Exit(0)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestArenaFreedReadFaults$/^"+mode+"$")
			cmd.Env = append(os.Environ(), "STRATA_ARENA_FAULT="+mode)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the read of a freed arena did not fault:\n%s", out)
			require.Contains(t, string(out), "unexpected fault address", string(out))
		})
	}
}
