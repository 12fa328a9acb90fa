package db_test

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// TestIterator_StateReuse: a closed iterator's internals are reused by the
// next iterator over the same read view. Reuse must not leak the old
// iterator's snapshot, tombstones or position, and the closed iterator must
// stay closed.
func TestIterator_StateReuse(t *testing.T) {
	d, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	defer d.Close()
	for i := 0; i < 10; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("k%d", i)), []byte("v"), nil))
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.Put([]byte("k10"), []byte("v"), nil))

	all := []string{"k0", "k1", "k10", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"}
	require.Equal(t, all, scanKeys(t, d, nil))

	snap := d.NewSnapshot()
	defer snap.Release()
	// Tombstone added to the memtable after the state was cached: the view
	// (memtables + version) is unchanged, so the state is reused.
	require.NoError(t, d.DeleteRange([]byte("k2"), []byte("k5"), nil))
	require.NoError(t, d.Delete([]byte("k0"), nil))
	require.Equal(t, []string{"k1", "k10", "k5", "k6", "k7", "k8", "k9"}, scanKeys(t, d, nil))
	require.Equal(t, all, scanKeys(t, d, &db.ReadOptions{Snapshot: snap}))
	require.Equal(t, []string{"k1", "k10", "k5", "k6", "k7", "k8", "k9"}, scanKeys(t, d, nil))

	// A closed iterator stays closed when its state serves another one.
	it1 := d.NewIterator(nil)
	it1.SeekToFirst()
	require.True(t, it1.Valid())
	require.NoError(t, it1.Close())
	it2 := d.NewIterator(&db.ReadOptions{LowerBound: []byte("k6")})
	it2.SeekToFirst()
	require.True(t, it2.Valid())
	require.Equal(t, "k6", string(it2.Key()))
	it1.SeekToFirst()
	require.False(t, it1.Valid())
	require.True(t, errors.Is(it1.Err(), db.ErrClosed))
	require.True(t, errors.Is(it1.Close(), db.ErrClosed))
	it2.Next()
	require.Equal(t, "k7", string(it2.Key()))
	require.NoError(t, it2.Close())

	// Two iterators open at once do not share a state.
	a := d.NewIterator(nil)
	b := d.NewIterator(nil)
	a.SeekToFirst()
	b.SeekToLast()
	require.Equal(t, "k1", string(a.Key()))
	require.Equal(t, "k9", string(b.Key()))
	a.Next()
	require.Equal(t, "k10", string(a.Key()))
	require.Equal(t, "k9", string(b.Key()))
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())

	// After a flush (a new view) iterators still see everything.
	require.NoError(t, d.Flush())
	require.Equal(t, []string{"k1", "k10", "k5", "k6", "k7", "k8", "k9"}, scanKeys(t, d, nil))
	require.Equal(t, all, scanKeys(t, d, &db.ReadOptions{Snapshot: snap}))
}
