package db

import (
	"fmt"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// TestTableCacheKeepsReferencedEntryOpen holds the entry of one table while
// reads of every other table churn a cache of one entry: the held reader
// must stay open and readable until released, and the entry just inserted
// must be the one cached.
func TestTableCacheKeepsReferencedEntryOpen(t *testing.T) {
	d, err := Open(t.TempDir(), &Options{CreateIfMissing: true, MaxOpenFiles: 1, DisableAutoCompactions: true})
	require.NoError(t, err)
	defer d.Close()
	const tables = 5
	for i := 0; i < tables; i++ {
		for j := 0; j < 20; j++ {
			require.NoError(t, d.Put([]byte(fmt.Sprintf("t%d-%02d", i, j)), []byte("v"), nil))
		}
		require.NoError(t, d.Flush())
	}
	rs := d.loadReadState()
	defer rs.unref()
	files := rs.version.Levels[0]
	require.Len(t, files, tables)

	tc := d.tables
	cached := func() []uint64 {
		tc.mu.RLock()
		defer tc.mu.RUnlock()
		var out []uint64
		for _, e := range tc.clock {
			out = append(out, e.fileNum)
		}
		return out
	}
	held, err := tc.acquire(files[0])
	require.NoError(t, err)
	for round := 0; round < 3; round++ {
		for _, f := range files[1:] {
			e, err := tc.acquire(f)
			require.NoError(t, err)
			require.Equal(t, []uint64{f.FileNum}, cached(), "the entry just inserted was not cached")
			tc.release(e)
			// The held reader still works: its file is open and readable.
			_, _, _, found, err := held.reader.Get(files[0].Smallest.UserKey, base.MaxSeqNum)
			require.NoError(t, err)
			require.True(t, found)
		}
	}
	tc.release(held)
}

// TestTableCacheHitGivesSecondChance: a hit on an entry whose CLOCK bit
// eviction cleared sets it again, so the next eviction passes over it and
// takes the entry not used since.
func TestTableCacheHitGivesSecondChance(t *testing.T) {
	d, err := Open(t.TempDir(), &Options{CreateIfMissing: true, MaxOpenFiles: 2, DisableAutoCompactions: true})
	require.NoError(t, err)
	defer d.Close()
	for i := 0; i < 3; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("t%d", i)), []byte("v"), nil))
		require.NoError(t, d.Flush())
	}
	rs := d.loadReadState()
	defer rs.unref()
	files := rs.version.Levels[0]
	require.Len(t, files, 3)
	tc := d.tables
	use := func(i int) {
		e, err := tc.acquire(files[i])
		require.NoError(t, err)
		tc.release(e)
	}
	cached := func() map[uint64]bool {
		tc.mu.RLock()
		defer tc.mu.RUnlock()
		out := map[uint64]bool{}
		for _, e := range tc.clock {
			out[e.fileNum] = true
		}
		return out
	}
	use(0)
	use(1)
	require.Len(t, cached(), 2)
	// As after a sweep of the hand: both bits clear.
	tc.mu.Lock()
	for _, e := range tc.clock {
		e.touched.Store(false)
	}
	tc.mu.Unlock()
	use(0) // a hit
	use(2) // evicts one
	require.Equal(t, map[uint64]bool{files[0].FileNum: true, files[2].FileNum: true}, cached(),
		"the entry hit since the sweep was evicted")
}
