//go:build !unix

package vfs

import (
	"errors"
	"os"
)

var errNotDir = errors.New("not a directory")

// flock is a no-op where flock(2) does not exist: only the process-wide set
// of held locks excludes other handles.
func flock(*os.File) error { return nil }
