package vfs

import (
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
)

// MemFS is an in-memory FS for tests, with crash simulation.
//
// Paths: names are cleaned with filepath.Clean; relative names are resolved
// against the root "/", which always exists. Errors are *os.PathError values
// wrapping syscall errnos, so errors.Is(err, os.ErrNotExist) and
// errors.Is(err, os.ErrExist) hold where the OS would say so.
//
// Durability model (what CrashClone keeps):
//
//   - File contents. Every file has live bytes (what readers see) and durable
//     bytes. File.Sync makes the live bytes durable. A crash keeps exactly the
//     durable bytes: whatever was written after the last Sync is lost. Create
//     of an existing file truncates the same file: the live bytes become
//     empty, the durable bytes stay those of the last Sync until the next one.
//   - Directory entries. Every directory has a live entry table and a durable
//     one. Creating a file or directory (Create, MkdirAll, Lock), Rename and
//     Remove change only the live table of the directories involved.
//     OpenDir(dir).Sync() copies dir's live table into its durable table. A
//     crash keeps exactly the durable tables: a file whose directory was
//     never synced after its creation does not exist afterwards, a rename not
//     followed by a sync of the directories involved is undone (for a rename
//     across directories, each directory's sync counts on its own), and a
//     removed file comes back with its durable contents.
//   - Directories are entries of their parent like files: MkdirAll(dir) is
//     durable only once the parent of each created directory is synced. The
//     root always exists.
//
// A MemFS made by NewLaxMem skips the second rule: directory entries are
// durable as soon as they change, and only file contents need Sync.
//
// Files are append-only: Write appends, and nothing rewrites bytes already
// written. That lets a Sync share the live buffer with the durable view in
// O(1): the durable bytes are a prefix of the live buffer that no later
// append can modify. A file reused by ReuseForWrite keeps the bytes of its
// previous life beneath the new ones (memNode.under): writes append to a
// fresh buffer, and readers, Stat and a crash see the old bytes past its
// end, as a file overwritten in place shows them.
//
// Concurrency: every method is safe for concurrent use; ReadAt may run
// concurrently with Write on the same file.
type MemFS struct {
	// lax makes directory operations durable immediately.
	lax bool

	mu struct {
		sync.Mutex
		root *memNode
		// locks holds the cleaned paths locked by Lock.
		locks map[string]struct{}
	}
}

var _ FS = (*MemFS)(nil)

// memNode is a file or a directory.
//
// Invariants: a directory has children and durable non-nil and data nil; a
// file has children and durable nil. durableData is always a prefix of a
// past value of data, and no byte of it is ever modified (files only grow by
// append, and truncation replaces the buffer). The file's live contents are
// data followed by under[len(data):], its durable contents durableData
// followed by durableUnder[len(durableData):]; under and durableUnder are
// never modified (ReuseForWrite sets under, Sync copies it to durableUnder,
// Create clears it).
type memNode struct {
	isDir   bool
	modTime time.Time

	// Guarded by MemFS.mu.
	children map[string]*memNode // live entries
	durable  map[string]*memNode // entries made durable by a directory sync

	// dataMu guards data and durableData, so that ReadAt does not take the
	// file system's lock.
	dataMu       sync.RWMutex
	data         []byte
	durableData  []byte
	under        []byte
	durableUnder []byte
	// unsynced is set by a Write and cleared by a Sync: bytes were
	// written that are not durable, for WriteSync. Guarded by dataMu.
	unsynced bool
}

// live returns the file's live contents. n.dataMu must be held.
func (n *memNode) live() []byte {
	if len(n.under) <= len(n.data) {
		return n.data
	}
	return append(n.data[:len(n.data):len(n.data)], n.under[len(n.data):]...)
}

// liveSize returns the size of the file's live contents. n.dataMu must be
// held.
func (n *memNode) liveSize() int { return max(len(n.data), len(n.under)) }

func newDirNode() *memNode {
	return &memNode{
		isDir:    true,
		modTime:  time.Now(),
		children: make(map[string]*memNode),
		durable:  make(map[string]*memNode),
	}
}

// NewMem returns an empty, strict in-memory file system: file contents need
// File.Sync and directory entries need a sync of their directory to survive
// CrashClone.
func NewMem() *MemFS {
	m := &MemFS{}
	m.mu.root = newDirNode()
	m.mu.locks = make(map[string]struct{})
	return m
}

// NewLaxMem returns an in-memory file system whose directory operations are
// durable immediately; file contents still need File.Sync to survive
// CrashClone.
func NewLaxMem() *MemFS {
	m := NewMem()
	m.lax = true
	return m
}

// splitPath cleans name into its components; the root has none.
func splitPath(name string) []string {
	name = filepath.ToSlash(filepath.Clean("/" + name))
	if name == "/" {
		return nil
	}
	return strings.Split(name[1:], "/")
}

func pathErr(op, name string, err error) error {
	return &os.PathError{Op: op, Path: name, Err: err}
}

// walkLocked returns the directory holding the last component of name, and
// that component. m.mu must be held.
func (m *MemFS) walkLocked(op, name string) (dir *memNode, base string, err error) {
	parts := splitPath(name)
	if len(parts) == 0 {
		return nil, "", pathErr(op, name, syscall.EINVAL)
	}
	dir = m.mu.root
	for _, p := range parts[:len(parts)-1] {
		child, ok := dir.children[p]
		if !ok {
			return nil, "", pathErr(op, name, syscall.ENOENT)
		}
		if !child.isDir {
			return nil, "", pathErr(op, name, syscall.ENOTDIR)
		}
		dir = child
	}
	return dir, parts[len(parts)-1], nil
}

// lookupLocked returns the node at name. m.mu must be held.
func (m *MemFS) lookupLocked(op, name string) (*memNode, error) {
	if len(splitPath(name)) == 0 {
		return m.mu.root, nil
	}
	dir, base, err := m.walkLocked(op, name)
	if err != nil {
		return nil, err
	}
	n, ok := dir.children[base]
	if !ok {
		return nil, pathErr(op, name, syscall.ENOENT)
	}
	return n, nil
}

// setEntryLocked links (or, with n nil, unlinks) base in dir. m.mu must be
// held.
func (m *MemFS) setEntryLocked(dir *memNode, base string, n *memNode) {
	if n == nil {
		delete(dir.children, base)
		if m.lax {
			delete(dir.durable, base)
		}
		return
	}
	dir.children[base] = n
	if m.lax {
		dir.durable[base] = n
	}
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.walkLocked("open", name)
	if err != nil {
		return nil, err
	}
	n, ok := dir.children[base]
	switch {
	case ok && n.isDir:
		return nil, pathErr("open", name, syscall.EISDIR)
	case ok:
		n.dataMu.Lock()
		n.data = nil // a fresh buffer: durableData keeps the old one
		n.under = nil
		n.unsynced = false // no byte written yet: see WriteSync
		n.modTime = time.Now()
		n.dataMu.Unlock()
	default:
		n = &memNode{modTime: time.Now()}
		m.setEntryLocked(dir, base, n)
	}
	return &memFile{name: name, n: n, read: true, write: true}, nil
}

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked("open", name)
	if err != nil {
		return nil, err
	}
	return &memFile{name: name, n: n, read: !n.isDir, fs: m}, nil
}

// OpenDir implements FS.
func (m *MemFS) OpenDir(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked("opendir", name)
	if err != nil {
		return nil, err
	}
	if !n.isDir {
		return nil, pathErr("opendir", name, syscall.ENOTDIR)
	}
	return &memFile{name: name, n: n, fs: m}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.walkLocked("remove", name)
	if err != nil {
		return err
	}
	n, ok := dir.children[base]
	if !ok {
		return pathErr("remove", name, syscall.ENOENT)
	}
	if n.isDir && len(n.children) > 0 {
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	m.setEntryLocked(dir, base, nil)
	return nil
}

// Rename implements FS. Renaming a file over a file replaces it; renaming a
// directory is allowed onto a missing or empty directory, as on Linux.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	odir, obase, err := m.walkLocked("rename", oldname)
	if err != nil {
		return err
	}
	n, ok := odir.children[obase]
	if !ok {
		return pathErr("rename", oldname, syscall.ENOENT)
	}
	ndir, nbase, err := m.walkLocked("rename", newname)
	if err != nil {
		return err
	}
	if odir == ndir && obase == nbase {
		return nil
	}
	if n.isDir && m.isAncestorLocked(n, ndir) {
		return pathErr("rename", newname, syscall.EINVAL)
	}
	if target, ok := ndir.children[nbase]; ok {
		switch {
		case target == n:
			return nil
		case n.isDir && !target.isDir:
			return pathErr("rename", newname, syscall.ENOTDIR)
		case !n.isDir && target.isDir:
			return pathErr("rename", newname, syscall.EISDIR)
		case target.isDir && len(target.children) > 0:
			return pathErr("rename", newname, syscall.ENOTEMPTY)
		}
	}
	m.setEntryLocked(odir, obase, nil)
	m.setEntryLocked(ndir, nbase, n)
	return nil
}

// isAncestorLocked reports whether dir is d or below d. m.mu must be held.
func (m *MemFS) isAncestorLocked(d, dir *memNode) bool {
	if d == dir {
		return true
	}
	for _, c := range d.children {
		if c.isDir && m.isAncestorLocked(c, dir) {
			return true
		}
	}
	return false
}

// MkdirAll implements FS. perm is ignored.
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.mu.root
	for _, p := range splitPath(dir) {
		child, ok := n.children[p]
		if !ok {
			child = newDirNode()
			m.setEntryLocked(n, p, child)
		} else if !child.isDir {
			return pathErr("mkdir", dir, syscall.ENOTDIR)
		}
		n = child
	}
	return nil
}

// List implements FS.
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked("open", dir)
	if err != nil {
		return nil, err
	}
	if !n.isDir {
		return nil, pathErr("readdirent", dir, syscall.ENOTDIR)
	}
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked("stat", name)
	if err != nil {
		return nil, err
	}
	return n.stat(filepath.Base(filepath.Clean("/" + name))), nil
}

// Lock implements FS. The lock file is created like Create would (a
// directory entry that needs a directory sync to be durable).
func (m *MemFS) Lock(name string) (io.Closer, error) {
	key := "/" + strings.Join(splitPath(name), "/")
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.mu.locks[key]; ok {
		return nil, errors.Wrapf(ErrLocked, "lock %s: held by another handle", name)
	}
	dir, base, err := m.walkLocked("open", name)
	if err != nil {
		return nil, err
	}
	if n, ok := dir.children[base]; !ok {
		m.setEntryLocked(dir, base, &memNode{modTime: time.Now()})
	} else if n.isDir {
		return nil, pathErr("open", name, syscall.EISDIR)
	}
	m.mu.locks[key] = struct{}{}
	return &memLock{fs: m, key: key}, nil
}

type memLock struct {
	fs   *MemFS
	once sync.Once
	key  string
}

func (l *memLock) Close() error {
	err := os.ErrClosed
	l.once.Do(func() {
		l.fs.mu.Lock()
		delete(l.fs.mu.locks, l.key)
		l.fs.mu.Unlock()
		err = nil
	})
	return err
}
