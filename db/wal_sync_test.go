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
	// An unsynced write first: A's synced write then writes its record and
	// fsyncs the WAL after it, rather than writing and syncing it in one
	// call under the commit lock (flushSyncLocked), where B could not append.
	require.NoError(t, d.Put([]byte("0"), []byte("0"), nil))
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

// logFiles counts the WALs in dir.
func logFiles(t *testing.T, dir string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	return len(m)
}

// TestWALSync_RotationCarriesFailure: the memtable rotation of Flush syncs
// the old WAL, which holds writes acknowledged without Sync. When that sync
// fails those writes may be lost, so no write may land in a new WAL after
// them: the failure is the background error (later writes fail with it),
// the old WAL stays the current one rather than closed under the writers'
// feet, nothing is left in a new WAL, and Close reports it.
func TestWALSync_RotationCarriesFailure(t *testing.T) {
	var fail atomic.Bool
	inj := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if op == errorfs.OpSync && filepath.Ext(path) == ".log" && fail.CompareAndSwap(true, false) {
			return eio(path)
		}
		return nil
	})
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{FS: errorfs.Wrap(vfs.Default, inj), CreateIfMissing: true,
		WALWriteSyscalls: true})
	require.NoError(t, err)
	for i := 0; i < 10; i++ {
		require.NoError(t, d.Write(seqBatch(i), nil))
	}
	logs := logFiles(t, dir)
	fail.Store(true)
	require.ErrorIs(t, d.Flush(), syscall.EIO)
	require.Equal(t, logs, logFiles(t, dir), "the failed rotation left a new WAL behind")
	err = d.Put([]byte("x"), []byte("y"), nil)
	require.ErrorIs(t, err, syscall.EIO, "a write after the old WAL's failed sync: %v", err)
	require.ErrorIs(t, d.Flush(), syscall.EIO)
	require.Equal(t, logs, logFiles(t, dir))
	v, err := d.Get(seqKey(9), nil)
	require.NoError(t, err)
	require.Equal(t, seqValue(9), v)
	require.ErrorIs(t, d.Close(), syscall.EIO)
}
