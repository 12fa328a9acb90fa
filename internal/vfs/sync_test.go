package vfs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMkdirAllSyncedExisting: an existing directory is left alone, with no
// sync (Open of an existing database costs one Stat for it).
func TestMkdirAllSyncedExisting(t *testing.T) {
	fs := NewMem()
	require.NoError(t, fs.MkdirAll("/x/y", 0o755))
	require.NoError(t, MkdirAllSynced(fs, "/x/y"))
	_, err := fs.CrashClone().Stat("/x")
	require.Error(t, err, "MkdirAllSynced synced a directory it did not create")
	require.NoError(t, MkdirAllSynced(fs, "/x/y/z"))
	_, err = fs.CrashClone().Stat("/x")
	require.Error(t, err, "only the parent of a created directory is synced")
	_, err = fs.CrashClone().Stat("/x/y/z")
	require.Error(t, err, "/x is not durable, so neither is /x/y/z")
}
