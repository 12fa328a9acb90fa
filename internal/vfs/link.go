package vfs

import (
	"io"
	"os"
	"syscall"

	"github.com/cockroachdb/errors"
)

// Linker is implemented by file systems that can make hard links: a second
// name for the same file, with no copy of its bytes. A new link, like any
// new entry, needs a sync of its directory to be durable.
type Linker interface {
	// Link makes newname a hard link to the file oldname. newname must not
	// exist. Linking across devices fails.
	Link(oldname, newname string) error
}

// Link implements Linker.
func (diskFS) Link(oldname, newname string) error { return os.Link(oldname, newname) }

// Link implements Linker.
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
	if l, ok := fs.(Linker); ok {
		if err := l.Link(oldname, newname); err == nil {
			return true, nil
		}
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
