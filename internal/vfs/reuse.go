package vfs

import (
	"os"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
)

// Reuser is implemented by file systems that can give an existing file a new
// name and open it for writing without truncating it: a write-ahead log
// that recycles an obsolete log's file (RocksDB's recycle_log_file_num)
// overwrites the old bytes in place instead of allocating new blocks, so
// that a sync of the new log writes data blocks and no file-size or extent
// metadata while the new log is shorter than the old file. It is an
// optional extension of FS: callers use the package function ReuseForWrite.
type Reuser interface {
	// ReuseForWrite renames oldname to newname (replacing newname, as
	// Rename does) and opens it for writing at offset 0 without
	// truncating it: writes overwrite the old bytes and then extend the
	// file; reads past the bytes written so far see the old contents.
	// Like a rename, the new name is durable once its directory is
	// synced. When the open fails after the rename, the file is left
	// under newname.
	ReuseForWrite(oldname, newname string) (File, error)
}

// ErrReuseUnsupported is the class of the error ReuseForWrite returns when fs
// cannot reuse files: the caller creates a new file instead.
var ErrReuseUnsupported = errors.New("vfs: reusing files is not supported")

// ReuseForWrite reuses oldname as newname through fs's Reuser, or fails with
// ErrReuseUnsupported when fs has none.
func ReuseForWrite(fs FS, oldname, newname string) (File, error) {
	r, ok := fs.(Reuser)
	if !ok {
		return nil, errors.Wrapf(ErrReuseUnsupported, "reuse %s as %s", oldname, newname)
	}
	return r.ReuseForWrite(oldname, newname)
}

var _ Reuser = diskFS{}

// ReuseForWrite implements Reuser with rename(2) and an open without
// O_TRUNC. The file is written with write(2), never through a mapping: the
// pages of the old contents would be read in (a page fault each) only to be
// overwritten.
func (diskFS) ReuseForWrite(oldname, newname string) (File, error) {
	if err := os.Rename(oldname, newname); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(newname, os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	return &diskFile{File: f}, nil
}

var _ Reuser = (*MemFS)(nil)

// ReuseForWrite implements Reuser: the renamed file keeps its contents
// beneath the bytes written from now on (see the MemFS durability model):
// a crash before the next Sync keeps its old durable contents, and after a
// Sync the new bytes over the old ones past them.
func (m *MemFS) ReuseForWrite(oldname, newname string) (File, error) {
	if err := m.Rename(oldname, newname); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked("open", newname)
	if err != nil {
		return nil, err
	}
	if n.isDir {
		return nil, pathErr("open", newname, syscall.EISDIR)
	}
	n.dataMu.Lock()
	live := n.live()
	n.under = live[:len(live):len(live)]
	n.data = nil
	n.modTime = time.Now()
	n.dataMu.Unlock()
	return &memFile{name: newname, n: n, read: true, write: true}, nil
}
