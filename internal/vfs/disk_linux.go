package vfs

import (
	"math/bits"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// datasync flushes f's data and the metadata needed to read it back
// (fdatasync(2)). It goes through SyscallConn so that the file keeps its
// non-blocking mode, which os.File.Fd would clear.
func datasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = unix.Fdatasync(int(fd))
			if serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}

// WriteSync writes p at the file's position and makes it durable in one
// system call: pwritev2(2) at offset -1 (the file position, which it
// advances, as write(2) does) with RWF_DSYNC, the write followed by an
// fdatasync of the range it wrote. It makes durable only the bytes it
// writes (and the metadata needed to read them back, the size when it
// grows): a caller that needs earlier writes durable too must have synced
// them first.
//
// supported is false, with nothing written, when the kernel or the file
// system refuses the call (ENOSYS before Linux 4.6, EINVAL for a flag
// before Linux 4.7, EOPNOTSUPP from a file system without it); the file
// then remembers that, and the caller writes and syncs the usual way. A
// short write is continued until p is written or an error: on an error
// the bytes of p may be written in part and nothing of p is known durable.
func (f *diskFile) WriteSync(p []byte) (n int, supported bool, err error) {
	if f.noWriteSync.Load() {
		return 0, false, nil
	}
	rc, err := f.File.SyscallConn()
	if err != nil {
		return 0, true, err
	}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, e := writeSyncCall(fd, p[n:])
			if e == unix.EINTR {
				continue
			}
			if e != nil {
				serr = e
				return true
			}
			n += m
		}
		return true
	}); err != nil {
		return n, true, err
	}
	if serr != nil {
		if n == 0 && (serr == unix.ENOSYS || serr == unix.EOPNOTSUPP || serr == unix.EINVAL) {
			f.noWriteSync.Store(true)
			return 0, false, nil
		}
		return n, true, &os.PathError{Op: "pwritev2", Path: f.Name(), Err: serr}
	}
	return n, true, nil
}

// writeSyncCall is the system call of WriteSync; tests replace it to fail.
var writeSyncCall = pwritev2DSync

// pwritev2DSync is pwritev2(fd, [p], -1, RWF_DSYNC), without the iovec
// slice that unix.Pwritev2 allocates.
func pwritev2DSync(fd uintptr, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	iov := unix.Iovec{Base: &p[0]}
	iov.SetLen(len(p))
	// The offset -1 (the file position) travels as low and high halves
	// (the kernel's pos_from_hilo): on 64-bit kernels the low word is the
	// whole offset.
	off := int64(-1)
	lo := uintptr(off)
	hi := uintptr(uint64(off) >> 32 >> (bits.UintSize - 32))
	n, _, e := unix.Syscall6(unix.SYS_PWRITEV2, fd, uintptr(unsafe.Pointer(&iov)), 1, lo, hi, unix.RWF_DSYNC)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
