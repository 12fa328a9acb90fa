//go:build !linux

package vfs

import "os"

// datasync is fsync(2) where fdatasync(2) is not available.
func datasync(f *os.File) error { return f.Sync() }

// WriteSync is unsupported here (pwritev2 with RWF_DSYNC is Linux's): the
// caller writes and syncs.
func (f *diskFile) WriteSync(p []byte) (n int, supported bool, err error) {
	return 0, false, nil
}
