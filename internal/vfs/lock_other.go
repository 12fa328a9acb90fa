//go:build !unix && !windows

package vfs

import (
	"errors"
	"os"
	"runtime"

	cerrors "github.com/cockroachdb/errors"
)

var errNotDir = errors.New("not a directory")

// flock refuses where no file lock is known to exclude other processes
// (plan9, wasip1, js): two processes could otherwise open one database and
// corrupt it, so opening a database on disk fails there.
func flock(*os.File) error {
	return cerrors.Newf("strata: no file lock on %s: a database on disk cannot be opened safely", runtime.GOOS)
}

// fsyncDir is os.File.Sync: whatever the platform's fsync of a directory
// does.
func fsyncDir(f *os.File) error { return f.Sync() }
