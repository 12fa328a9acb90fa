package vfs

import (
	"io"
	"os"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

// mapWindow is how much of a mapped file is mapped at a time: the write
// position moves through the file one window after another. A window costs
// three system calls (fallocate, munmap, mmap) per mapWindow bytes, and its
// touched pages count towards the process's RSS, so it is kept small.
const mapWindow = 1 << 20

var _ MappedCreator = diskFS{}

// CreateMapped implements MappedCreator with a window of the file mapped
// MAP_SHARED. Space is reserved with fallocate(2) one window ahead of the
// writes, so a full disk is an error from Write (ENOSPC), never a SIGBUS on
// a store into a hole. File systems without fallocate get a plain file.
func (fs diskFS) CreateMapped(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	m := &mappedFile{f: f, fd: int(f.Fd())}
	if err := m.mapAt(0); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.ENODEV) {
			// No preallocation or no shared mappings here.
			return &diskFile{File: f}, nil
		}
		_ = f.Close()
		return nil, err
	}
	return m, nil
}

// mappedFile is a file written by copying into a shared mapping.
//
// Invariants: win maps the file's bytes [winOff, winOff+mapWindow), which
// are reserved (the file's length is at least winOff+mapWindow); winOff <=
// size <= winOff+mapWindow, and bytes [0, size) hold what Write was given.
// After an error every later Write and Sync returns it: what the file holds
// past size is unknown.
type mappedFile struct {
	f      *os.File
	fd     int
	win    []byte
	winOff int64
	size   int64
	// readOff is Read's position.
	readOff int64
	err     error
}

// mapAt reserves and maps the window starting at off, a multiple of
// mapWindow, after unmapping the current one.
func (m *mappedFile) mapAt(off int64) error {
	if m.win != nil {
		if err := unix.Munmap(m.win); err != nil {
			return &os.PathError{Op: "munmap", Path: m.f.Name(), Err: err}
		}
		m.win = nil
	}
	if err := fallocate(m.fd, off, mapWindow); err != nil {
		return &os.PathError{Op: "fallocate", Path: m.f.Name(), Err: err}
	}
	win, err := unix.Mmap(m.fd, off, mapWindow, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return &os.PathError{Op: "mmap", Path: m.f.Name(), Err: err}
	}
	m.win, m.winOff = win, off
	return nil
}

func fallocate(fd int, off, n int64) error {
	for {
		err := unix.Fallocate(fd, 0, off, n)
		if err != unix.EINTR {
			return err
		}
	}
}

// Write copies p to the end of the file.
func (m *mappedFile) Write(p []byte) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	written := 0
	for len(p) > 0 {
		end := m.winOff + mapWindow
		if m.size == end {
			if err := m.mapAt(end); err != nil {
				m.err = err
				return written, err
			}
		}
		n := copy(m.win[m.size-m.winOff:], p)
		m.size += int64(n)
		written += n
		p = p[n:]
	}
	return written, nil
}

// Sync makes the bytes written so far durable. On Linux the pages of a
// shared file mapping are the page cache's own pages, marked dirty by the
// stores into them, so fdatasync(2) writes them as it writes those of
// write(2); msync(2) would add nothing.
func (m *mappedFile) Sync() error {
	if m.err != nil {
		return m.err
	}
	for {
		err := unix.Fdatasync(m.fd)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			m.err = &os.PathError{Op: "fdatasync", Path: m.f.Name(), Err: err}
			return m.err
		}
		return nil
	}
}

// ReadAt reads written bytes (the page cache serves both the mapping and
// pread(2)).
func (m *mappedFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= m.size {
		return 0, io.EOF
	}
	short := false
	if max := m.size - off; int64(len(p)) > max {
		p, short = p[:max], true
	}
	n, err := m.f.ReadAt(p, off)
	if err == nil && short {
		err = io.EOF
	}
	return n, err
}

func (m *mappedFile) Read(p []byte) (int, error) {
	n, err := m.ReadAt(p, m.readOff)
	m.readOff += int64(n)
	return n, err
}

// Stat describes the file with its written size, not its reserved one.
func (m *mappedFile) Stat() (os.FileInfo, error) {
	fi, err := m.f.Stat()
	if err != nil {
		return nil, err
	}
	return sizedInfo{FileInfo: fi, size: m.size}, nil
}

// Close unmaps the file and trims the reserved space past the written bytes.
// It does not sync.
func (m *mappedFile) Close() error {
	var err error
	if m.win != nil {
		if e := unix.Munmap(m.win); e != nil {
			err = &os.PathError{Op: "munmap", Path: m.f.Name(), Err: e}
		}
		m.win = nil
	}
	if e := m.f.Truncate(m.size); e != nil && err == nil {
		err = e
	}
	if e := m.f.Close(); e != nil && err == nil {
		err = e
	}
	if m.err == nil {
		m.err = os.ErrClosed
	}
	return err
}

// sizedInfo is an os.FileInfo whose Size is given.
type sizedInfo struct {
	os.FileInfo
	size int64
}

func (s sizedInfo) Size() int64 { return s.size }
