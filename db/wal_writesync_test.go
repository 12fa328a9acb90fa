package db_test

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/internal/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// writeSyncFS is a MemFS whose files count their WriteSync calls (the
// WAL's write-and-sync in one call, pwritev2 with RWF_DSYNC on a disk), or
// refuse them as unsupported.
type writeSyncFS struct {
	*vfs.MemFS
	calls       atomic.Int32
	unsupported bool
}

func (fs *writeSyncFS) Create(name string) (vfs.File, error) {
	f, err := fs.MemFS.Create(name)
	if err != nil {
		return nil, err
	}
	return writeSyncFile{File: f, fs: fs}, nil
}

type writeSyncFile struct {
	vfs.File
	fs *writeSyncFS
}

func (f writeSyncFile) WriteSync(p []byte) (int, bool, error) {
	if f.fs.unsupported {
		return 0, false, nil
	}
	f.fs.calls.Add(1)
	return f.File.(interface {
		WriteSync(p []byte) (int, bool, error)
	}).WriteSync(p)
}

// TestWALWriteSync_OnlyWhenEarlierBytesAreDurable: a synced write with no
// other writer about writes and syncs its WAL record in one call
// (WriteSync), which makes only its own bytes durable: so only while every
// record before it is durable. After an unsynced write the next synced one
// writes and then syncs the WAL (MemFS's WriteSync refuses a file with
// unsynced bytes, as the call would leave them unsynced on a disk); the
// one after it uses WriteSync again. Every acknowledged write survives a
// power loss. Planted: without the check that every earlier byte is
// durable, the synced write after the unsynced one fails.
func TestWALWriteSync_OnlyWhenEarlierBytesAreDurable(t *testing.T) {
	for _, unsupported := range []bool{false, true} {
		t.Run(fmt.Sprintf("unsupported=%v", unsupported), func(t *testing.T) {
			fs := &writeSyncFS{MemFS: vfs.NewMem(), unsupported: unsupported}
			d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true})
			require.NoError(t, err)
			sync := &db.WriteOptions{Sync: true}
			syncs0 := d.Metrics().WAL.Syncs
			for i := 0; i < 20; i++ {
				require.NoError(t, d.Put(seqKey(i), seqValue(i), sync))
			}
			want := int32(20)
			if unsupported {
				want = 0
			}
			require.Equal(t, want, fs.calls.Load())
			require.Equal(t, syncs0+20, d.Metrics().WAL.Syncs, "a WriteSync counts as a WAL sync")
			require.NoError(t, d.Put(seqKey(20), seqValue(20), nil))
			require.NoError(t, d.Put(seqKey(21), seqValue(21), sync))
			require.Equal(t, want, fs.calls.Load(), "a synced write after an unsynced one syncs the WAL")
			require.NoError(t, d.Put(seqKey(22), seqValue(22), sync))
			if !unsupported {
				want++
			}
			require.Equal(t, want, fs.calls.Load())

			crashed := fs.CrashClone()
			require.NoError(t, d.Close())
			d2, err := db.Open("/db", &db.Options{FS: crashed})
			require.NoError(t, err)
			for i := 0; i <= 22; i++ {
				v, err := d2.Get(seqKey(i), nil)
				require.NoError(t, err, "acknowledged write %d lost", i)
				require.Equal(t, seqValue(i), v)
			}
			require.NoError(t, d2.Close())
		})
	}
}

// TestWALWriteSync_FailureIsSticky: a lone synced write whose WAL
// write-and-sync fails (its write, or its sync: the bytes reached the
// file and were not made durable) fails; so do every later write and
// Close, though the fault is gone, as after a failed fdatasync; and the
// database opens again, on the disk (pwritev2 with RWF_DSYNC, recycled
// WALs as raftetcd writes them) and after a power loss (MemFS), with
// every acknowledged write. Planted: with the call's error dropped (the
// write acknowledged as synced), the test fails.
func TestWALWriteSync_FailureIsSticky(t *testing.T) {
	for _, op := range []errorfs.Op{errorfs.OpWrite, errorfs.OpSync} {
		for _, onDisk := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/disk=%v", op, onDisk), func(t *testing.T) {
				var fail atomic.Bool
				inj := errorfs.InjectorFunc(func(o errorfs.Op, path string) error {
					if o == op && filepath.Ext(path) == ".log" && fail.Load() {
						return eio(path)
					}
					return nil
				})
				var base vfs.FS = vfs.Default
				dir := t.TempDir()
				mem := vfs.NewMem()
				if !onDisk {
					base, dir = mem, "/db"
				}
				opts := &db.Options{FS: errorfs.Wrap(base, inj), CreateIfMissing: true, RecycleLogFileNum: 2}
				d, err := db.Open(dir, opts)
				require.NoError(t, err)
				sync := &db.WriteOptions{Sync: true}
				for i := 0; i < 300; i++ {
					require.NoError(t, d.Put(seqKey(i), seqValue(i), sync))
				}
				require.NoError(t, d.Flush()) // the next WAL is a recycled one on the disk
				for i := 300; i < 600; i++ {
					require.NoError(t, d.Put(seqKey(i), seqValue(i), sync))
				}
				fail.Store(true)
				require.ErrorIs(t, d.Put([]byte("failed"), []byte("x"), sync), syscall.EIO)
				fail.Store(false)
				require.ErrorIs(t, d.Put([]byte("after"), []byte("x"), sync), syscall.EIO)
				require.ErrorIs(t, d.Put([]byte("after"), []byte("x"), nil), syscall.EIO)
				var crashed *vfs.MemFS
				if !onDisk {
					crashed = mem.CrashClone()
				}
				require.ErrorIs(t, d.Close(), syscall.EIO, "an earlier sync of the WAL failed")

				reopen := &db.Options{RecycleLogFileNum: 2}
				if !onDisk {
					reopen.FS = crashed
				}
				d2, err := db.Open(dir, reopen)
				require.NoError(t, err)
				for i := 0; i < 600; i++ {
					v, err := d2.Get(seqKey(i), nil)
					require.NoError(t, err, "acknowledged write %d lost", i)
					require.Equal(t, seqValue(i), v)
				}
				_, err = d2.Get([]byte("after"), nil)
				require.ErrorIs(t, err, db.ErrNotFound)
				require.NoError(t, d2.Close())
			})
		}
	}
}
