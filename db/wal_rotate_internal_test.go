package db

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/internal/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// walRotateOptions: a small write buffer, no compactions, on fs.
func walRotateOptions(fs vfs.FS) *Options {
	return &Options{FS: fs, CreateIfMissing: true, WriteBufferSize: 64 << 10, DisableAutoCompactions: true}
}

// waitWALsClosed waits until no background close of a WAL runs.
func waitWALsClosed(t *testing.T, d *DB) {
	t.Helper()
	require.Eventually(t, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.mu.walClosing) == 0
	}, 10*time.Second, time.Millisecond)
}

// checkKeys requires every key of putRange(prefix, 0, n) in d.
func checkKeys(t *testing.T, d *DB, prefix string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("%s%06d", prefix, i)
		v, err := d.Get([]byte(k), nil)
		require.NoError(t, err, "key %s", k)
		require.Equal(t, arenaValue(k), v)
	}
}

// The old WAL's close runs in the background after the rotation: its
// failure becomes the background error, and the WAL's records, synced
// before the rotation, survive.
func TestWALBackgroundCloseFails(t *testing.T) {
	mem := vfs.NewMem()
	var failing atomic.Value // the WAL name whose close fails
	failing.Store("none")
	inj := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if op == errorfs.OpClose && strings.HasSuffix(path, failing.Load().(string)) {
			return errorfs.Injected(op, path)
		}
		return nil
	})
	d, err := Open("/db", walRotateOptions(errorfs.Wrap(mem, inj)))
	require.NoError(t, err)
	putRange(t, d, "a", 0, 100)
	failing.Store(base.MakeFilename(base.FileKindLog, d.mu.log.num))
	// The rotation succeeds; the flush after it may meet the close's
	// failure already.
	if err := d.Flush(); err != nil {
		require.ErrorIs(t, err, errorfs.ErrInjected)
	}
	require.NotEqual(t, failing.Load(), base.MakeFilename(base.FileKindLog, d.mu.log.num), "the rotation happened")
	require.Eventually(t, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.mu.bgErr != nil
	}, 10*time.Second, time.Millisecond)
	err = d.Put([]byte("x"), []byte("y"), nil)
	require.ErrorIs(t, err, errorfs.ErrInjected)
	require.Contains(t, err.Error(), "closing WAL")
	_ = d.Close()
	d, err = Open("/db", walRotateOptions(mem))
	require.NoError(t, err)
	checkKeys(t, d, "a", 100)
	require.NoError(t, d.Close())
}

// Close waits for the background close of a retired WAL: once it returns,
// nothing of the DB touches the directory.
func TestWALBackgroundWorkBeforeClose(t *testing.T) {
	mem := vfs.NewMem()
	var pending atomic.Int32
	slow := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if op == errorfs.OpClose && strings.HasSuffix(path, ".log") {
			pending.Add(1)
			time.Sleep(20 * time.Millisecond)
			pending.Add(-1)
		}
		return nil
	})
	d, err := Open("/db", walRotateOptions(errorfs.Wrap(mem, slow)))
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		putRange(t, d, fmt.Sprintf("k%d-", i), 0, 50)
		require.NoError(t, d.Flush())
	}
	// Close from several goroutines at once: one closes, the others
	// return ErrClosed, none before the background work is done.
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() {
			err := d.Close()
			if err == nil && pending.Load() != 0 {
				err = errors.New("Close returned while WAL work was in flight")
			}
			errs <- err
		}()
	}
	var closed int
	for i := 0; i < 3; i++ {
		err := <-errs
		if err == nil {
			closed++
		} else {
			require.True(t, errors.Is(err, ErrClosed), "%v", err)
		}
	}
	require.Equal(t, 1, closed)
	require.Zero(t, pending.Load())
	d, err = Open("/db", walRotateOptions(mem))
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		checkKeys(t, d, fmt.Sprintf("k%d-", i), 50)
	}
	require.NoError(t, d.Close())
}

// A crash at any point of the rotation's background work leaves a
// directory that opens with every synced write: the crash images are taken
// before each Flush, just after it (the old WAL may still be closing), and
// once the close is done.
func TestWALRotationCrash(t *testing.T) {
	mem := vfs.NewMem()
	d, err := Open("/db", walRotateOptions(mem))
	require.NoError(t, err)
	sync := &WriteOptions{Sync: true}
	var images []*vfs.MemFS
	n := 0
	for round := 0; round < 4; round++ {
		for i := 0; i < 50; i++ {
			k := fmt.Sprintf("k%06d", n)
			require.NoError(t, d.Put([]byte(k), arenaValue(k), sync))
			n++
		}
		images = append(images, mem.CrashClone())
		require.NoError(t, d.Flush())
		images = append(images, mem.CrashClone()) // the old WAL may be closing
		waitWALsClosed(t, d)
		images = append(images, mem.CrashClone())
	}
	require.NoError(t, d.Close())
	for i, img := range images {
		d, err := Open("/db", walRotateOptions(img))
		require.NoError(t, err, "image %d", i)
		checkKeys(t, d, "k", 50*(i/3+1))
		require.NoError(t, d.Close())
		// And again: the first Open swept the empty WAL.
		d, err = Open("/db", walRotateOptions(img))
		require.NoError(t, err, "image %d reopened", i)
		checkKeys(t, d, "k", 50*(i/3+1))
		require.NoError(t, d.Close())
	}
}
