//go:build linux

package vfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestDiskFile_WriteSync: WriteSync writes at the file's position, which it
// advances for the next Write as write(2) does, over a file's old bytes too
// (a reused WAL), and allocates nothing.
func TestDiskFile_WriteSync(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "log")
	require.NoError(t, os.WriteFile(name, []byte("0123456789abcdef"), 0o644))
	f, err := Default.(Reuser).ReuseForWrite(name, name+".new")
	require.NoError(t, err)
	sw := f.(interface {
		WriteSync(p []byte) (int, bool, error)
	})
	n, ok, err := sw.WriteSync([]byte("AB"))
	require.NoError(t, err)
	require.True(t, ok, "pwritev2 with RWF_DSYNC on this kernel and file system")
	require.Equal(t, 2, n)
	_, err = f.Write([]byte("cd"))
	require.NoError(t, err)
	_, _, err = sw.WriteSync([]byte("EF"))
	require.NoError(t, err)
	got, err := os.ReadFile(name + ".new")
	require.NoError(t, err)
	require.Equal(t, "ABcdEF6789abcdef", string(got))
	p := []byte("xy")
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := sw.WriteSync(p); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
	require.NoError(t, f.Close())
}

// TestDiskFile_WriteSyncUnsupported: a kernel or file system without the
// call (ENOSYS, EINVAL, EOPNOTSUPP) makes WriteSync report it unsupported
// with nothing written, once: the file does not try again. Another error
// is the write's.
func TestDiskFile_WriteSyncUnsupported(t *testing.T) {
	for _, errno := range []unix.Errno{unix.ENOSYS, unix.EINVAL, unix.EOPNOTSUPP} {
		t.Run(errno.Error(), func(t *testing.T) {
			calls := 0
			defer func(old func(uintptr, []byte) (int, error)) { writeSyncCall = old }(writeSyncCall)
			writeSyncCall = func(uintptr, []byte) (int, error) { calls++; return 0, errno }
			f, err := Default.Create(filepath.Join(t.TempDir(), "log"))
			require.NoError(t, err)
			defer f.Close()
			sw := f.(interface {
				WriteSync(p []byte) (int, bool, error)
			})
			for i := 0; i < 2; i++ {
				n, ok, err := sw.WriteSync([]byte("abc"))
				require.NoError(t, err)
				require.False(t, ok)
				require.Zero(t, n)
			}
			require.Equal(t, 1, calls, "an unsupported call is not made again")
			st, err := f.Stat()
			require.NoError(t, err)
			require.Zero(t, st.Size())
		})
	}
	t.Run("EIO", func(t *testing.T) {
		defer func(old func(uintptr, []byte) (int, error)) { writeSyncCall = old }(writeSyncCall)
		writeSyncCall = func(uintptr, []byte) (int, error) { return 0, unix.EIO }
		f, err := Default.Create(filepath.Join(t.TempDir(), "log"))
		require.NoError(t, err)
		defer f.Close()
		_, ok, err := f.(interface {
			WriteSync(p []byte) (int, bool, error)
		}).WriteSync([]byte("abc"))
		require.True(t, ok)
		require.ErrorIs(t, err, unix.EIO)
	})
	t.Run("short", func(t *testing.T) {
		// A short write is continued; an error after it is the call's.
		defer func(old func(uintptr, []byte) (int, error)) { writeSyncCall = old }(writeSyncCall)
		calls := 0
		writeSyncCall = func(fd uintptr, p []byte) (int, error) {
			calls++
			if calls == 1 {
				return pwritev2DSync(fd, p[:1])
			}
			if calls == 2 {
				return pwritev2DSync(fd, p)
			}
			return 0, unix.ENOSPC
		}
		f, err := Default.Create(filepath.Join(t.TempDir(), "log"))
		require.NoError(t, err)
		defer f.Close()
		sw := f.(interface {
			WriteSync(p []byte) (int, bool, error)
		})
		n, ok, err := sw.WriteSync([]byte("abc"))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, 3, n)
		n, ok, err = sw.WriteSync([]byte("def"))
		require.True(t, ok)
		require.ErrorIs(t, err, unix.ENOSPC)
		require.Zero(t, n)
	})
}
