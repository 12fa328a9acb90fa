package db

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSingleDeleteAfterDeleteAcrossSnapshot: Put, snapshot, Delete, Put,
// SingleDelete is within the SingleDelete contract (one Put since the last
// delete). A compaction that writes the newer Put must keep the Delete
// shadowed under it, or the later compaction that drops the SingleDelete
// with that Put uncovers the Put kept for the snapshot. Found by
// cmd/stress -seed 11 (single_delete_one_in).
func TestSingleDeleteAfterDeleteAcrossSnapshot(t *testing.T) {
	for _, merge := range []bool{false, true} {
		d := openMergeTestDB(t)
		k := []byte("k")
		require.NoError(t, d.Put(k, []byte("old"), nil))
		snap := d.NewSnapshot()
		if merge {
			require.NoError(t, d.Merge(k, []byte("+m"), nil))
			require.NoError(t, d.Flush())
		}
		require.NoError(t, d.Delete(k, nil))
		require.NoError(t, d.Flush())
		require.NoError(t, d.Put(k, []byte("new"), nil))
		require.NoError(t, d.Flush())
		// The Put and the Delete are compacted together first.
		require.NoError(t, d.CompactRange(nil, nil))
		require.NoError(t, d.SingleDelete(k, nil))
		require.NoError(t, d.Flush())
		require.NoError(t, d.CompactRange(nil, nil))
		_, err := d.Get(k, nil)
		require.ErrorIs(t, err, ErrNotFound, "merge=%v: entries %v", merge, tableEntries(t, d))
		v, err := d.Get(k, &ReadOptions{Snapshot: snap})
		require.NoError(t, err)
		require.Equal(t, "old", string(v))
		snap.Release()
		require.NoError(t, d.CompactRange(nil, nil))
		_, err = d.Get(k, nil)
		require.ErrorIs(t, err, ErrNotFound)
		require.NoError(t, d.Close())
	}
}
