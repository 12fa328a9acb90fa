package vfs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMemFS_ReuseForWrite: the reused file is renamed, reads past the new
// bytes see the old ones, and a crash keeps the old durable contents until
// the new file's Sync, then the new bytes over the old ones past them; the
// rename is durable once the directory is synced.
func TestMemFS_ReuseForWrite(t *testing.T) {
	fs := NewMem()
	require.NoError(t, fs.MkdirAll("/d", 0o755))
	syncDir(t, fs, "/")
	writeFile(t, fs, "/d/old", "0123456789")
	syncDir(t, fs, "/d")

	w, err := ReuseForWrite(fs, "/d/old", "/d/new")
	require.NoError(t, err)
	require.False(t, exists(fs, "/d/old"))
	appendFile(t, w, "abc")
	require.Equal(t, "abc3456789", readFile(t, fs, "/d/new"))
	st, err := w.Stat()
	require.NoError(t, err)
	require.Equal(t, int64(10), st.Size())

	// Not synced: a crash keeps the old name and contents.
	require.Equal(t, "0123456789", readFile(t, fs.CrashClone(), "/d/old"))
	// The file synced, the directory not: the old name, the new bytes.
	require.NoError(t, w.Sync())
	require.Equal(t, "abc3456789", readFile(t, fs.CrashClone(), "/d/old"))
	syncDir(t, fs, "/d")
	appendFile(t, w, "defghijk")
	require.Equal(t, "abcdefghijk", readFile(t, fs, "/d/new"))
	require.Equal(t, "abc3456789", readFile(t, fs.CrashClone(), "/d/new"))
	require.NoError(t, w.Sync())
	require.Equal(t, "abcdefghijk", readFile(t, fs.CrashClone(), "/d/new"))
	require.NoError(t, w.Close())
}

// TestDiskFS_ReuseForWrite: on the OS file system the reused file keeps
// its bytes past those written.
func TestDiskFS_ReuseForWrite(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, Default, dir+"/old", "0123456789")
	w, err := ReuseForWrite(Default, dir+"/old", dir+"/new")
	require.NoError(t, err)
	appendFile(t, w, "abc")
	require.NoError(t, w.Sync())
	require.NoError(t, w.Close())
	require.Equal(t, "abc3456789", readFile(t, Default, dir+"/new"))
}
