package vfs

import (
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
)

// Default is the operating system's file system (package os).
//
// Sync on a file returned by Create or Open uses fdatasync(2) on Linux: it
// flushes the data and the metadata needed to read it back (the file size),
// but not timestamps. That is exactly what the engine needs, because it only
// ever appends to files and reads them back by size. Other systems use
// fsync(2) through os.File.Sync. Sync on a directory returned by OpenDir
// uses fsync(2) on Unix, which is what makes entries durable, and is a
// no-op on Windows (fsyncDir).
//
// Lock combines an exclusive lock on the lock file that excludes other
// processes (flock(2) LOCK_EX|LOCK_NB on Unix, LockFileEx on Windows; on
// systems with neither Lock fails), with a process-wide set of held lock paths, which
// excludes other handles in this process: flock locks belong to the open
// file description, so a second open of the same file in one process would
// otherwise succeed on some systems and silently share the lock on others.
var Default FS = diskFS{}

// ErrLocked is the class of the error Lock returns when the file is already
// locked by another process or by another handle in this process.
var ErrLocked = errors.New("strata: database is locked")

type diskFS struct{}

var _ FS = diskFS{}

func (diskFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &diskFile{File: f}, nil
}

func (diskFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return &diskFile{File: f}, nil
}

func (diskFS) OpenDir(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !fi.IsDir() {
		_ = f.Close()
		return nil, &os.PathError{Op: "opendir", Path: name, Err: errNotDir}
	}
	return dirFile{File: f}, nil
}

func (diskFS) Remove(name string) error                    { return os.Remove(name) }
func (diskFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (diskFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }
func (diskFS) Stat(name string) (os.FileInfo, error)       { return os.Stat(name) }

func (diskFS) List(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	names, err := f.Readdirnames(-1)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return names, nil
}

// heldLocks is the set of absolute paths this process holds a Lock on.
var heldLocks struct {
	sync.Mutex
	paths map[string]struct{}
}

func (diskFS) Lock(name string) (io.Closer, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, err
	}
	heldLocks.Lock()
	defer heldLocks.Unlock()
	if _, ok := heldLocks.paths[abs]; ok {
		return nil, errors.Wrapf(ErrLocked, "lock %s: held by another handle in this process", name)
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	err = flock(f)
	// A child this process forks (os/exec, in any goroutine) holds a copy
	// of every descriptor until its exec closes them, this lock's of a
	// handle just closed included, and a flock follows the open file
	// description: for that moment the lock reads as held by another
	// process. A few short retries ride it out; a lock another process
	// really holds is still refused, some 50 ms later.
	for try := 0; try < 5 && errors.Is(err, ErrLocked); try++ {
		time.Sleep(time.Duration(try+1) * 3 * time.Millisecond)
		err = flock(f)
	}
	if err != nil {
		_ = f.Close()
		if errors.Is(err, ErrLocked) {
			return nil, errors.Wrapf(err, "lock %s: database is locked by another process", name)
		}
		return nil, errors.Wrapf(err, "lock %s", name)
	}
	if heldLocks.paths == nil {
		heldLocks.paths = make(map[string]struct{})
	}
	heldLocks.paths[abs] = struct{}{}
	return &diskLock{f: f, path: abs}, nil
}

// diskLock releases a Lock. Closing the file drops the flock.
type diskLock struct {
	once sync.Once
	f    *os.File
	path string
}

func (l *diskLock) Close() error {
	err := os.ErrClosed
	l.once.Do(func() {
		heldLocks.Lock()
		delete(heldLocks.paths, l.path)
		heldLocks.Unlock()
		err = l.f.Close()
	})
	return err
}

// diskFile is an os.File whose Sync is fdatasync where available.
type diskFile struct {
	*os.File
	// noWriteSync is set once WriteSync found the call unsupported.
	noWriteSync atomic.Bool
}

func (f *diskFile) Sync() error { return datasync(f.File) }

// dirFile is an open directory; Sync makes its entries durable as the
// platform allows (fsyncDir: fsync(2) on Unix, a no-op on Windows).
type dirFile struct {
	*os.File
}

func (d dirFile) Sync() error { return fsyncDir(d.File) }
