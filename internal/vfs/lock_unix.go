//go:build unix

package vfs

import (
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

var errNotDir error = syscall.ENOTDIR

// flock locks f exclusively without blocking: on Linux with flock(2) and an
// fcntl record lock, elsewhere with the fcntl lock alone. The error is of
// class ErrLocked when another holder has the lock.
//
// Why not flock everywhere: on macOS and the BSDs flock and fcntl locks are
// one mechanism, so the fcntl lock taken after the flock would conflict
// with it (their owners differ: the open file for flock, the process for
// fcntl) and every Open would fail. The fcntl lock alone excludes other
// processes there, RocksDB's included; Lock's set of held paths excludes
// other handles in this process.
func flock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if fcntlOnly {
		return fcntlLock(rc)
	}
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB)
			if ferr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if ferr == unix.EWOULDBLOCK {
		return &lockedError{ferr}
	}
	if ferr != nil {
		return ferr
	}
	// RocksDB locks LOCK with an fcntl record lock, which does not conflict
	// with flock on Linux: take both, so that neither engine can open a
	// directory the other has open.
	return fcntlLock(rc)
}

// fcntlOnly says flock takes the fcntl lock alone (macOS, the BSDs). A
// variable, not a build tag, so that a test on Linux runs that path
// through Lock.
var fcntlOnly = runtime.GOOS != "linux" && runtime.GOOS != "android"

// fcntlLock takes an exclusive fcntl record lock on the whole file.
func fcntlLock(rc syscall.RawConn) error {
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
		for {
			ferr = unix.FcntlFlock(fd, unix.F_SETLK, &lk)
			if ferr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if ferr == unix.EAGAIN || ferr == unix.EACCES {
		return &lockedError{ferr}
	}
	return ferr
}

// lockedError is in the ErrLocked class for both errors.Is functions.
type lockedError struct{ err error }

func (e *lockedError) Error() string        { return e.err.Error() }
func (e *lockedError) Unwrap() error        { return e.err }
func (e *lockedError) Is(target error) bool { return target == ErrLocked }

// fsyncDir is fsync(2) of the directory (os.File.Sync; on darwin Go's Sync
// is F_FULLFSYNC, which also flushes the drive's cache).
func fsyncDir(f *os.File) error { return f.Sync() }
