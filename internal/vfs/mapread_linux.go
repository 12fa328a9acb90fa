//go:build linux && (amd64 || arm64)

package vfs

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// MapForReading implements ReadMapper for files of the disk file system on
// 64-bit Linux (the address space holds every table of a large database).
func (f *diskFile) MapForReading(size int64) (MappedReader, bool) {
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, false
	}
	// Reads are point lookups: no readahead around a faulting page.
	_ = unix.Madvise(data, unix.MADV_RANDOM)
	return &mappedReader{f: f.File, data: data}, true
}

// mappedReader is a MappedReader over an immutable file. Invariant: data
// maps the file's first len(data) bytes until Close.
type mappedReader struct {
	f    *os.File
	data []byte
}

func (m *mappedReader) ReadAt(p []byte, off int64) (n int, err error) {
	if off < 0 {
		return 0, &os.PathError{Op: "read", Path: m.f.Name(), Err: os.ErrInvalid}
	}
	if off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	// A page that cannot be read (SIGBUS) faults the copy: report it.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			n, err = 0, &os.PathError{Op: "read", Path: m.f.Name(), Err: fmt.Errorf("fault reading mapped offset %d: %v", off, r)}
		}
	}()
	n = copy(p, m.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m *mappedReader) Close() error {
	err := unix.Munmap(m.data)
	m.data = nil
	if cerr := m.f.Close(); err == nil {
		err = cerr
	}
	return err
}
