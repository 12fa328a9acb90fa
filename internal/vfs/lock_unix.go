//go:build unix

package vfs

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

var errNotDir error = syscall.ENOTDIR

// flock takes a non-blocking exclusive flock(2) on f. The error is of class
// ErrLocked when another open file description holds the lock.
func flock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
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
