//go:build linux && (amd64 || arm64)

package vfs

import (
	"encoding/binary"
	"io"
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

// mapWindow is how much of a mapped file is mapped at a time: the write
// position moves through the file one window after another. Its touched
// pages count towards the process's RSS, so it is kept small.
const mapWindow = 1 << 20

var _ MappedCreator = diskFS{}

// CreateMapped implements MappedCreator with a window of the file mapped
// MAP_SHARED. Space is reserved with fallocate(2) ahead of the writes, so a
// full disk is an error from Write (ENOSPC), never a SIGBUS on a store into
// a hole. File systems without fallocate get a plain file.
func (fs diskFS) CreateMapped(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	m := &mappedFile{f: f, fd: int(f.Fd())}
	win, err := m.mapWindowAt(0, false)
	if err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.ENODEV) {
			// No preallocation or no shared mappings here.
			return &diskFile{File: f}, nil
		}
		_ = f.Close()
		return nil, err
	}
	m.win = win
	return m, nil
}

// mappedFile is a file written by copying into a shared mapping.
//
// Invariants: win maps the file's bytes [winOff, winOff+mapWindow), which
// are reserved (the file's length is at least winOff+mapWindow); winOff <=
// size <= winOff+mapWindow, and bytes [0, size) hold what Write was given.
// After an error every later Write and Sync returns it: what the file holds
// past size is unknown. Write, WriteFramed, Stat, ReadAt, Read and Close
// run one at a time (the DB's commit lock); Sync may run beside them, and
// touches nothing of the file's but fd, f (both set at creation) and err,
// which is atomic for that reason. next is nil, or a goroutine is preparing the window
// after win and will send it on next; retired is nil, or the window before
// win, still mapped, which the next preparation (or Close) unmaps.
type mappedFile struct {
	f      *os.File
	fd     int
	win    []byte
	winOff int64
	size   int64
	// next receives the window after win, prepared off the write path
	// once win is half full: moving to a new window reserved, mapped and
	// faulted the pages in under the writer's lock (the DB's commit
	// lock), and with several writers that was a third of the time the
	// lock was held. A WAL that is never written past half a window (a
	// database opened to be read) prepares nothing.
	next    chan preparedWindow
	retired []byte
	// readOff is Read's position.
	readOff int64
	// err is the file's first error, set once (see setErr). A write that
	// cannot move to the next window sets it under the writer's lock, and
	// Sync, called outside that lock, reads and sets it: hence atomic
	// (one load per write on the copying path, a plain load on amd64).
	err atomic.Pointer[error]
}

// failed returns the file's error, or nil.
func (m *mappedFile) failed() error {
	if p := m.err.Load(); p != nil {
		return *p
	}
	return nil
}

// setErr records err as the file's error unless one is recorded already.
func (m *mappedFile) setErr(err error) { m.err.CompareAndSwap(nil, &err) }

// preparedWindow is a window mapped ahead, or why it could not be; old is
// the retired window when unmapping it failed, handed back so that Close
// tries again rather than leaking it.
type preparedWindow struct {
	win []byte
	old []byte
	err error
}

// prepareNext starts a goroutine that unmaps the retired window and maps
// the window after the current one, its pages populated.
func (m *mappedFile) prepareNext() {
	ch := make(chan preparedWindow, 1)
	m.next = ch
	off := m.winOff + mapWindow
	old := m.retired
	m.retired = nil
	go func() {
		var p preparedWindow
		if old != nil {
			if err := unix.Munmap(old); err != nil {
				p.old = old
				p.err = &os.PathError{Op: "munmap", Path: m.f.Name(), Err: err}
			}
		}
		if p.err == nil {
			p.win, p.err = m.mapWindowAt(off, true)
		}
		ch <- p
	}()
}

// nextWindow moves to the window after the current one: the one prepared
// ahead, or, when none was (a write that went from below half the window
// to past its end), one mapped now.
func (m *mappedFile) nextWindow() error {
	if m.next == nil {
		m.prepareNext()
	}
	p := <-m.next
	m.next = nil
	if p.err != nil {
		if p.win != nil {
			_ = unix.Munmap(p.win)
		}
		m.retired = p.old
		return p.err
	}
	m.retired = m.win
	m.win, m.winOff = p.win, m.winOff+mapWindow
	return nil
}

// mapWindowAt reserves and maps the window starting at off, a multiple of
// mapWindow. With populate it asks the kernel to map the window's pages
// now (MADV_POPULATE_READ, Linux 5.14 and later; older kernels fault them
// in on first write), which marks nothing dirty, so a later fsync writes
// only the pages written.
func (m *mappedFile) mapWindowAt(off int64, populate bool) ([]byte, error) {
	if err := fallocate(m.fd, off, mapWindow); err != nil {
		return nil, &os.PathError{Op: "fallocate", Path: m.f.Name(), Err: err}
	}
	win, err := unix.Mmap(m.fd, off, mapWindow, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: m.f.Name(), Err: err}
	}
	if populate {
		_ = unix.Madvise(win, unix.MADV_POPULATE_READ)
	}
	return win, nil
}

func fallocate(fd int, off, n int64) error {
	for {
		err := unix.Fallocate(fd, 0, off, n)
		if err != unix.EINTR {
			return err
		}
	}
}

// WriteFramed copies p to the end of the file like Write, but writes each
// header range of p (headers holds their offsets, each headerSize bytes,
// increasing) only after the other bytes of p in the same window, and each
// with one 8-byte store. A process killed part way (a SIGKILL lands between
// instructions) then leaves, of the fragments being copied, complete ones
// followed by a header still zero: the log reader sees a clean end or a torn
// tail, never a fragment whose checksum fails. The mapped window is
// 32 KiB-block aligned, so no fragment crosses windows. This file's build
// is limited to 64-bit platforms whose unaligned 8-byte stores are one
// instruction.
func (m *mappedFile) WriteFramed(p []byte, headers []int) (int, error) {
	return m.writeFramed(p, headers, -1)
}

// headerSize is the size of a log fragment header (record.HeaderSize; vfs
// does not import record).
const headerSize = 7

// writeFramed is WriteFramed that stops after steps copies and stores when
// steps >= 0: tests use it to take the image a kill at that point leaves.
func (m *mappedFile) writeFramed(p []byte, headers []int, steps int) (int, error) {
	if err := m.failed(); err != nil {
		return 0, err
	}
	step := func() bool {
		if steps == 0 {
			return false
		}
		steps--
		return true
	}
	written := 0
	h := 0
	for written < len(p) {
		if m.size == m.winOff+mapWindow {
			if err := m.nextWindow(); err != nil {
				m.setErr(err)
				return written, err
			}
		}
		base := int(m.size - m.winOff) // p[written] goes to win[base]
		end := min(len(p), written+mapWindow-base)
		// The bytes between headers first...
		first := h
		from := written
		for ; h < len(headers) && headers[h] < end; h++ {
			if !step() {
				return written, nil
			}
			copy(m.win[base+from-written:], p[from:headers[h]])
			from = headers[h] + headerSize
		}
		if !step() {
			return written, nil
		}
		copy(m.win[base+from-written:], p[from:end])
		// ...then the headers, in order, each in one store.
		for k := first; k < h; k++ {
			if !step() {
				return written, nil
			}
			m.storeHeader(base+headers[k]-written, p[headers[k]:min(len(p), headers[k]+headerSize+1)])
		}
		m.size += int64(end - written)
		written = end
	}
	if m.next == nil && m.size-m.winOff >= mapWindow/2 {
		m.prepareNext()
	}
	return written, nil
}

// storeHeader writes a fragment header at win[off] with one unaligned
// 8-byte store. frag is the fragment from its header on, with at least the
// header; the store's eighth byte is the fragment's first payload byte,
// taken from frag (the payload is copied before the headers), when it has
// one. Otherwise (an empty fragment) the store rewrites the byte before the
// header, or at the window's start the byte after it, with the value the
// window already holds there. The first form reads nothing from the
// window: the byte before the header is the previous record's, which the
// previous writer stored, often on another core, and loading it was a
// cache miss under the commit lock.
func (m *mappedFile) storeHeader(off int, frag []byte) {
	var b [8]byte
	at := off
	switch {
	case len(frag) > headerSize && binary.LittleEndian.Uint16(frag[4:6]) > 0:
		copy(b[:], frag[:headerSize+1])
	case off == 0:
		copy(b[:], frag[:headerSize])
		b[7] = m.win[headerSize]
	default:
		at = off - 1
		b[0] = m.win[off-1]
		copy(b[1:], frag[:headerSize])
	}
	*(*uint64)(unsafe.Pointer(&m.win[at])) = binary.LittleEndian.Uint64(b[:])
}

// Write copies p to the end of the file (WriteFramed with no headers).
func (m *mappedFile) Write(p []byte) (int, error) { return m.writeFramed(p, nil, -1) }

// Sync makes the bytes written so far durable. On Linux the pages of a
// shared file mapping are the page cache's own pages, marked dirty by the
// stores into them, so fdatasync(2) writes them as it writes those of
// write(2); msync(2) would add nothing.
func (m *mappedFile) Sync() error {
	if err := m.failed(); err != nil {
		return err
	}
	for {
		err := unix.Fdatasync(m.fd)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			m.setErr(&os.PathError{Op: "fdatasync", Path: m.f.Name(), Err: err})
			return m.failed()
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
	if m.next != nil {
		p := <-m.next
		m.next = nil
		m.retired = p.old
		if p.win != nil {
			if e := unix.Munmap(p.win); e != nil {
				err = &os.PathError{Op: "munmap", Path: m.f.Name(), Err: e}
			}
		}
	}
	for _, w := range [][]byte{m.retired, m.win} {
		if w == nil {
			continue
		}
		if e := unix.Munmap(w); e != nil && err == nil {
			err = &os.PathError{Op: "munmap", Path: m.f.Name(), Err: e}
		}
	}
	m.retired, m.win = nil, nil
	if e := m.f.Truncate(m.size); e != nil && err == nil {
		err = e
	}
	if e := m.f.Close(); e != nil && err == nil {
		err = e
	}
	m.setErr(os.ErrClosed)
	return err
}

// sizedInfo is an os.FileInfo whose Size is given.
type sizedInfo struct {
	os.FileInfo
	size int64
}

func (s sizedInfo) Size() int64 { return s.size }
