package vfs_test

import (
	"io"
	"os"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/vfs"
	"github.com/stretchr/testify/require"
)

// plainFS implements vfs.FS method by method, embedding nothing, as an
// application outside the module would: every type its methods name is
// exported (vfs.File, os.FileInfo, io.Closer). It forwards to inner.
type plainFS struct{ inner vfs.FS }

func (p plainFS) Create(name string) (vfs.File, error) { return wrapFile(p.inner.Create(name)) }
func (p plainFS) Open(name string) (vfs.File, error)   { return wrapFile(p.inner.Open(name)) }
func (p plainFS) OpenDir(name string) (vfs.File, error) {
	return wrapFile(p.inner.OpenDir(name))
}
func (p plainFS) Remove(name string) error                    { return p.inner.Remove(name) }
func (p plainFS) Rename(oldname, newname string) error        { return p.inner.Rename(oldname, newname) }
func (p plainFS) MkdirAll(dir string, perm os.FileMode) error { return p.inner.MkdirAll(dir, perm) }
func (p plainFS) List(dir string) ([]string, error)           { return p.inner.List(dir) }
func (p plainFS) Stat(name string) (os.FileInfo, error)       { return p.inner.Stat(name) }
func (p plainFS) Lock(name string) (io.Closer, error)         { return p.inner.Lock(name) }

// plainFile implements vfs.File method by method.
type plainFile struct{ f vfs.File }

func wrapFile(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return plainFile{f}, nil
}

func (p plainFile) Read(b []byte) (int, error)              { return p.f.Read(b) }
func (p plainFile) ReadAt(b []byte, off int64) (int, error) { return p.f.ReadAt(b, off) }
func (p plainFile) Write(b []byte) (int, error)             { return p.f.Write(b) }
func (p plainFile) Close() error                            { return p.f.Close() }
func (p plainFile) Sync() error                             { return p.f.Sync() }
func (p plainFile) Stat() (os.FileInfo, error)              { return p.f.Stat() }

var (
	_ vfs.FS   = plainFS{}
	_ vfs.File = plainFile{}
)

// TestImplementFromScratch: an FS written outside the module from the
// exported types alone runs a database (writes, a flush, a compaction, a
// reopen that replays the WAL), on the OS and in memory.
func TestImplementFromScratch(t *testing.T) {
	for name, inner := range map[string]vfs.FS{"Default": vfs.Default, "Mem": vfs.NewMem()} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir() + "/app"
			fs := plainFS{inner}
			d, err := db.Open(dir, &db.Options{CreateIfMissing: true, FS: fs})
			require.NoError(t, err)
			require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
			require.NoError(t, d.Flush())
			require.NoError(t, d.Put([]byte("b"), []byte("2"), nil))
			require.NoError(t, d.CompactRange(nil, nil))
			require.NoError(t, d.Put([]byte("c"), []byte("3"), &db.WriteOptions{Sync: true}))
			require.NoError(t, d.Close())
			d, err = db.Open(dir, &db.Options{FS: fs})
			require.NoError(t, err)
			defer d.Close()
			for k, want := range map[string]string{"a": "1", "b": "2", "c": "3"} {
				v, err := d.Get([]byte(k), nil)
				require.NoError(t, err, k)
				require.Equal(t, want, string(v), k)
			}
		})
	}
}
