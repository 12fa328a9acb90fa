//go:build windows

package vfs

import (
	"os"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/windows"
)

var errNotDir error = windows.ERROR_DIRECTORY

// flock takes a non-blocking exclusive LockFileEx lock on the first byte of
// f. The lock belongs to the handle: it excludes every other handle, in this
// process or another, until f is closed. The error is of class ErrLocked
// when another handle holds it.
func flock(f *os.File) error {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if err == nil {
		return nil
	}
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_SHARING_VIOLATION) {
		return errors.Wrap(ErrLocked, err.Error())
	}
	return err
}

// fsyncDir is a no-op on Windows: a directory cannot be opened for writing,
// FlushFileBuffers refuses a read-only handle, and NTFS journals its
// directory entries (creations, renames, removals) itself. RocksDB and
// Pebble skip the directory sync there too.
func fsyncDir(*os.File) error { return nil }
