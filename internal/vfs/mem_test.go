package vfs

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"
)

// syncDir makes dir's entries durable.
func syncDir(t *testing.T, fs FS, dir string) {
	t.Helper()
	d, err := fs.OpenDir(dir)
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	require.NoError(t, d.Close())
}

func exists(fs FS, name string) bool {
	_, err := fs.Stat(name)
	return err == nil
}

func appendFile(t *testing.T, f File, s string) {
	t.Helper()
	_, err := f.Write([]byte(s))
	require.NoError(t, err)
}

func TestMemFS_CrashClone_FileContents(t *testing.T) {
	m := NewMem()
	f, err := m.Create("/a")
	require.NoError(t, err)
	syncDir(t, m, "/")
	appendFile(t, f, "one")
	require.Equal(t, "", readFile(t, m.CrashClone(), "/a"), "unsynced bytes are lost")
	require.NoError(t, f.Sync())
	appendFile(t, f, "two")
	c := m.CrashClone()
	require.Equal(t, "one", readFile(t, c, "/a"), "only the synced prefix survives")
	require.Equal(t, "onetwo", readFile(t, m, "/a"), "the original is unchanged")
	require.NoError(t, f.Sync())
	require.Equal(t, "onetwo", readFile(t, m.CrashClone(), "/a"))
	require.NoError(t, f.Close())

	// Create truncates, but the truncation is durable only with a Sync.
	g, err := m.Create("/a")
	require.NoError(t, err)
	appendFile(t, g, "new")
	require.Equal(t, "onetwo", readFile(t, m.CrashClone(), "/a"))
	require.NoError(t, g.Sync())
	require.Equal(t, "new", readFile(t, m.CrashClone(), "/a"))
}

func TestMemFS_CrashClone_DirectoryEntries(t *testing.T) {
	m := NewMem()
	require.NoError(t, m.MkdirAll("/db", 0o755))
	require.False(t, exists(m.CrashClone(), "/db"), "mkdir needs a sync of the parent")
	syncDir(t, m, "/")
	require.True(t, exists(m.CrashClone(), "/db"))

	writeFile(t, m, "/db/a", "A") // contents synced, entry not
	require.False(t, exists(m.CrashClone(), "/db/a"), "created but directory never synced")
	syncDir(t, m, "/db")
	require.Equal(t, "A", readFile(t, m.CrashClone(), "/db/a"))

	// A rename without a directory sync is undone.
	writeFile(t, m, "/db/tmp", "B")
	syncDir(t, m, "/db")
	require.NoError(t, m.Rename("/db/tmp", "/db/a"))
	c := m.CrashClone()
	require.Equal(t, "A", readFile(t, c, "/db/a"))
	require.Equal(t, "B", readFile(t, c, "/db/tmp"))
	syncDir(t, m, "/db")
	c = m.CrashClone()
	require.Equal(t, "B", readFile(t, c, "/db/a"))
	require.False(t, exists(c, "/db/tmp"))

	// A removal without a directory sync is undone.
	require.NoError(t, m.Remove("/db/a"))
	require.Equal(t, "B", readFile(t, m.CrashClone(), "/db/a"))
	syncDir(t, m, "/db")
	require.False(t, exists(m.CrashClone(), "/db/a"))

	// Syncing a directory does not sync file contents.
	f, err := m.Create("/db/c")
	require.NoError(t, err)
	appendFile(t, f, "unsynced")
	syncDir(t, m, "/db")
	require.Equal(t, "", readFile(t, m.CrashClone(), "/db/c"))
}

func TestMemFS_CrashClone_NestedUnsyncedParent(t *testing.T) {
	m := NewMem()
	require.NoError(t, m.MkdirAll("/a/b", 0o755))
	writeFile(t, m, "/a/b/f", "x")
	syncDir(t, m, "/a/b")
	syncDir(t, m, "/a")
	require.False(t, exists(m.CrashClone(), "/a"), "root never synced")
	syncDir(t, m, "/")
	c := m.CrashClone()
	require.Equal(t, "x", readFile(t, c, "/a/b/f"))
	// The clone is a usable, independent file system that starts durable.
	writeFile(t, c, "/a/b/g", "y")
	require.False(t, exists(m, "/a/b/g"))
	require.Equal(t, "x", readFile(t, c.CrashClone(), "/a/b/f"))
}

func TestMemFS_Lax(t *testing.T) {
	m := NewLaxMem()
	require.NoError(t, m.MkdirAll("/db", 0o755))
	writeFile(t, m, "/db/a", "A")
	f, err := m.Create("/db/b")
	require.NoError(t, err)
	appendFile(t, f, "lost")
	require.NoError(t, m.Rename("/db/a", "/db/c"))
	c := m.CrashClone()
	require.Equal(t, "A", readFile(t, c, "/db/c"))
	require.False(t, exists(c, "/db/a"))
	require.Equal(t, "", readFile(t, c, "/db/b"), "file contents still need Sync")
}

func TestMemFS_OpenHandleSurvivesRemove(t *testing.T) {
	m := NewMem()
	writeFile(t, m, "/a", "data")
	f, err := m.Open("/a")
	require.NoError(t, err)
	require.NoError(t, m.Remove("/a"))
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, "data", string(b))
	require.NoError(t, f.Close())
	_, err = f.ReadAt(make([]byte, 1), 0)
	require.True(t, errors.Is(err, os.ErrClosed), "%v", err)
}

func TestMemFS_String(t *testing.T) {
	m := NewMem()
	require.NoError(t, m.MkdirAll("/db", 0o755))
	syncDir(t, m, "/")
	writeFile(t, m, "/db/a", "abc")
	f, err := m.Create("/db/b")
	require.NoError(t, err)
	appendFile(t, f, "xy")
	require.Equal(t, "/\n  db/\n    a 3 bytes, 3 synced (entry not synced)\n"+
		"    b 2 bytes, 0 synced (entry not synced)\n", m.String())
}

// TestMemFS_CrashCloneIsOneInstant syncs files one after the other in the
// middle of a CrashClone, after the clone has taken the first file's bytes:
// a power loss is an instant, so the clone may hold a prefix of those syncs
// but never a later sync without an earlier one. A clone that reads the
// files one at a time keeps the syncs of every file it reads after the
// first, and the first one it reads is the last synced only by chance (one
// in eight here, in each of the rounds).
func TestMemFS_CrashCloneIsOneInstant(t *testing.T) {
	const n = 8
	name := func(i int) string { return fmt.Sprintf("/f%d", i) }
	for round := 0; round < 16; round++ {
		m := NewMem()
		files := make([]File, n)
		for i := range files {
			f, err := m.Create(name(i))
			require.NoError(t, err)
			appendFile(t, f, "1")
			require.NoError(t, f.Sync())
			files[i] = f
		}
		syncDir(t, m, "/")
		var hookErr error
		testHookCrashCloneCopied = func() {
			for _, f := range files {
				if _, err := f.Write([]byte("2")); err != nil {
					hookErr = err
					return
				}
				if err := f.Sync(); err != nil {
					hookErr = err
					return
				}
			}
		}
		c := m.CrashClone()
		testHookCrashCloneCopied = nil
		require.NoError(t, hookErr)
		got := make([]string, n)
		for i := range got {
			got[i] = readFile(t, c, name(i))
		}
		k := 0
		for k < n && got[k] == "12" {
			k++
		}
		for i := k; i < n; i++ {
			require.Equal(t, "1", got[i], "round %d: the clone holds %s's second sync but not %s's, synced before it: %q", round, name(i), name(k), got)
		}
		for i := range files {
			require.Equal(t, "12", readFile(t, m, name(i)), "the original is unchanged")
			require.NoError(t, files[i].Close())
		}
	}
}

// TestMemFS_CrashCloneConcurrentSyncs takes clones while another goroutine
// appends to and syncs two files in turn, a before b: in every clone b is
// never ahead of a, and a at most one append ahead of b.
func TestMemFS_CrashCloneConcurrentSyncs(t *testing.T) {
	m := NewMem()
	a, err := m.Create("/a")
	require.NoError(t, err)
	b, err := m.Create("/b")
	require.NoError(t, err)
	// Files that take time to copy, so that syncs land in the middle of a
	// clone that copies file by file.
	for i := 0; i < 16; i++ {
		writeFile(t, m, fmt.Sprintf("/pad%02d", i), strings.Repeat("x", 64<<10))
	}
	syncDir(t, m, "/")
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			for _, f := range []File{a, b} {
				if _, err := f.Write([]byte("x")); err != nil {
					done <- err
					return
				}
				if err := f.Sync(); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	for i := 0; i < 300; i++ {
		c := m.CrashClone()
		la, lb := len(readFile(t, c, "/a")), len(readFile(t, c, "/b"))
		if lb > la || la > lb+1 {
			close(stop)
			<-done
			require.Failf(t, "not one instant", "clone %d: a synced %d bytes, b %d (a is synced first, one byte each turn)", i, la, lb)
		}
	}
	close(stop)
	require.NoError(t, <-done)
}

// TestMemFS_WriteSync: WriteSync makes its bytes durable (a crash keeps
// them), and refuses, writing nothing, a file with bytes written and not
// synced before it, which a disk's pwritev2 with RWF_DSYNC would leave
// unsynced; on a reused file it writes over the old bytes, after a
// truncating Create it makes the truncation durable too.
func TestMemFS_WriteSync(t *testing.T) {
	fs := NewMem()
	f, err := fs.Create("/log")
	require.NoError(t, err)
	syncDir(t, fs, "/")
	sw := f.(interface {
		WriteSync(p []byte) (int, bool, error)
	})
	n, ok, err := sw.WriteSync([]byte("ab"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 2, n)
	requireContents(t, fs.CrashClone(), "/log", "ab")

	_, err = f.Write([]byte("cd"))
	require.NoError(t, err)
	_, ok, err = sw.WriteSync([]byte("ef"))
	require.True(t, ok)
	require.Error(t, err, "bytes not synced before it")
	requireContents(t, fs, "/log", "abcd")
	require.NoError(t, f.Sync())
	_, _, err = sw.WriteSync([]byte("ef"))
	require.NoError(t, err)
	requireContents(t, fs.CrashClone(), "/log", "abcdef")
	require.NoError(t, f.Close())

	// A file written over: the old bytes past the new ones stay.
	r, err := fs.ReuseForWrite("/log", "/log2")
	require.NoError(t, err)
	_, _, err = r.(interface {
		WriteSync(p []byte) (int, bool, error)
	}).WriteSync([]byte("XY"))
	require.NoError(t, err)
	syncDir(t, fs, "/")
	requireContents(t, fs.CrashClone(), "/log2", "XYcdef")

	// A truncating Create: WriteSync makes the truncation durable with its
	// bytes, as fdatasync makes the size durable.
	c, err := fs.Create("/log2")
	require.NoError(t, err)
	_, _, err = c.(interface {
		WriteSync(p []byte) (int, bool, error)
	}).WriteSync([]byte("z"))
	require.NoError(t, err)
	requireContents(t, fs.CrashClone(), "/log2", "z")
}

func requireContents(t *testing.T, fs *MemFS, name, want string) {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, want, string(got))
}
