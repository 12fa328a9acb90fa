package vfs

import (
	"io"
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
	root, err := fs.OpenDir("/")
	require.NoError(t, err)
	require.NoError(t, root.Sync())
	f, err := fs.Create("/d/old")
	require.NoError(t, err)
	_, err = f.Write([]byte("0123456789"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	dir, err := fs.OpenDir("/d")
	require.NoError(t, err)
	require.NoError(t, dir.Sync())

	w, err := ReuseForWrite(fs, "/d/old", "/d/new")
	require.NoError(t, err)
	_, err = fs.Stat("/d/old")
	require.Error(t, err)
	_, err = w.Write([]byte("abc"))
	require.NoError(t, err)
	read := func(fs *MemFS, name string) string {
		r, err := fs.Open(name)
		require.NoError(t, err)
		defer r.Close()
		b, err := io.ReadAll(r)
		require.NoError(t, err)
		return string(b)
	}
	require.Equal(t, "abc3456789", read(fs, "/d/new"))
	st, err := w.Stat()
	require.NoError(t, err)
	require.Equal(t, int64(10), st.Size())

	// Not synced: a crash keeps the old name and contents.
	c := fs.CrashClone()
	require.Equal(t, "0123456789", read(c, "/d/old"))
	// The file synced, the directory not: the old name, the new bytes.
	require.NoError(t, w.Sync())
	c = fs.CrashClone()
	require.Equal(t, "abc3456789", read(c, "/d/old"))
	require.NoError(t, dir.Sync())
	_, err = w.Write([]byte("defghijk"))
	require.NoError(t, err)
	require.Equal(t, "abcdefghijk", read(fs, "/d/new"))
	c = fs.CrashClone()
	require.Equal(t, "abc3456789", read(c, "/d/new"))
	require.NoError(t, w.Sync())
	require.Equal(t, "abcdefghijk", read(fs.CrashClone(), "/d/new"))
	require.NoError(t, w.Close())
}

// TestDiskFS_ReuseForWrite: on the OS file system the reused file keeps
// its bytes past those written.
func TestDiskFS_ReuseForWrite(t *testing.T) {
	dir := t.TempDir()
	f, err := Default.Create(dir + "/old")
	require.NoError(t, err)
	_, err = f.Write([]byte("0123456789"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	w, err := ReuseForWrite(Default, dir+"/old", dir+"/new")
	require.NoError(t, err)
	_, err = w.Write([]byte("abc"))
	require.NoError(t, err)
	require.NoError(t, w.Sync())
	require.NoError(t, w.Close())
	r, err := Default.Open(dir + "/new")
	require.NoError(t, err)
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.Equal(t, "abc3456789", string(b))
}
