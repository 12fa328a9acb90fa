// Package errorfs wraps a vfs.FS so that tests can make chosen operations
// fail: "the disk fills during compaction", "the MANIFEST sync fails". An
// Injector sees every operation with the path it touches and decides
// whether it fails; injected errors wrap ErrInjected. It is not covered by
// the API contract.
package errorfs

import (
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/vfs"
)

// ErrInjected is the class of every injected error.
var ErrInjected = errors.New("errorfs: injected error")

// Op is a kind of file-system operation.
type Op uint8

const (
	OpCreate  Op = iota // FS.Create
	OpOpen              // FS.Open
	OpRead              // File.Read, File.ReadAt
	OpWrite             // File.Write
	OpSync              // File.Sync, on files and on directories
	OpRemove            // FS.Remove
	OpRename            // FS.Rename (the path is the old name)
	OpList              // FS.List
	OpLock              // FS.Lock
	OpStat              // FS.Stat, File.Stat
	OpClose             // File.Close, and Close of a lock
	OpOpenDir           // FS.OpenDir
	OpMkdir             // FS.MkdirAll
	numOps
)

var opNames = [numOps]string{"create", "open", "read", "write", "sync", "remove",
	"rename", "list", "lock", "stat", "close", "opendir", "mkdir"}

func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return "op(?)"
}

// Injector decides whether an operation fails. MaybeError returns nil to let
// op on path proceed, or the error to return instead. It is called from many
// goroutines at once.
type Injector interface {
	MaybeError(op Op, path string) error
}

// InjectorFunc adapts a function to Injector.
type InjectorFunc func(op Op, path string) error

// MaybeError implements Injector.
func (f InjectorFunc) MaybeError(op Op, path string) error { return f(op, path) }

// Injected returns an error of the ErrInjected class for op on path.
func Injected(op Op, path string) error {
	return errors.Wrapf(ErrInjected, "%s %s", op, path)
}

// Filter selects the operations an injector counts or fails: those of the
// listed kinds (all kinds if none are listed) whose path contains a
// substring (any path if empty). Configure a filter before the injector is
// in use.
type Filter struct {
	ops          uint32 // bit set of Ops; 0 means all
	pathContains string
}

func (f *Filter) matches(op Op, path string) bool {
	if f.ops != 0 && f.ops&(1<<op) == 0 {
		return false
	}
	return f.pathContains == "" || strings.Contains(path, f.pathContains)
}

// Index fails the n-th matching operation (counting from 0), and with
// Sticky every matching operation after it too. The count is atomic, so
// concurrent operations each get a distinct index.
type Index struct {
	Filter
	n      int64
	sticky bool
	count  atomic.Int64
}

// OnIndex returns an injector that fails the n-th operation (counting from
// 0) among those its filter matches; by default all.
func OnIndex(n int) *Index { return &Index{n: int64(n)} }

// Only restricts i to operations of the given kinds.
func (i *Index) Only(ops ...Op) *Index {
	for _, op := range ops {
		i.ops |= 1 << op
	}
	return i
}

// PathContains restricts i to paths containing s.
func (i *Index) PathContains(s string) *Index { i.pathContains = s; return i }

// Sticky makes i fail every matching operation from the n-th on, as a full
// disk would.
func (i *Index) Sticky() *Index { i.sticky = true; return i }

// Count returns how many matching operations i has seen. Running a workload
// once with OnIndex(-1) and reading Count gives the range of indexes to try.
func (i *Index) Count() int { return int(i.count.Load()) }

// MaybeError implements Injector.
func (i *Index) MaybeError(op Op, path string) error {
	if !i.matches(op, path) {
		return nil
	}
	k := i.count.Add(1) - 1
	if k == i.n || (i.sticky && i.n >= 0 && k > i.n) {
		return Injected(op, path)
	}
	return nil
}

// Toggle fails every matching operation while it is enabled. The zero value
// is disabled and matches every operation.
type Toggle struct {
	Filter
	on atomic.Bool
}

// NewToggle returns a disabled Toggle that matches operations of the given
// kinds (all kinds if none).
func NewToggle(ops ...Op) *Toggle {
	t := &Toggle{}
	for _, op := range ops {
		t.ops |= 1 << op
	}
	return t
}

// PathContains restricts t to paths containing s.
func (t *Toggle) PathContains(s string) *Toggle { t.pathContains = s; return t }

// Enable makes matching operations fail.
func (t *Toggle) Enable() { t.on.Store(true) }

// Disable lets every operation through.
func (t *Toggle) Disable() { t.on.Store(false) }

// MaybeError implements Injector.
func (t *Toggle) MaybeError(op Op, path string) error {
	if t.on.Load() && t.matches(op, path) {
		return Injected(op, path)
	}
	return nil
}

// Wrap returns fs with inj consulted before every operation. A failed
// operation does nothing, except Close, which closes the underlying file
// anyway and then reports the injected error.
func Wrap(fs vfs.FS, inj Injector) vfs.FS { return &errorFS{fs: fs, inj: inj} }

var _ vfs.FS = (*errorFS)(nil)

type errorFS struct {
	fs  vfs.FS
	inj Injector
}

func (e *errorFS) Create(name string) (vfs.File, error) {
	if err := e.inj.MaybeError(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := e.fs.Create(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, name: name, inj: e.inj}, nil
}

// CreateMapped creates the file through the wrapped file system's
// MappedCreator when it has one, so that fault injection covers mapped
// files too.
func (e *errorFS) CreateMapped(name string) (vfs.File, error) {
	if err := e.inj.MaybeError(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := vfs.CreateMapped(e.fs, name)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, name: name, inj: e.inj}, nil
}

// ReuseForWrite reuses the file through the wrapped file system's Reuser
// (vfs.ReuseForWrite). The injector sees it as OpRename of oldname, then
// OpOpen of newname: a failed rename leaves oldname as it was, a failed
// open the file renamed and unopened, as the two system calls can fail.
func (e *errorFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	if err := e.inj.MaybeError(OpRename, oldname); err != nil {
		return nil, err
	}
	if err := e.inj.MaybeError(OpOpen, newname); err != nil {
		if rerr := e.fs.Rename(oldname, newname); rerr != nil {
			return nil, rerr
		}
		return nil, err
	}
	f, err := vfs.ReuseForWrite(e.fs, oldname, newname)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, name: newname, inj: e.inj}, nil
}

func (e *errorFS) Open(name string) (vfs.File, error) {
	if err := e.inj.MaybeError(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.fs.Open(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, name: name, inj: e.inj}, nil
}

func (e *errorFS) OpenDir(name string) (vfs.File, error) {
	if err := e.inj.MaybeError(OpOpenDir, name); err != nil {
		return nil, err
	}
	f, err := e.fs.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, name: name, inj: e.inj}, nil
}

func (e *errorFS) Remove(name string) error {
	if err := e.inj.MaybeError(OpRemove, name); err != nil {
		return err
	}
	return e.fs.Remove(name)
}

func (e *errorFS) Rename(oldname, newname string) error {
	if err := e.inj.MaybeError(OpRename, oldname); err != nil {
		return err
	}
	return e.fs.Rename(oldname, newname)
}

func (e *errorFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := e.inj.MaybeError(OpMkdir, dir); err != nil {
		return err
	}
	return e.fs.MkdirAll(dir, perm)
}

func (e *errorFS) List(dir string) ([]string, error) {
	if err := e.inj.MaybeError(OpList, dir); err != nil {
		return nil, err
	}
	return e.fs.List(dir)
}

func (e *errorFS) Stat(name string) (os.FileInfo, error) {
	if err := e.inj.MaybeError(OpStat, name); err != nil {
		return nil, err
	}
	return e.fs.Stat(name)
}

func (e *errorFS) Lock(name string) (io.Closer, error) {
	if err := e.inj.MaybeError(OpLock, name); err != nil {
		return nil, err
	}
	l, err := e.fs.Lock(name)
	if err != nil {
		return nil, err
	}
	return &errorCloser{c: l, name: name, inj: e.inj}, nil
}

type errorCloser struct {
	c    io.Closer
	name string
	inj  Injector
}

func (c *errorCloser) Close() error {
	err := c.c.Close()
	if ierr := c.inj.MaybeError(OpClose, c.name); ierr != nil {
		return ierr
	}
	return err
}

// errorFile consults the injector before each call on the file.
type errorFile struct {
	vfs.File
	name string
	inj  Injector
}

func (f *errorFile) Read(p []byte) (int, error) {
	if err := f.inj.MaybeError(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.Read(p)
}

func (f *errorFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.inj.MaybeError(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *errorFile) Write(p []byte) (int, error) {
	if err := f.inj.MaybeError(OpWrite, f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

// WriteFramed is Write for a log writer that passes its fragment headers
// (record.FramedWriter), forwarded when the wrapped file takes them.
func (f *errorFile) WriteFramed(p []byte, headers []int) (int, error) {
	if err := f.inj.MaybeError(OpWrite, f.name); err != nil {
		return 0, err
	}
	if fw, ok := f.File.(interface {
		WriteFramed(p []byte, headers []int) (int, error)
	}); ok {
		return fw.WriteFramed(p, headers)
	}
	return f.File.Write(p)
}

// WriteSync is a write and its sync in one call (record.SyncWriter,
// pwritev2 with RWF_DSYNC on a disk), forwarded when the wrapped file has
// it. The injector sees OpWrite, then OpSync: an injected write error
// writes nothing; an injected sync error writes p (with Write: not made
// durable) and fails, as a call whose write went through and whose sync
// did not.
func (f *errorFile) WriteSync(p []byte) (int, bool, error) {
	sw, ok := f.File.(interface {
		WriteSync(p []byte) (int, bool, error)
	})
	if !ok {
		return 0, false, nil
	}
	if err := f.inj.MaybeError(OpWrite, f.name); err != nil {
		return 0, true, err
	}
	if err := f.inj.MaybeError(OpSync, f.name); err != nil {
		n, _ := f.File.Write(p)
		return n, true, err
	}
	return sw.WriteSync(p)
}

func (f *errorFile) Sync() error {
	if err := f.inj.MaybeError(OpSync, f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *errorFile) Stat() (os.FileInfo, error) {
	if err := f.inj.MaybeError(OpStat, f.name); err != nil {
		return nil, err
	}
	return f.File.Stat()
}

func (f *errorFile) Close() error {
	err := f.File.Close()
	if ierr := f.inj.MaybeError(OpClose, f.name); ierr != nil {
		return ierr
	}
	return err
}
