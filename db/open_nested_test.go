package db_test

import (
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// TestOpenNestedMissingDirectorySurvivesPowerLoss: Open with
// CreateIfMissing creates a directory whose parents are missing too; a
// synced write acknowledged afterwards survives a power loss, which needs
// every directory Open created to be durable in its parent, not only the
// database directory in its immediate (new, unsynced) parent. Checkpoint
// into a directory with missing parents makes the same promise.
func TestOpenNestedMissingDirectorySurvivesPowerLoss(t *testing.T) {
	fs := vfs.NewMem()
	d, err := db.Open("/a/b/db", &db.Options{FS: fs, CreateIfMissing: true})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("k"), []byte("v"), &db.WriteOptions{Sync: true}))
	require.NoError(t, d.Checkpoint("/c/d/ckpt"))

	img := fs.CrashClone()
	for _, dir := range []string{"/a/b/db", "/c/d/ckpt"} {
		r, err := db.Open(dir, &db.Options{FS: img})
		require.NoError(t, err, dir)
		v, err := r.Get([]byte("k"), nil)
		require.NoError(t, err, dir)
		require.Equal(t, "v", string(v), dir)
		require.NoError(t, r.Close())
	}
	require.NoError(t, d.Close())
}
