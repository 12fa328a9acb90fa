package vfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLink(t *testing.T) {
	for _, c := range []struct {
		name string
		fs   FS
		dir  string
	}{{"disk", Default, t.TempDir()}, {"mem", NewMem(), "/d"}} {
		t.Run(c.name, func(t *testing.T) {
			fs, dir := c.fs, c.dir
			require.NoError(t, fs.MkdirAll(filepath.Join(dir, "sub"), 0o755))
			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "sub", "b")
			writeFile(t, fs, a, "hello")
			require.NoError(t, Link(fs, a, b))
			require.Equal(t, "hello", readFile(t, fs, b))
			// The link survives the removal of the first name.
			require.NoError(t, fs.Remove(a))
			require.Equal(t, "hello", readFile(t, fs, b))
			// An existing target is refused.
			writeFile(t, fs, a, "x")
			require.ErrorIs(t, Link(fs, a, b), os.ErrExist)
			require.ErrorIs(t, Link(fs, filepath.Join(dir, "missing"), filepath.Join(dir, "c")), os.ErrNotExist)
		})
	}
}

func TestLinkDurableAfterDirSync(t *testing.T) {
	fs := NewMem()
	require.NoError(t, fs.MkdirAll("/d", 0o755))
	d, err := fs.OpenDir("/")
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	writeFile(t, fs, "/d/a", "data")
	require.NoError(t, Link(fs, "/d/a", "/d/b"))
	_, err = fs.CrashClone().Stat("/d/b")
	require.ErrorIs(t, err, os.ErrNotExist, "an unsynced link must not survive a crash")
	d, err = fs.OpenDir("/d")
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	require.Equal(t, "data", readFile(t, fs.CrashClone(), "/d/b"))
}

type noLinkFS struct{ FS }

func TestLinkUnsupported(t *testing.T) {
	require.ErrorIs(t, Link(noLinkFS{NewMem()}, "/a", "/b"), ErrLinkUnsupported)
}
