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

// preparedWALLocked waits for the WAL being created ahead and returns it
// (nil when none is).
func preparedWAL_(t *testing.T, d *DB) *preparedWAL {
	t.Helper()
	d.mu.Lock()
	p := d.mu.walNext
	d.mu.Unlock()
	if p != nil {
		<-p.done
	}
	return p
}

// logsIn returns the WAL numbers in dir.
func logsIn(t *testing.T, fs vfs.FS, dir string) []uint64 {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	var nums []uint64
	for _, name := range names {
		if kind, num, ok := base.ParseFilename(name); ok && kind == base.FileKindLog {
			nums = append(nums, num)
		}
	}
	return nums
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

// A rotation starts the creation of the next WAL, and the next rotation
// makes that WAL the current one instead of creating one; Close deletes the
// one left unused.
func TestWALCreatedAhead(t *testing.T) {
	fs := vfs.NewMem()
	var created []uint64
	opts := walRotateOptions(fs)
	opts.EventListener = &EventListener{WALCreated: func(i WALCreateInfo) { created = append(created, i.FileNum) }}
	d, err := Open("/db", opts)
	require.NoError(t, err)
	require.Nil(t, preparedWAL_(t, d), "Open creates no WAL ahead")
	putRange(t, d, "a", 0, 100)
	require.NoError(t, d.Flush())
	p := preparedWAL_(t, d)
	require.NotNil(t, p)
	require.NoError(t, p.err)
	require.Greater(t, p.num, d.mu.log.num)
	require.Contains(t, logsIn(t, fs, "/db"), p.num, "created ahead, before any rotation needs it")

	putRange(t, d, "b", 0, 100)
	require.NoError(t, d.Flush())
	require.Equal(t, p.num, d.mu.log.num, "the rotation took the WAL created ahead")
	next := preparedWAL_(t, d)
	require.NotNil(t, next)
	require.Greater(t, next.num, p.num)
	require.NoError(t, d.Close())
	require.NotContains(t, logsIn(t, fs, "/db"), next.num, "Close deletes the unused WAL")

	d, err = Open("/db", walRotateOptions(fs))
	require.NoError(t, err)
	checkKeys(t, d, "a", 100)
	checkKeys(t, d, "b", 100)
	require.NoError(t, d.Close())
}

// A rotation whose current WAL holds no record (the memtable written with
// DisableWAL) keeps that WAL and leaves the WAL created ahead for the next
// rotation, which takes it.
func TestWALCreatedAheadKeptAcrossEmptyRotation(t *testing.T) {
	fs := vfs.NewMem()
	d, err := Open("/db", walRotateOptions(fs))
	require.NoError(t, err)
	putRange(t, d, "a", 0, 100)
	require.NoError(t, d.Flush())
	p := preparedWAL_(t, d)
	require.NotNil(t, p)
	cur := d.mu.log.num
	require.NoError(t, d.Put([]byte("nowal"), []byte("v"), &WriteOptions{DisableWAL: true}))
	require.NoError(t, d.Flush())
	require.Equal(t, cur, d.mu.log.num, "the empty current WAL is kept")
	require.Same(t, p, preparedWAL_(t, d), "the WAL created ahead waits for the next rotation")
	putRange(t, d, "b", 0, 100)
	require.NoError(t, d.Flush())
	require.Equal(t, p.num, d.mu.log.num, "the next rotation took it")
	require.NoError(t, d.Close())
	d, err = Open("/db", walRotateOptions(fs))
	require.NoError(t, err)
	checkKeys(t, d, "a", 100)
	checkKeys(t, d, "b", 100)
	require.NoError(t, d.Close())
}

// With recycling on no WAL is created ahead: each rotation takes the
// oldest kept WAL, by rename, when there is one.
func TestWALNotCreatedAheadWhenRecycling(t *testing.T) {
	fs := vfs.NewMem()
	opts := walRotateOptions(fs)
	opts.RecycleLogFileNum = 1
	d, err := Open("/db", opts)
	require.NoError(t, err)
	recycled := 0
	for round := 0; round < 4; round++ {
		putRange(t, d, fmt.Sprintf("r%d-", round), 0, 100)
		d.mu.Lock()
		kept := append([]uint64(nil), d.mu.recycleWALs...)
		d.mu.Unlock()
		require.NoError(t, d.Flush())
		require.Nil(t, preparedWAL_(t, d), "round %d", round)
		if len(kept) > 0 {
			require.NotContains(t, logsIn(t, fs, "/db"), kept[0], "round %d: the rotation renamed the kept WAL", round)
			recycled++
		}
	}
	require.Positive(t, recycled, "a kept WAL was recycled")
	require.NoError(t, d.Close())
	d, err = Open("/db", opts)
	require.NoError(t, err)
	for round := 0; round < 4; round++ {
		checkKeys(t, d, fmt.Sprintf("r%d-", round), 100)
	}
	require.NoError(t, d.Close())
}

// A WAL whose creation ahead failed is created by the rotation that needs
// it, under the number reserved for it; when that fails too, the rotation
// fails as it did without creation ahead (the background error), and
// every acknowledged write survives.
func TestWALCreatedAheadFails(t *testing.T) {
	for _, again := range []bool{false, true} {
		t.Run(fmt.Sprintf("rotation-fails-too=%v", again), func(t *testing.T) {
			mem := vfs.NewMem()
			toggle := errorfs.NewToggle(errorfs.OpCreate).PathContains(".log")
			d, err := Open("/db", walRotateOptions(errorfs.Wrap(mem, toggle)))
			require.NoError(t, err)
			putRange(t, d, "a", 0, 100)
			toggle.Enable()
			d.mu.Lock()
			d.startNextWALLocked()
			d.mu.Unlock()
			p := preparedWAL_(t, d)
			require.NotNil(t, p)
			require.ErrorIs(t, p.err, errorfs.ErrInjected)
			if !again {
				toggle.Disable()
			}
			err = d.Flush()
			if again {
				require.Error(t, err)
				require.ErrorIs(t, err, errorfs.ErrInjected)
				require.Error(t, d.Put([]byte("x"), []byte("y"), nil), "the failure is the background error")
			} else {
				require.NoError(t, err)
				require.Equal(t, p.num, d.mu.log.num, "the reserved number")
				putRange(t, d, "b", 0, 100)
			}
			_ = d.Close()
			toggle.Disable()
			d, err = Open("/db", walRotateOptions(mem))
			require.NoError(t, err)
			checkKeys(t, d, "a", 100)
			if !again {
				checkKeys(t, d, "b", 100)
			}
			require.NoError(t, d.Close())
		})
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

// Close waits for the background close of a retired WAL and the creation
// of the next one: once it returns, nothing of the DB touches the
// directory.
func TestWALBackgroundWorkBeforeClose(t *testing.T) {
	mem := vfs.NewMem()
	var pending atomic.Int32
	slow := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if (op == errorfs.OpClose || op == errorfs.OpCreate) && strings.HasSuffix(path, ".log") {
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
// directory that opens with every synced write: taken after each Flush,
// while the next WAL is being created or the old one closed, the crash
// images hold an empty WAL newer than the last one written.
func TestWALCreatedAheadCrash(t *testing.T) {
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
		images = append(images, mem.CrashClone()) // the next WAL may be in creation
		preparedWAL_(t, d)
		images = append(images, mem.CrashClone()) // created, unused
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
