package db

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stratadb/strata/internal/memtable"
	"github.com/stretchr/testify/require"
)

// memArenaBytesLocked sums the arena sizes of the DB's memtables.
func memArenaBytes(d *DB) (mutable, all int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	all = d.def.mu.mem.size
	for _, m := range d.def.mu.imm {
		all += m.size
	}
	return d.def.mu.mem.size, all
}

// Opening an existing database and reading it allocates no write buffer of
// WriteBufferSize bytes: the memtables start small (issue 12).
func TestOpenThenReadAllocatesNoWriteBuffer(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{CreateIfMissing: true})
	require.NoError(t, err)
	for i := range 1000 {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("k%05d", i)), []byte("v"), nil))
	}
	require.NoError(t, d.Close())
	// The final flush of Close leaves no full-size successor behind.
	require.LessOrEqual(t, d.def.mu.mem.size, memtable.EmptySize)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d, err = Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	for i := range 1000 {
		v, err := d.Get([]byte(fmt.Sprintf("k%05d", i)), nil)
		require.NoError(t, err)
		require.Equal(t, "v", string(v))
	}
	runtime.ReadMemStats(&after)
	_, all := memArenaBytes(d)
	require.LessOrEqual(t, all, initialMemTableSize)
	// Before issue 12 Open allocated two 64 MiB arenas here.
	allocated := after.TotalAlloc - before.TotalAlloc
	require.Less(t, allocated, uint64(16<<20), "Open and 1000 reads allocated %d bytes", allocated)
}

// Memtables double from initialMemTableSize up to WriteBufferSize, and a
// batch bigger than the current memtable gets a memtable sized for it.
func TestMemTablesGrowToWriteBufferSize(t *testing.T) {
	const wbs = 4 << 20
	d, err := Open(t.TempDir(), &Options{CreateIfMissing: true, WriteBufferSize: wbs, DisableAutoCompactions: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()

	var sizes []int
	var last *memTable
	value := make([]byte, 1000)
	for i := 0; len(sizes) < 7; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("k%08d", i)), value, nil))
		d.mu.Lock()
		if m := d.def.mu.mem; m != last {
			last = m
			sizes = append(sizes, m.size)
		}
		d.mu.Unlock()
		require.Less(t, i, 100000, "sizes so far %v", sizes)
	}
	require.Equal(t, []int{256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20, 4 << 20, 4 << 20}, sizes)

	// A value larger than the next memtable: the memtable is sized for it.
	d2, err := Open(t.TempDir(), &Options{CreateIfMissing: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, d2.Close()) }()
	big := make([]byte, 3<<20)
	big[len(big)-1] = 7
	require.NoError(t, d2.Put([]byte("big"), big, nil))
	got, err := d2.Get([]byte("big"), nil)
	require.NoError(t, err)
	require.Equal(t, big, got)
	m, _ := memArenaBytes(d2)
	require.GreaterOrEqual(t, m, len(big))
	require.Less(t, m, 64<<20)
}
