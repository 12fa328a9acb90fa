//go:build linux && (amd64 || arm64)

package vfs

import (
	"encoding/binary"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

// spanSize is how much of a mapped file one mapping covers: the write
// position moves from one span to the next with an mmap on the writer's
// goroutine, so spans are large enough that a WAL rarely crosses one
// (address space is cheap; only the pages near the write position are
// resident, see mappedFile). Tests lower it to cross spans cheaply.
var spanSize int64 = 256 << 20

// mapStep is the granule of the work done off the write path: the helper
// reserves, populates and drops the mapping's pages a step at a time.
const mapStep = 1 << 20

// reserveAhead is how far past the write position the helper keeps the
// file's space reserved, and populateAhead how much of the reserved space
// past the write position it keeps mapped in. Reserving is the costly part
// (fallocate zeroes the pages on tmpfs): ahead by several steps, a helper
// that waits for a CPU on a busy machine is still ahead of the writer.
const (
	reserveAhead  = 8 * mapStep
	populateAhead = 2 * mapStep
)

var _ MappedCreator = diskFS{}

// CreateMapped implements MappedCreator with a span of the file mapped
// MAP_SHARED. Space is reserved with fallocate(2) ahead of the writes, so a
// full disk is an error from Write (ENOSPC), never a SIGBUS on a store into
// a hole. File systems without fallocate get a plain file.
func (fs diskFS) CreateMapped(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	m := &mappedFile{f: f, fd: int(f.Fd()), spanSize: spanSize, fallocate: fallocate, pwrite: unix.Pwrite, syncFileRange: unix.SyncFileRange}
	if err := m.reserve(mapStep); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.ENODEV) {
			// No preallocation here.
			return &diskFile{File: f}, nil
		}
		return nil, err
	}
	win, err := m.mapSpanAt(0)
	if err != nil {
		if errors.Is(err, unix.ENODEV) {
			// No shared mappings here.
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
// The mapping covers a span of the file far larger than what is resident:
// a helper goroutine, kicked by the writer every half step, keeps the space
// past the write position reserved (fallocate) and its first pages mapped
// in (MADV_POPULATE_READ), starts the writeback of the steps behind the
// write position (sync_file_range), and hands their pages back
// (MADV_DONTNEED: the page cache keeps them, dirty or not, so no byte is
// lost; the process's RSS stops counting them). The writer never waits
// for the helper: when the helper is behind, the writer's stores fault the
// pages in, and a write past the reserved space reserves it itself. An
// earlier design mapped a 1 MiB window at a time, prepared by a goroutine
// per window (munmap, fallocate, mmap, populate); on a busy 2-core machine
// the preparation was still running when the writer reached the window's
// end for half the windows of a 1 KB-record load, and the writer's wait
// for it was the longest stall of a write (tens of milliseconds).
//
// Invariants: win maps the file's bytes [winOff, winOff+spanSize); winOff
// <= size <= winOff+spanSize, and bytes [0, size) hold what Write was
// given; size <= reserved unless the last writes went in by pwrite (which
// allocates what it writes). The writer never stores at or past reserved
// into a page no pwrite wrote (the
// file ends there: a store past it would be a SIGBUS). After an error every
// later Write and Sync returns it: what the file holds past size is
// unknown. Write, WriteFramed, Stat, ReadAt, Read and Close run one at a
// time (the DB's commit lock); Sync may run beside them, and touches
// nothing of the file's but fd, f (both set at creation) and err, which is
// atomic for that reason. Only the helper unmaps a span the writer left
// (retired), and it reads the current span under mu, so it never advises
// pages of a range that is unmapped.
type mappedFile struct {
	f        *os.File
	fd       int
	spanSize int64
	win      []byte
	winOff   int64
	size     int64
	// reserved is the end of the space reserved with fallocate; it grows
	// under reserveMu (see reserve) and is read by the writer without it.
	// fallocate is fallocate (tests make it fail).
	reserveMu sync.Mutex
	reserved  atomic.Int64
	fallocate func(fd int, off, n int64) error
	// pwrite is unix.Pwrite (tests make it fail). Only the writer calls it,
	// so a test may swap it between writes; the helper goroutine reads fd.
	pwrite func(fd int, p []byte, off int64) (int, error)
	// syncFileRange is unix.SyncFileRange; only the helper calls it (tests
	// record the calls, swapping it before the first write).
	syncFileRange func(fd int, off, n int64, flags int) error
	// kick wakes the helper, started at the first kick; pos is the write
	// position it works from; kicked is the half step of the last kick.
	kick       chan struct{}
	helperDone chan struct{}
	pos        atomic.Int64
	kicked     int64
	// pwriting: the write of the last kick went in by pwrite, so the
	// helper maps nothing in ahead of it.
	pwriting atomic.Bool
	// mu guards helperWin, helperOff and retired: the span the helper
	// advises and the spans it is to unmap.
	mu        sync.Mutex
	helperWin []byte
	helperOff int64
	retired   [][]byte
	// readOff is Read's position.
	readOff int64
	// hdrSave keeps the headers pwriteBlanked blanks (reused).
	hdrSave [][headerSize]byte
	// err is the file's first error, set once (see setErr). A write that
	// cannot reserve or map sets it under the writer's lock, and Sync,
	// called outside that lock, reads and sets it: hence atomic (one load
	// per write on the copying path, a plain load on amd64).
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

// reserve makes sure the file's space is reserved up to end.
func (m *mappedFile) reserve(end int64) error {
	m.reserveMu.Lock()
	defer m.reserveMu.Unlock()
	r := m.reserved.Load()
	if r >= end {
		return nil
	}
	if err := m.fallocate(m.fd, r, end-r); err != nil {
		return &os.PathError{Op: "fallocate", Path: m.f.Name(), Err: err}
	}
	m.reserved.Store(end)
	return nil
}

// mapSpanAt maps the span starting at off, a multiple of spanSize. Nothing
// is populated: the helper maps pages in ahead of the writer.
func (m *mappedFile) mapSpanAt(off int64) ([]byte, error) {
	win, err := unix.Mmap(m.fd, off, int(m.spanSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: m.f.Name(), Err: err}
	}
	return win, nil
}

// nextSpan moves the writer to the span after the current one. The old
// span goes to the helper to unmap.
func (m *mappedFile) nextSpan() error {
	off := m.winOff + m.spanSize
	win, err := m.mapSpanAt(off)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.retired = append(m.retired, m.win)
	m.helperWin, m.helperOff = win, off
	m.mu.Unlock()
	m.win, m.winOff = win, off
	return nil
}

// maybeKick wakes the helper at the first write and whenever the write
// position entered a new half step since the last kick. A log never
// written (a database opened to be read) starts no helper.
func (m *mappedFile) maybeKick(pwritten bool) {
	h := m.size / (mapStep / 2)
	if h == m.kicked && m.kick != nil {
		return
	}
	m.kicked = h
	m.pos.Store(m.size)
	m.pwriting.Store(pwritten)
	if m.kick == nil {
		m.kick = make(chan struct{}, 1)
		m.helperDone = make(chan struct{})
		m.mu.Lock()
		m.helperWin, m.helperOff = m.win, m.winOff
		m.mu.Unlock()
		go m.help()
	}
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// help is the helper: for each kick it unmaps retired spans, reserves the
// space ahead of the write position, maps in the reserved pages just ahead
// and hands back those behind. Its failures are not the file's: a
// reservation that fails is retried by the writer when it needs the space,
// where the failure is the write's; the advice is only advice.
func (m *mappedFile) help() {
	defer close(m.helperDone)
	var populated, dropped int64 // file offsets, within the helper's span
	var flushed int64            // file offset up to which writeback was started
	for range m.kick {
		m.mu.Lock()
		win, off, retired := m.helperWin, m.helperOff, m.retired
		m.retired = nil
		m.mu.Unlock()
		for i, w := range retired {
			if err := unix.Munmap(w); err != nil {
				// Close tries again and reports it.
				m.mu.Lock()
				m.retired = append(m.retired, retired[i:]...)
				m.mu.Unlock()
				break
			}
		}
		pos := m.pos.Load()
		// A writer that pwrites needs neither reserved space nor pages
		// mapped in ahead of it.
		pwriting := m.pwriting.Load()
		// A step at a time: a writer that needs the space waits for
		// one step's fallocate at most, and the reserved end it reads
		// moves up as each step is done.
		for r := m.reserved.Load(); r < pos-pos%mapStep+reserveAhead && !pwriting; r = m.reserved.Load() {
			if m.reserve(r-r%mapStep+mapStep) != nil {
				break
			}
		}
		end := off + int64(len(win))
		populated = max(populated, pos-pos%pageSize, off)
		if to := min(pos+populateAhead, m.reserved.Load(), end); to > populated && !pwriting {
			_ = unix.Madvise(win[populated-off:to-off], unix.MADV_POPULATE_READ)
			populated = to
		}
		// The writer may be past the end of the span copied above (it
		// moved on since): advise nothing outside the span.
		dropped = max(dropped, off)
		if to := min(pos-pos%mapStep-mapStep, end); to > dropped {
			_ = unix.Madvise(win[dropped-off:to-off], unix.MADV_DONTNEED)
			dropped = to
		}
		// Start the writeback of what was handed back
		// (sync_file_range's WRITE: it waits for nothing and makes
		// nothing durable), so that the sync of a rotation or of a
		// synced write finds a step or two dirty instead of the whole
		// WAL: on a disk, a rotation's sync of a 64 MiB WAL written
		// without syncs held the writer for hundreds of milliseconds.
		// Only pages no longer mapped: cleaning a mapped page for
		// writeback write-protects it, a TLB flush on every core that
		// runs the writer. Everything before dropped is unmapped (it
		// lies in a retired span or was handed back). This pays because
		// every WAL is synced at rotation (db's openWALLocked): were
		// that sync to go, the writeback would write WAL bytes that a
		// WAL deleted before the kernel's own writeback never writes.
		if dropped > flushed {
			_ = m.syncFileRange(m.fd, flushed, dropped-flushed, unix.SYNC_FILE_RANGE_WRITE)
			flushed = dropped
		}
	}
}

var pageSize = int64(os.Getpagesize())

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
// increasing) only after the other bytes of p in the same span, and each
// with one 8-byte store. A process killed part way (a SIGKILL lands between
// instructions) then leaves, of the fragments being copied, complete ones
// followed by a header still zero: the log reader sees a clean end or a torn
// tail, never a fragment whose checksum fails. Spans and reservations
// end on 32 KiB block boundaries, so no fragment crosses either. This file's build
// is limited to 64-bit platforms whose unaligned 8-byte stores are one
// instruction. A flush of pwriteMin bytes or more is not copied: its bytes
// go in by pwrite(2) with the headers blanked (pwriteBlanked), and then
// each header with a pwrite of its own where it lies within a page, or with
// the store above where it crosses one.
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
		if m.size == m.winOff+m.spanSize {
			if err := m.nextSpan(); err != nil {
				m.setErr(err)
				return written, err
			}
		}
		base := int(m.size - m.winOff) // p[written] goes to win[base]
		end := min(len(p), written+int(m.spanSize)-base)
		// The helper keeps the space reserved ahead; when it is behind,
		// the writer reserves what it needs itself. When that fails (a
		// full disk), what fits below the reserved end is written. A
		// pwrite needs no reservation: it allocates what it writes, or
		// fails with ENOSPC, and the headers stored through the mapping
		// after it land on pages it wrote.
		pwritten := len(p) >= pwriteMin
		var rerr error
		if need := m.size + int64(end-written); need > m.reserved.Load() && !pwritten {
			if rerr = m.reserve(need + (mapStep-need%mapStep)%mapStep); rerr != nil {
				end = written + int(m.reserved.Load()-m.size)
			}
		}
		first := h
		if pwritten {
			// A large flush goes in by pwrite(2), with its headers
			// blanked; then the headers, as below.
			for h < len(headers) && headers[h] < end {
				h++
			}
			if err := m.pwriteBlanked(p[written:end], headers[first:h], written, steps >= 0, step); err != nil {
				if err == errKilled {
					return written, nil
				}
				m.setErr(err)
				return written, err
			}
		} else {
			// The bytes between headers first...
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
		}
		// ...then the headers, in order, each in one store, or after a
		// pwrite, in one pwrite where it lies within a page: the kernel
		// copies a page's part of a write whole or not at all (a pending
		// SIGKILL stops a write only between pages), and the page is in
		// the page cache already, where a store through the mapping
		// would fault to map it in.
		for k := first; k < h; k++ {
			if !step() {
				return written, nil
			}
			if off := m.size + int64(headers[k]-written); pwritten && pageSize-off%pageSize >= headerSize {
				if err := m.pwriteAll(p[headers[k]:headers[k]+headerSize], off, steps >= 0, step); err != nil {
					if err == errKilled {
						return written, nil
					}
					m.setErr(err)
					return written, err
				}
				continue
			}
			m.storeHeader(base+headers[k]-written, p[headers[k]:min(len(p), headers[k]+headerSize+1)])
		}
		m.size += int64(end - written)
		written = end
		if rerr != nil {
			m.setErr(rerr)
			return written, rerr
		}
	}
	m.maybeKick(len(p) >= pwriteMin)
	return written, nil
}

// pwriteMin is the smallest flush written with pwrite(2) rather than
// copied into the mapping. A store to a page of the mapping that the helper
// has not mapped in yet takes a fault, and a large flush reaches such pages
// more often than the helper's population keeps up on a busy machine;
// pwrite copies into the page cache without faulting, at the price of a
// system call, which small flushes (most group commits of small records)
// would pay for nothing.
const pwriteMin = 12 << 10

// errKilled is pwriteBlanked's answer when a test's step budget ran out
// (the image of a process killed there is taken).
var errKilled = errors.New("vfs: killed (test)")

// pwriteBlanked writes chunk, the bytes of a flush from its offset written
// on, at the end of the file with every fragment header in it (hdrs, offsets
// in the flush) zero, for writeFramed to write after. A process killed
// during the write (the kernel stops a write between pages when a fatal
// signal is pending, so any page-granular prefix may land) then leaves
// payload behind a zero header, which ends the log cleanly, never a header
// whose payload is missing. The headers are blanked in chunk itself and put
// back before it returns: the caller's buffer is unchanged afterwards.
// step is writeFramed's: one step per page when a test counts them.
func (m *mappedFile) pwriteBlanked(chunk []byte, hdrs []int, written int, paged bool, step func() bool) error {
	m.hdrSave = m.hdrSave[:0]
	for _, h := range hdrs {
		at := h - written
		var saved [headerSize]byte
		copy(saved[:], chunk[at:at+headerSize])
		m.hdrSave = append(m.hdrSave, saved)
		copy(chunk[at:at+headerSize], zeroHeader[:])
	}
	err := m.pwriteAll(chunk, m.size, paged, step)
	for k, h := range hdrs {
		at := h - written
		copy(chunk[at:at+headerSize], m.hdrSave[k][:])
	}
	return err
}

var zeroHeader [headerSize]byte

// pwriteAll writes b at off with as many pwrite(2) calls as it takes. When
// paged (a test counting steps), it writes a page at a time, a step each.
func (m *mappedFile) pwriteAll(b []byte, off int64, paged bool, step func() bool) error {
	for len(b) > 0 {
		n := len(b)
		if paged {
			n = min(n, int(pageSize-off%pageSize))
			if !step() {
				return errKilled
			}
		}
		w, err := m.pwrite(m.fd, b[:n], off)
		if err == unix.EINTR {
			continue
		}
		if err == nil && w == 0 {
			err = io.ErrShortWrite // no progress: do not spin
		}
		if err != nil {
			return &os.PathError{Op: "pwrite", Path: m.f.Name(), Err: err}
		}
		b, off = b[w:], off+int64(w)
	}
	return nil
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
	if m.kick != nil {
		// The helper stops before the file is trimmed: it could reserve
		// space past the trimmed end.
		close(m.kick)
		<-m.helperDone
		m.kick = nil
	}
	m.mu.Lock()
	spans := append(m.retired, m.win)
	m.retired, m.helperWin = nil, nil
	m.mu.Unlock()
	for _, w := range spans {
		if w == nil {
			continue
		}
		if e := unix.Munmap(w); e != nil && err == nil {
			err = &os.PathError{Op: "munmap", Path: m.f.Name(), Err: e}
		}
	}
	m.win = nil
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
