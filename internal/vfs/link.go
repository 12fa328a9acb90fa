package vfs

import (
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/cockroachdb/errors"
)

// Linker is implemented by file systems that can make hard links. It is an
// optional extension of FS: callers use the package function Link, which
// reports ErrLinkUnsupported for file systems without it.
type Linker interface {
	// Link makes newname a second name of the existing file oldname (a
	// hard link). newname must not exist. Like a creation, the new entry
	// is durable once its directory is synced.
	Link(oldname, newname string) error
}

// ErrLinkUnsupported is the class of the error Link returns when fs cannot
// make hard links at all. Callers that can copy instead should also fall
// back on any other Link error (EXDEV across devices, EPERM on file systems
// without hard links).
var ErrLinkUnsupported = errors.New("vfs: hard links are not supported")

// Link makes newname a hard link to oldname when fs implements Linker.
func Link(fs FS, oldname, newname string) error {
	l, ok := fs.(Linker)
	if !ok {
		return errors.Wrapf(ErrLinkUnsupported, "link %s %s", oldname, newname)
	}
	return l.Link(oldname, newname)
}

var _ Linker = diskFS{}

// Link implements Linker with link(2).
func (diskFS) Link(oldname, newname string) error { return os.Link(oldname, newname) }

var _ Linker = (*MemFS)(nil)

// Link implements Linker: newname shares oldname's contents, which never
// change afterwards in practice (files are append-only, and the engine links
// only finished files). The new entry needs a sync of its directory to
// survive CrashClone, as a creation does.
func (m *MemFS) Link(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked("link", oldname)
	if err != nil {
		return err
	}
	if n.isDir {
		return pathErr("link", oldname, syscall.EPERM)
	}
	dir, base, err := m.walkLocked("link", newname)
	if err != nil {
		return err
	}
	if _, ok := dir.children[base]; ok {
		return pathErr("link", newname, syscall.EEXIST)
	}
	m.setEntryLocked(dir, base, n)
	return nil
}

// LinkOrCopy makes newname a hard link to oldname when fs can link (and
// the link succeeds), and otherwise a copy of it. It reports whether it
// linked. The copy is synced; a link shares the (already durable, if
// synced) bytes of oldname. Neither is durable in its directory until the
// directory is synced.
func LinkOrCopy(fs FS, oldname, newname string) (linked bool, err error) {
	if err := Link(fs, oldname, newname); err == nil {
		return true, nil
	}
	return false, Copy(fs, oldname, newname)
}

// Copy copies the file oldname to a new file newname and syncs it. On
// error newname is removed.
func Copy(fs FS, oldname, newname string) (err error) {
	src, err := fs.Open(oldname)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := fs.Create(newname)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			dst.Close()
			fs.Remove(newname)
		}
	}()
	if _, err = io.Copy(struct{ io.Writer }{dst}, src); err != nil {
		return errors.Wrapf(err, "copying %s to %s", oldname, newname)
	}
	if err = dst.Sync(); err != nil {
		return err
	}
	return dst.Close()
}

// Resolver is implemented by file systems with symbolic links: an optional
// extension of FS, used through the package function Resolve.
type Resolver interface {
	// EvalSymlinks returns name with every symbolic link in it resolved.
	EvalSymlinks(name string) (string, error)
}

// Resolve returns name with its symbolic links resolved when fs has any
// (implements Resolver), and name itself otherwise. A hard link made to a
// resolved name is a second name of the file, never of a symlink to it.
func Resolve(fs FS, name string) (string, error) {
	r, ok := fs.(Resolver)
	if !ok {
		return name, nil
	}
	return r.EvalSymlinks(name)
}

var _ Resolver = diskFS{}

// EvalSymlinks implements Resolver with filepath.EvalSymlinks.
func (diskFS) EvalSymlinks(name string) (string, error) { return filepath.EvalSymlinks(name) }
