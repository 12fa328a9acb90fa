package vfs

import (
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"
)

// fsCase is one behaviour checked on both the OS and the in-memory FS.
type fsCase struct {
	name string
	run  func(t *testing.T, fs FS, dir string)
}

func writeFile(t *testing.T, fs FS, name, data string) {
	t.Helper()
	f, err := fs.Create(name)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

func readFile(t *testing.T, fs FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	return string(b)
}

func list(t *testing.T, fs FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	sort.Strings(names)
	return names
}

var fsCases = []fsCase{
	{"CreateWriteReadStat", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "a")
		f, err := fs.Create(name)
		require.NoError(t, err)
		_, err = f.Write([]byte("hello "))
		require.NoError(t, err)
		_, err = f.Write([]byte("world"))
		require.NoError(t, err)
		fi, err := f.Stat()
		require.NoError(t, err)
		require.Equal(t, int64(11), fi.Size())
		require.Equal(t, "a", fi.Name())
		require.False(t, fi.IsDir())
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
		require.Error(t, f.Close())

		require.Equal(t, "hello world", readFile(t, fs, name))
		r, err := fs.Open(name)
		require.NoError(t, err)
		buf := make([]byte, 5)
		n, err := r.ReadAt(buf, 6)
		require.NoError(t, err)
		require.Equal(t, "world", string(buf[:n]))
		n, err = r.ReadAt(buf, 8)
		require.Equal(t, io.EOF, err)
		require.Equal(t, "rld", string(buf[:n]))
		_, err = r.Write([]byte("x"))
		require.Error(t, err, "write to a file opened for reading")
		require.NoError(t, r.Close())

		fi, err = fs.Stat(name)
		require.NoError(t, err)
		require.Equal(t, int64(11), fi.Size())
	}},
	{"CreateTruncates", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "a")
		writeFile(t, fs, name, "long contents")
		writeFile(t, fs, name, "short")
		require.Equal(t, "short", readFile(t, fs, name))
	}},
	{"ConcurrentReadAt", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "a")
		data := make([]byte, 4096)
		for i := range data {
			data[i] = byte(i)
		}
		writeFile(t, fs, name, string(data))
		f, err := fs.Open(name)
		require.NoError(t, err)
		var wg sync.WaitGroup
		errs := make(chan error, 4) // one per goroutine at most, checked after wg.Wait
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				buf := make([]byte, 16)
				for off := g; off < 4000; off += 97 {
					n, err := f.ReadAt(buf, int64(off))
					if err != nil || n != 16 || buf[0] != byte(off) {
						errs <- errors.Newf("ReadAt(%d) = %d, %v", off, n, err)
						return
					}
				}
			}(g)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.NoError(t, f.Close())
	}},
	{"NotExist", func(t *testing.T, fs FS, dir string) {
		missing := filepath.Join(dir, "missing")
		_, err := fs.Open(missing)
		require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
		_, err = fs.Stat(missing)
		require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
		require.True(t, errors.Is(fs.Remove(missing), os.ErrNotExist))
		require.True(t, errors.Is(fs.Rename(missing, filepath.Join(dir, "b")), os.ErrNotExist))
		_, err = fs.List(missing)
		require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
		_, err = fs.Create(filepath.Join(missing, "x"))
		require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
		_, err = fs.OpenDir(missing)
		require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
	}},
	{"ListRemove", func(t *testing.T, fs FS, dir string) {
		require.Empty(t, list(t, fs, dir))
		writeFile(t, fs, filepath.Join(dir, "b"), "")
		writeFile(t, fs, filepath.Join(dir, "a"), "")
		require.NoError(t, fs.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755))
		require.Equal(t, []string{"a", "b", "sub"}, list(t, fs, dir))
		fi, err := fs.Stat(filepath.Join(dir, "sub"))
		require.NoError(t, err)
		require.True(t, fi.IsDir())
		require.Error(t, fs.Remove(filepath.Join(dir, "sub")), "not empty")
		require.NoError(t, fs.Remove(filepath.Join(dir, "sub", "deeper")))
		require.NoError(t, fs.Remove(filepath.Join(dir, "sub")))
		require.NoError(t, fs.Remove(filepath.Join(dir, "a")))
		require.Equal(t, []string{"b"}, list(t, fs, dir))
		_, err = fs.List(filepath.Join(dir, "b"))
		require.Error(t, err, "List of a file")
		require.Error(t, fs.MkdirAll(filepath.Join(dir, "b", "c"), 0o755))
		require.NoError(t, fs.MkdirAll(dir, 0o755), "MkdirAll of an existing dir")
	}},
	{"Rename", func(t *testing.T, fs FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		writeFile(t, fs, a, "A")
		writeFile(t, fs, b, "B")
		require.NoError(t, fs.Rename(a, b))
		require.Equal(t, "A", readFile(t, fs, b))
		require.Equal(t, []string{"b"}, list(t, fs, dir))
		require.NoError(t, fs.MkdirAll(filepath.Join(dir, "d"), 0o755))
		require.Error(t, fs.Rename(b, filepath.Join(dir, "d")), "file over a directory")
		require.NoError(t, fs.Rename(b, filepath.Join(dir, "d", "c")))
		require.Equal(t, "A", readFile(t, fs, filepath.Join(dir, "d", "c")))
		require.NoError(t, fs.Rename(filepath.Join(dir, "d"), filepath.Join(dir, "e")))
		require.Equal(t, "A", readFile(t, fs, filepath.Join(dir, "e", "c")))
	}},
	{"OpenDirSync", func(t *testing.T, fs FS, dir string) {
		d, err := fs.OpenDir(dir)
		require.NoError(t, err)
		require.NoError(t, d.Sync())
		require.NoError(t, d.Close())
		writeFile(t, fs, filepath.Join(dir, "f"), "x")
		_, err = fs.OpenDir(filepath.Join(dir, "f"))
		require.Error(t, err, "OpenDir of a file")
	}},
	{"Lock", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "LOCK")
		l, err := fs.Lock(name)
		require.NoError(t, err)
		_, err = fs.Lock(name)
		require.True(t, errors.Is(err, ErrLocked), "%v", err)
		require.Contains(t, err.Error(), "locked")
		require.NoError(t, l.Close())
		l2, err := fs.Lock(name)
		require.NoError(t, err)
		require.NoError(t, l2.Close())
		_, err = fs.Stat(name)
		require.NoError(t, err, "Lock creates the file")
	}},
}

func TestFS_OSAndMem(t *testing.T) {
	for _, c := range fsCases {
		t.Run("os/"+c.name, func(t *testing.T) { c.run(t, Default, t.TempDir()) })
		t.Run("mem/"+c.name, func(t *testing.T) {
			m := NewMem()
			require.NoError(t, m.MkdirAll("/db", 0o755))
			c.run(t, m, "/db")
		})
	}
}

func TestDiskLock_RelativeAndAbsolutePathsConflict(t *testing.T) {
	dir := t.TempDir()
	wd, err := os.Getwd()
	require.NoError(t, err)
	rel, err := filepath.Rel(wd, filepath.Join(dir, "LOCK"))
	require.NoError(t, err)
	l, err := Default.Lock(filepath.Join(dir, "LOCK"))
	require.NoError(t, err)
	_, err = Default.Lock(rel)
	require.True(t, errors.Is(err, ErrLocked), "%v", err)
	require.NoError(t, l.Close())
	require.Error(t, l.Close(), "second Close")
}

func TestDiskLock_FlockExcludesOtherDescriptions(t *testing.T) {
	name := filepath.Join(t.TempDir(), "LOCK")
	l, err := Default.Lock(name)
	require.NoError(t, err)
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	require.NoError(t, err)
	require.True(t, errors.Is(flock(f), ErrLocked), "flock through another open file description")
	require.NoError(t, l.Close())
	require.NoError(t, flock(f))
	require.NoError(t, f.Close())
}

func TestMemLinkSharesBytesAndNeedsDirSync(t *testing.T) {
	fs := NewMem()
	require.NoError(t, fs.MkdirAll("/d", 0o755))
	root, err := fs.OpenDir("/")
	require.NoError(t, err)
	require.NoError(t, root.Sync())
	f, err := fs.Create("/d/a")
	require.NoError(t, err)
	_, err = f.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	dir, err := fs.OpenDir("/d")
	require.NoError(t, err)
	require.NoError(t, dir.Sync())

	linked, err := LinkOrCopy(fs, "/d/a", "/d/b")
	require.NoError(t, err)
	require.True(t, linked)
	require.Error(t, fs.Link("/d/a", "/d/b"), "existing target")
	st, err := fs.Stat("/d/b")
	require.NoError(t, err)
	require.Equal(t, int64(5), st.Size())
	// Not durable before the directory sync...
	_, err = fs.CrashClone().Stat("/d/b")
	require.Error(t, err)
	require.NoError(t, dir.Sync())
	// ...durable after it, with the linked file's synced bytes.
	st, err = fs.CrashClone().Stat("/d/b")
	require.NoError(t, err)
	require.Equal(t, int64(5), st.Size())
	// Removing one name keeps the other.
	require.NoError(t, fs.Remove("/d/a"))
	_, err = fs.Stat("/d/b")
	require.NoError(t, err)
}

// TestDiskSyncDir: a directory sync through Default succeeds on every
// platform (on Windows, where FlushFileBuffers refuses a directory handle,
// it is a no-op rather than an error that would fail every flush).
func TestDiskSyncDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteFileSynced(Default, filepath.Join(dir, "f"), []byte("x")))
	require.NoError(t, SyncDir(Default, dir))
}
