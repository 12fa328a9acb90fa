package db_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/internal/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// eio is the error a failed fdatasync(2) of the WAL returns.
func eio(path string) error { return &os.PathError{Op: "fdatasync", Path: path, Err: syscall.EIO} }

// TestWALSync_FailureIsSticky: writer A's fsync of the WAL fails with EIO
// while writer B, appended before that failure, waits to sync. After a
// failed fsync Linux may have dropped the dirty pages, so B's own fsync
// succeeding proves nothing: B fails too, and so does Close, which syncs
// the WAL once more.
func TestWALSync_FailureIsSticky(t *testing.T) {
	var armed atomic.Bool
	var syncs atomic.Int32
	aInSync := make(chan struct{})
	bWrote := make(chan struct{})
	var bSeen atomic.Bool
	inj := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if !armed.Load() || filepath.Ext(path) != ".log" {
			return nil
		}
		switch op {
		case errorfs.OpSync:
			if syncs.Add(1) != 1 {
				return nil
			}
			// Writer A: hold its fsync until writer B has appended its
			// record, then fail it.
			close(aInSync)
			select {
			case <-bWrote:
			case <-time.After(5 * time.Second):
			}
			return eio(path)
		case errorfs.OpWrite:
			if syncs.Load() == 1 && bSeen.CompareAndSwap(false, true) {
				close(bWrote)
			}
		}
		return nil
	})
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{FS: errorfs.Wrap(vfs.Default, inj), CreateIfMissing: true,
		WALWriteSyscalls: true})
	require.NoError(t, err)
	armed.Store(true)

	sync := &db.WriteOptions{Sync: true}
	errA := make(chan error, 1)
	go func() { errA <- d.Put([]byte("a"), []byte("1"), sync) }()
	<-aInSync
	errB := make(chan error, 1)
	go func() { errB <- d.Put([]byte("b"), []byte("2"), sync) }()

	require.ErrorIs(t, <-errA, syscall.EIO)
	require.True(t, bSeen.Load(), "writer B appended before A's fsync failed")
	err = <-errB
	require.Error(t, err, "writer B was acknowledged after an earlier fsync of its WAL failed")
	require.ErrorIs(t, err, syscall.EIO)
	require.ErrorIs(t, d.Put([]byte("c"), []byte("3"), sync), syscall.EIO)
	require.ErrorIs(t, d.Close(), syscall.EIO, "Close syncs the WAL again: its earlier failure stands")
}
