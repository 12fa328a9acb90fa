package vfs

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
)

// memFile is an open file or directory of a MemFS.
type memFile struct {
	name  string
	n     *memNode
	read  bool
	write bool
	// fs is the owning file system, set for handles from Open and OpenDir:
	// Sync on a directory handle makes its entries durable.
	fs *MemFS

	mu     sync.Mutex // guards off and closed
	off    int64
	closed bool
}

var _ File = (*memFile)(nil)

func (f *memFile) checkOpen(op string) error {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return pathErr(op, f.name, os.ErrClosed)
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, pathErr("read", f.name, os.ErrClosed)
	}
	n, err := f.readAt(p, f.off)
	f.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.checkOpen("read"); err != nil {
		return 0, err
	}
	return f.readAt(p, off)
}

func (f *memFile) readAt(p []byte, off int64) (int, error) {
	if f.n.isDir {
		return 0, pathErr("read", f.name, syscall.EISDIR)
	}
	if !f.read {
		return 0, pathErr("read", f.name, syscall.EBADF)
	}
	if off < 0 {
		return 0, pathErr("readat", f.name, syscall.EINVAL)
	}
	f.n.dataMu.RLock()
	defer f.n.dataMu.RUnlock()
	if off >= int64(f.n.liveSize()) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	var n int
	if off < int64(len(f.n.data)) {
		n = copy(p, f.n.data[off:])
	}
	if n < len(p) && off+int64(n) < int64(len(f.n.under)) {
		n += copy(p[n:], f.n.under[off+int64(n):])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Write appends p to the file.
func (f *memFile) Write(p []byte) (int, error) {
	if err := f.checkOpen("write"); err != nil {
		return 0, err
	}
	if !f.write {
		return 0, pathErr("write", f.name, syscall.EBADF)
	}
	f.n.dataMu.Lock()
	f.n.data = append(f.n.data, p...)
	f.n.unsynced = f.n.unsynced || len(p) > 0
	f.n.modTime = time.Now()
	f.n.dataMu.Unlock()
	return len(p), nil
}

// WriteSync appends p and makes it durable, as pwritev2 with RWF_DSYNC
// does on a disk (record.SyncWriter). That call makes durable the bytes it
// writes and the file's metadata needed to read them (its size, a
// truncation by Create), as fdatasync does, but not the bytes written
// before it, which this model cannot tell apart from the file's others:
// so WriteSync refuses, with an error and nothing written, a file holding
// bytes written and not synced before it. A caller that uses it must have
// synced them first.
func (f *memFile) WriteSync(p []byte) (int, bool, error) {
	if err := f.checkOpen("write"); err != nil {
		return 0, true, err
	}
	if !f.write || f.n.isDir {
		return 0, true, pathErr("write", f.name, syscall.EBADF)
	}
	f.n.dataMu.Lock()
	defer f.n.dataMu.Unlock()
	if f.n.unsynced {
		return 0, true, pathErr("writesync", f.name, errWriteSyncUnsynced)
	}
	f.n.data = append(f.n.data, p...)
	f.n.modTime = time.Now()
	f.n.durableData = f.n.data[:len(f.n.data):len(f.n.data)]
	f.n.durableUnder = f.n.under
	return len(p), true, nil
}

// errWriteSyncUnsynced is WriteSync's error on a file with unsynced bytes.
var errWriteSyncUnsynced = errors.New("vfs: WriteSync after bytes not synced: a disk would leave them unsynced")

// Sync makes the file's bytes, or for a handle from OpenDir the directory's
// entries, durable.
func (f *memFile) Sync() error {
	if err := f.checkOpen("sync"); err != nil {
		return err
	}
	if f.n.isDir {
		if f.fs != nil && !f.write {
			f.fs.mu.Lock()
			f.n.durable = make(map[string]*memNode, len(f.n.children))
			for name, c := range f.n.children {
				f.n.durable[name] = c
			}
			f.fs.mu.Unlock()
		}
		return nil
	}
	f.n.dataMu.Lock()
	// Sharing is safe: see the memNode invariants.
	f.n.durableData = f.n.data[:len(f.n.data):len(f.n.data)]
	f.n.durableUnder = f.n.under
	f.n.unsynced = false
	f.n.dataMu.Unlock()
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	if err := f.checkOpen("stat"); err != nil {
		return nil, err
	}
	return f.n.stat(baseName(f.name)), nil
}

func (f *memFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, os.ErrClosed)
	}
	f.closed = true
	return nil
}

func baseName(name string) string {
	parts := splitPath(name)
	if len(parts) == 0 {
		return "/"
	}
	return parts[len(parts)-1]
}

// stat describes n under the given name.
func (n *memNode) stat(name string) os.FileInfo {
	if n.isDir {
		return memFileInfo{name: name, dir: true, modTime: n.modTime}
	}
	n.dataMu.RLock()
	defer n.dataMu.RUnlock()
	return memFileInfo{name: name, size: int64(n.liveSize()), modTime: n.modTime}
}

type memFileInfo struct {
	name    string
	size    int64
	dir     bool
	modTime time.Time
}

func (fi memFileInfo) Name() string { return fi.name }
func (fi memFileInfo) Size() int64  { return fi.size }
func (fi memFileInfo) Mode() os.FileMode {
	if fi.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}
func (fi memFileInfo) ModTime() time.Time { return fi.modTime }
func (fi memFileInfo) IsDir() bool        { return fi.dir }
func (fi memFileInfo) Sys() any           { return nil }

// CrashClone returns a new MemFS holding only what was durable in m: the
// durable directory entries, starting from the root, and for each file its
// durable bytes (see the MemFS durability model). Locks and open handles are
// not carried over; m itself is unchanged and stays usable. The clone has
// the same strictness as m, and everything in it starts out durable.
//
// The clone is one instant, as a power loss is: every directory sync and
// file Sync happened wholly before it or wholly after. So the durable state
// is taken at a single cut, with m.mu (directory syncs take it) and every
// file's dataMu (file syncs take it) held together, and copied afterwards:
// durable bytes are never modified, so the slices taken at the cut stay
// what they were. Taken one file at a time, a sync of file B that followed
// a sync of file A could land in the clone without A's (the clone reading A
// before, and B after, both syncs): an image no power loss leaves.
func (m *MemFS) CrashClone() *MemFS {
	c := NewMem()
	c.lax = m.lax
	// A node reachable twice (a rename across two directories that were
	// both synced) stays one node, as a hard link would.
	clones := make(map[*memNode]*memNode)
	var files []cutFile
	m.mu.Lock()
	c.mu.root = cloneDurable(m.mu.root, clones, &files)
	// The cut: lock every file, then take each one's durable slices. No
	// other path holds a dataMu while it waits for m.mu or for another
	// file's dataMu, so holding them all cannot deadlock.
	for _, f := range files {
		f.src.dataMu.RLock()
	}
	for i := range files {
		f := &files[i]
		f.data, f.under, f.dst.modTime = f.src.durableData, f.src.durableUnder, f.src.modTime
	}
	for _, f := range files {
		f.src.dataMu.RUnlock()
	}
	m.mu.Unlock()
	for i, f := range files {
		data := append([]byte(nil), f.data...)
		if len(f.under) > len(data) {
			data = append(data, f.under[len(data):]...)
		}
		f.dst.data, f.dst.durableData = data, data
		if i == 0 && testHookCrashCloneCopied != nil {
			testHookCrashCloneCopied()
		}
	}
	return c
}

// testHookCrashCloneCopied, set by tests, runs in CrashClone once the first
// file's bytes are in the clone: a sync it makes must not reach the clone.
var testHookCrashCloneCopied func()

// cutFile is a file of a crash clone: its node in m, its node in the clone,
// and the durable slices of src taken at the cut.
type cutFile struct {
	src, dst    *memNode
	data, under []byte
}

// cloneDurable clones n's durable tree: the directories, and a node for each
// file that files lists, to be filled at the cut. MemFS.mu must be held.
func cloneDurable(n *memNode, clones map[*memNode]*memNode, files *[]cutFile) *memNode {
	if c, ok := clones[n]; ok {
		return c
	}
	if !n.isDir {
		c := &memNode{} // modTime is taken at the cut, under dataMu
		clones[n] = c
		*files = append(*files, cutFile{src: n, dst: c})
		return c
	}
	c := newDirNode()
	c.modTime = n.modTime
	clones[n] = c
	for name, child := range n.durable {
		cc := cloneDurable(child, clones, files)
		c.children[name] = cc
		c.durable[name] = cc
	}
	return c
}

// String lists the tree, one entry a line, with each file's live and
// durable sizes and a mark on entries not yet durable in their directory.
func (m *MemFS) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	b.WriteString("/\n")
	dumpNode(&b, m.mu.root, 1)
	return b.String()
}

func dumpNode(b *strings.Builder, n *memNode, depth int) {
	names := make([]string, 0, len(n.children)+len(n.durable))
	for name := range n.children {
		names = append(names, name)
	}
	for name := range n.durable {
		if n.children[name] == nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		child, live := n.children[name]
		durableChild, durable := n.durable[name]
		note := ""
		switch {
		case !live:
			child, note = durableChild, " (removed, not synced)"
		case !durable:
			note = " (entry not synced)"
		case durableChild != child:
			note = " (replaced, not synced)"
		}
		indent := strings.Repeat("  ", depth)
		if child.isDir {
			fmt.Fprintf(b, "%s%s/%s\n", indent, name, note)
			if live {
				dumpNode(b, child, depth+1)
			}
			continue
		}
		child.dataMu.RLock()
		fmt.Fprintf(b, "%s%s %d bytes, %d synced%s\n", indent, name,
			child.liveSize(), max(len(child.durableData), len(child.durableUnder)), note)
		child.dataMu.RUnlock()
	}
}
