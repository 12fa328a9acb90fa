//go:build unix

package vfs

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"
)

// TestFcntlLock_ExcludesOtherProcess runs the lock that macOS and the BSDs
// use (the fcntl record lock alone, see flock) here: a child process takes
// it and holds it; this process is refused with ErrLocked until the child
// exits, then gets it. fcntl locks belong to the process, so only a second
// process can show the exclusion.
func TestFcntlLock_ExcludesOtherProcess(t *testing.T) {
	if name := os.Getenv("STRATA_FCNTL_CHILD"); name != "" {
		f, err := os.OpenFile(name, os.O_RDWR, 0)
		if err == nil {
			rc, cerr := f.SyscallConn()
			if err = cerr; err == nil {
				err = fcntlLock(rc)
			}
		}
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Minute) // until the parent kills it
		os.Exit(0)
	}
	name := filepath.Join(t.TempDir(), "LOCK")
	require.NoError(t, os.WriteFile(name, nil, 0o644))
	cmd := startLockHolder(t, "TestFcntlLock_ExcludesOtherProcess", "STRATA_FCNTL_CHILD", name)

	f, err := os.OpenFile(name, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	rc, err := f.SyscallConn()
	require.NoError(t, err)
	err = fcntlLock(rc)
	require.True(t, errors.Is(err, ErrLocked), "a second process's fcntl lock: %v", err)

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.NoError(t, fcntlLock(rc), "the lock once its holder exited")
}

// TestLock_FcntlOnlyPathExcludesOtherProcess runs Default.Lock as macOS and
// the BSDs run it (fcntlOnly: the fcntl lock alone) in two processes: while
// a child holds the LOCK file this process is refused with ErrLocked, a
// second Lock within one process is refused too, and once the child has
// exited the lock is taken, released by Close and taken again.
func TestLock_FcntlOnlyPathExcludesOtherProcess(t *testing.T) {
	saved := fcntlOnly
	fcntlOnly = true
	defer func() { fcntlOnly = saved }()
	if name := os.Getenv("STRATA_FCNTL_ONLY_CHILD"); name != "" {
		if _, err := Default.Lock(name); err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Minute) // until the parent kills it
		os.Exit(0)
	}
	name := filepath.Join(t.TempDir(), "LOCK")
	cmd := startLockHolder(t, "TestLock_FcntlOnlyPathExcludesOtherProcess", "STRATA_FCNTL_ONLY_CHILD", name)

	_, err := Default.Lock(name)
	require.True(t, errors.Is(err, ErrLocked), "Lock while another process holds it: %v", err)

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	l, err := Default.Lock(name)
	require.NoError(t, err, "the lock once its holder exited")
	_, err = Default.Lock(name)
	require.True(t, errors.Is(err, ErrLocked), "a second Lock in this process: %v", err)
	require.NoError(t, l.Close())
	l, err = Default.Lock(name)
	require.NoError(t, err, "the lock once released")
	require.NoError(t, l.Close())
}

// startLockHolder runs test again in a child process with env set to the
// LOCK file's name, and returns once the child says it holds the lock.
func startLockHolder(t *testing.T, test, env, name string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env+"="+name)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)
	return cmd
}
