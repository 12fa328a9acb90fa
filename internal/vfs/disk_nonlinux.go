//go:build !linux

package vfs

import "os"

// datasync is fsync(2) where fdatasync(2) is not available.
func datasync(f *os.File) error { return f.Sync() }
