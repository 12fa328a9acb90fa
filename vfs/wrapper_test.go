package vfs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/table"
	"github.com/stratadb/strata/vfs"
	"github.com/stretchr/testify/require"
)

// ledgerFS sits under the counting wrapper and records the bytes that leave
// the file system: the size of every file just before it is removed,
// truncated by Create or replaced by Rename. With them, the bytes ever
// written are the sizes of the files left plus the ledger, whatever path
// the writes took; the counting wrapper must have seen all of them. It has
// no Link, so a link asked of the wrapper fails and the engine copies.
type ledgerFS struct {
	vfs.FS
	mu   sync.Mutex
	gone int64
}

// drop adds name's size to the ledger if it is an existing file.
func (l *ledgerFS) drop(name string) {
	fi, err := l.FS.Stat(name)
	if err != nil || fi.IsDir() {
		return
	}
	l.mu.Lock()
	l.gone += fi.Size()
	l.mu.Unlock()
}

func (l *ledgerFS) Create(name string) (vfs.File, error) {
	l.drop(name)
	return l.FS.Create(name)
}

func (l *ledgerFS) Remove(name string) error {
	l.drop(name)
	return l.FS.Remove(name)
}

func (l *ledgerFS) Rename(oldname, newname string) error {
	l.drop(newname)
	return l.FS.Rename(oldname, newname)
}

// treeSize is the total size of the files under dir.
func treeSize(t *testing.T, fs vfs.FS, dir string) int64 {
	names, err := fs.List(dir)
	require.NoError(t, err)
	var total int64
	for _, n := range names {
		p := filepath.Join(dir, n)
		fi, err := fs.Stat(p)
		require.NoError(t, err)
		if fi.IsDir() {
			total += treeSize(t, fs, p)
		} else {
			total += fi.Size()
		}
	}
	return total
}

// workload drives every kind of file the engine writes: WALs (rotated,
// replayed, deleted), flushed and compacted tables, blob files, MANIFESTs,
// CURRENT, OPTIONS, the LOG (rotated at the second Open), a checkpoint and
// an ingested external file.
func workload(t *testing.T, fs vfs.FS, dir string) {
	opts := func() *db.Options {
		// Values of 100 bytes go to blob files; the short deletions' and
		// the ingested values stay in the tables.
		return &db.Options{CreateIfMissing: true, FS: fs, WriteBufferSize: 64 << 10,
			EnableBlobFiles: true, MinBlobSize: 64, BlobFileSize: 64 << 10}
	}
	d, err := db.Open(filepath.Join(dir, "app"), opts())
	require.NoError(t, err)
	val := make([]byte, 100)
	for i := 0; i < 3000; i++ {
		copy(val, fmt.Sprintf("value %d", i))
		require.NoError(t, d.Put([]byte(fmt.Sprintf("key%05d", i)), val, &db.WriteOptions{Sync: i%500 == 0}))
		if i%7 == 0 {
			require.NoError(t, d.Delete([]byte(fmt.Sprintf("key%05d", i/2)), nil))
		}
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.CompactRange(nil, nil))

	ext := filepath.Join(dir, "ext.sst")
	f, err := fs.Create(ext)
	require.NoError(t, err)
	w := table.NewExternalWriter(f, table.ExternalWriterOptions{})
	require.NoError(t, w.Put([]byte("zz1"), []byte("ingested")))
	require.NoError(t, w.Put([]byte("zz2"), []byte("ingested")))
	_, err = w.Finish()
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	require.NoError(t, d.Ingest([]string{ext}, nil))

	require.NoError(t, d.Checkpoint(filepath.Join(dir, "checkpoint")))
	for i := 0; i < 500; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("late%05d", i)), val, nil))
	}
	require.NoError(t, d.Close())

	// Reopen: the WAL is replayed into a table, the LOG rotated.
	d, err = db.Open(filepath.Join(dir, "app"), opts())
	require.NoError(t, err)
	v, err := d.Get([]byte("late00499"), nil)
	require.NoError(t, err)
	require.Equal(t, val, v)
	v, err = d.Get([]byte("zz2"), nil)
	require.NoError(t, err)
	require.Equal(t, "ingested", string(v))
	require.NoError(t, d.Close())
	blobs := 0
	for _, sub := range []string{"app", "checkpoint"} {
		names, err := fs.List(filepath.Join(dir, sub))
		require.NoError(t, err)
		for _, n := range names {
			if filepath.Ext(n) == ".blob" {
				blobs++
			}
		}
	}
	require.Positive(t, blobs, "the workload wrote no blob file")

	c, err := db.Open(filepath.Join(dir, "checkpoint"), &db.Options{FS: fs, ReadOnly: true})
	require.NoError(t, err)
	v, err = c.Get([]byte("zz1"), nil)
	require.NoError(t, err)
	require.Equal(t, "ingested", string(v))
	require.NoError(t, c.Close())
}

// TestWrapperSeesEveryByte: the counting wrapper of the example counts
// exactly the bytes that reached the file system, on the OS's file system
// (where the engine would map the WAL but for the wrapper) and in memory.
func TestWrapperSeesEveryByte(t *testing.T) {
	for _, tc := range []struct {
		name  string
		inner func() (vfs.FS, string)
	}{
		{"Default", func() (vfs.FS, string) { return vfs.Default, t.TempDir() }},
		{"Mem", func() (vfs.FS, string) { return vfs.NewMem(), "/data" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner, dir := tc.inner()
			ledger := &ledgerFS{FS: inner}
			counting := &countingFS{FS: ledger}
			require.NoError(t, counting.MkdirAll(dir, 0o755))
			workload(t, counting, dir)

			left := treeSize(t, inner, dir)
			require.Greater(t, left, int64(100<<10), "the workload wrote too little to mean anything")
			require.Positive(t, ledger.gone, "the workload removed no file (WALs, compacted tables)")
			require.Equal(t, left+ledger.gone, counting.written.Load(),
				"bytes on the file system (%d left, %d removed or replaced) != bytes the wrapper saw written",
				left, ledger.gone)
		})
	}
}

// TestWrapperLinkFallsBackToCopy: a Link the wrapper cannot carry out makes
// the engine copy the checkpoint's tables, through the wrapper; one it can
// makes real links (on the OS, the checkpoint's table is the source's file).
func TestWrapperLinkFallsBackToCopy(t *testing.T) {
	for _, linked := range []bool{false, true} {
		t.Run(fmt.Sprintf("linked=%v", linked), func(t *testing.T) {
			dir := t.TempDir()
			var inner vfs.FS = vfs.Default
			if !linked {
				inner = &ledgerFS{FS: vfs.Default} // no Link
			}
			fs := &countingFS{FS: inner}
			d, err := db.Open(filepath.Join(dir, "app"), &db.Options{CreateIfMissing: true, FS: fs})
			require.NoError(t, err)
			require.NoError(t, d.Put([]byte("k"), make([]byte, 10000), nil))
			require.NoError(t, d.Flush())
			before := fs.written.Load()
			require.NoError(t, d.Checkpoint(filepath.Join(dir, "cp")))
			copied := fs.written.Load() - before
			require.NoError(t, d.Close())

			var tables []string
			names, err := fs.List(filepath.Join(dir, "cp"))
			require.NoError(t, err)
			for _, n := range names {
				if filepath.Ext(n) == ".sst" {
					tables = append(tables, n)
				}
			}
			require.Len(t, tables, 1)
			src, err := os.Stat(filepath.Join(dir, "app", tables[0]))
			require.NoError(t, err)
			dst, err := os.Stat(filepath.Join(dir, "cp", tables[0]))
			require.NoError(t, err)
			require.Equal(t, linked, os.SameFile(src, dst))
			if linked {
				require.Less(t, copied, src.Size(), "a linked table was also copied")
			} else {
				require.GreaterOrEqual(t, copied, src.Size(), "the copied table did not go through the wrapper")
			}
		})
	}
}

// TestErrLocked: a second Open of a database held open fails with
// ErrLocked's class, on Default and on a MemFS, as vfs.ErrLocked says.
func TestErrLocked(t *testing.T) {
	for name, fs := range map[string]vfs.FS{"Default": vfs.Default, "Mem": vfs.NewMem()} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "app")
			d, err := db.Open(dir, &db.Options{CreateIfMissing: true, FS: fs})
			require.NoError(t, err)
			_, err = db.Open(dir, &db.Options{FS: fs})
			require.ErrorIs(t, err, vfs.ErrLocked)
			require.NoError(t, d.Close())
			d, err = db.Open(dir, &db.Options{FS: fs})
			require.NoError(t, err)
			require.NoError(t, d.Close())
		})
	}
}
