package db_test

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/internal/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// newestWAL returns the path of the highest-numbered WAL in dir that was
// written to: one created ahead of the next rotation holds nothing but
// zeros.
func newestWAL(t *testing.T, fs vfs.FS, dir string) string {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	newest := ""
	for _, name := range names {
		if strings.HasSuffix(name, ".log") && name > newest && !zeroFile(t, fs, filepath.Join(dir, name)) {
			newest = name
		}
	}
	require.NotEmpty(t, newest, "no WAL in %s", dir)
	return filepath.Join(dir, newest)
}

// zeroFile reports whether the file at path holds only zero bytes (or none).
func zeroFile(t *testing.T, fs vfs.FS, path string) bool {
	t.Helper()
	f, err := fs.Open(path)
	require.NoError(t, err)
	data, err := io.ReadAll(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return !slices.ContainsFunc(data, func(b byte) bool { return b != 0 })
}

// tearWAL appends the start of a record header to the WAL at path, as a
// write cut short by a full disk or a crash leaves it, and syncs it.
func tearWAL(t *testing.T, fs vfs.FS, path string) {
	t.Helper()
	f, err := fs.Open(path)
	require.NoError(t, err)
	data, err := io.ReadAll(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NotEmpty(t, data)
	f, err = fs.Create(path)
	require.NoError(t, err)
	_, err = f.Write(append(data, 0x5a, 0x17, 0x03))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// enospc fails the n-th file-system operation of the kinds given (all when
// none) with ENOSPC, and with sticky every one after it, as a disk that
// fills would.
type enospc struct{ *errorfs.Index }

func (e enospc) MaybeError(op errorfs.Op, path string) error {
	if err := e.Index.MaybeError(op, path); err != nil {
		return errors.Wrapf(syscall.ENOSPC, "%s %s", op, path)
	}
	return nil
}

// tornTailImage returns a crash image of a database with tables, a
// MANIFEST, and n synced writes of which the last ones are only in its
// WAL, whose end is torn.
func tornTailImage(t *testing.T, n int) *vfs.MemFS {
	t.Helper()
	base := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: base, CreateIfMissing: true, WriteBufferSize: 64 << 10})
	require.NoError(t, err)
	for i := 0; i < n; i++ {
		require.NoError(t, d.Write(seqBatch(i), &db.WriteOptions{Sync: true}))
		if i == n/2 {
			require.NoError(t, d.Flush())
		}
	}
	image := base.CrashClone()
	require.NoError(t, d.Close())
	tearWAL(t, image, newestWAL(t, image, "/db"))
	return image
}

// TestOpenDiskFullLeavesOpenable fails each file-system operation of an
// Open that recovers a WAL with a torn tail (once, and from that operation
// on) with ENOSPC: whatever Open did before it failed, an Open without
// faults must then succeed with every acknowledged write, and so must one
// after a crash of that state. An Open that failed creating its new WAL
// used to leave that empty WAL behind, after which the recovered WAL's
// torn tail was in a WAL that was not the last one, and every Open failed
// with ErrCorruption.
func TestOpenDiskFullLeavesOpenable(t *testing.T) {
	const n = 200
	image := tornTailImage(t, n)
	for _, syscalls := range []bool{false, true} {
		opts := func(fs vfs.FS) *db.Options {
			return &db.Options{FS: fs, WriteBufferSize: 64 << 10, WALWriteSyscalls: syscalls}
		}
		counter := errorfs.OnIndex(-1)
		d, err := db.Open("/db", opts(errorfs.Wrap(image.CrashClone(), counter)))
		require.NoError(t, err)
		require.NoError(t, d.Close())
		ops := counter.Count()
		require.Greater(t, ops, 10)
		for i := 0; i < ops; i++ {
			for _, sticky := range []bool{false, true} {
				t.Run(fmt.Sprintf("syscalls=%v/op=%d/sticky=%v", syscalls, i, sticky), func(t *testing.T) {
					mem := image.CrashClone()
					inj := errorfs.OnIndex(i)
					if sticky {
						inj = inj.Sticky()
					}
					d, err := db.Open("/db", opts(errorfs.Wrap(mem, enospc{inj})))
					if err == nil {
						d.Close() // the fault hit something Open may ignore, or Close
					}
					crashed := mem.CrashClone()
					checkSeqPrefix(t, mem, "/db", n-1, n)
					checkSeqPrefix(t, crashed, "/db", n-1, n)
				})
			}
		}
	}
}

// TestTornWALBeforeEmptyWAL opens a crash image whose newest WAL holds no
// record and the one before it ends in a torn record: what a power loss
// leaves between creating a WAL and syncing its predecessor, or a WAL
// rotation that failed on a full disk. No write reached the empty WAL, so
// the torn WAL is the last that was written: Open drops its tail and keeps
// every synced write.
func TestTornWALBeforeEmptyWAL(t *testing.T) {
	const n = 200
	for _, empty := range []struct {
		name string
		data []byte
	}{{"zero-length", nil}, {"zero-filled", make([]byte, 40<<10)}} {
		t.Run(empty.name, func(t *testing.T) {
			image := tornTailImage(t, n)
			f, err := image.Create("/db/999999.log")
			require.NoError(t, err)
			_, err = f.Write(empty.data)
			require.NoError(t, err)
			require.NoError(t, f.Sync())
			require.NoError(t, f.Close())
			dir, err := image.OpenDir("/db")
			require.NoError(t, err)
			require.NoError(t, dir.Sync())
			require.NoError(t, dir.Close())
			checkSeqPrefix(t, image, "/db", n-1, n)
		})
	}
	// A torn WAL before one that holds a record is still damage: the
	// newer WAL was started only after the older one was synced.
	t.Run("record after", func(t *testing.T) {
		image := tornTailImage(t, n)
		src := newestWAL(t, image, "/db")
		f, err := image.Open(src)
		require.NoError(t, err)
		data, err := io.ReadAll(f)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		f, err = image.Create("/db/999999.log")
		require.NoError(t, err)
		_, err = f.Write(data[:len(data)-3]) // the records, without the torn bytes
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
		_, err = db.Open("/db", &db.Options{FS: image})
		require.ErrorIs(t, err, db.ErrCorruption)
	})
}

// TestWALCreateFailureIsBackgroundError fails the creation of a new WAL
// (the file, or the directory sync that makes it durable) when a memtable
// is rotated: the write or Flush that needed it fails, every later write
// fails with the same error, strata.background-error reports it, the
// BackgroundError event fires, and a reopen without faults has every
// acknowledged write.
func TestWALCreateFailureIsBackgroundError(t *testing.T) {
	for _, c := range []struct {
		name string
		fail func(op errorfs.Op, path string) bool
	}{
		{"create", func(op errorfs.Op, path string) bool {
			return op == errorfs.OpCreate && strings.HasSuffix(path, ".log")
		}},
		{"dirsync", func(op errorfs.Op, path string) bool { return op == errorfs.OpSync && path == "/db" }},
		{"oldsync", func(op errorfs.Op, path string) bool {
			return op == errorfs.OpSync && strings.HasSuffix(path, ".log")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewMem()
			var on atomic.Bool
			fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
				if on.Load() && c.fail(op, path) {
					return errors.Wrapf(syscall.ENOSPC, "%s %s", op, path)
				}
				return nil
			}))
			var events atomic.Int32
			d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true, WriteBufferSize: 64 << 10,
				EventListener: &db.EventListener{BackgroundError: func(error) { events.Add(1) }}})
			require.NoError(t, err)
			const n = 100
			for i := 0; i < n; i++ {
				require.NoError(t, d.Write(seqBatch(i), nil))
			}
			v, ok := d.GetProperty(db.PropBackgroundError)
			require.True(t, ok)
			require.Empty(t, v)
			on.Store(true)
			err = d.Flush()
			require.ErrorIs(t, err, syscall.ENOSPC)
			on.Store(false)
			v, ok = d.GetProperty(db.PropBackgroundError)
			require.True(t, ok)
			require.Contains(t, v, "no space left on device")
			werr := d.Write(seqBatch(n), nil)
			require.ErrorIs(t, werr, syscall.ENOSPC, "a write after the WAL failure must fail with it")
			require.ErrorIs(t, d.Flush(), syscall.ENOSPC)
			got, err := d.Get(seqKey(n-1), nil)
			require.NoError(t, err)
			require.Equal(t, seqValue(n-1), got)
			d.Close() // reports the background error
			require.Equal(t, int32(1), events.Load())
			k := checkSeqPrefix(t, mem, "/db", n-1, n+1)
			require.Equal(t, n-1, k)
		})
	}
}

// TestDiskFullOnTmpfs fills a small real tmpfs with synced writes until the
// disk is full, then closes, and tries to reopen while the disk is still
// full: every attempt may fail, but never with ErrCorruption, and once the
// file system has room again an Open succeeds with every acknowledged write.
// It needs root (mount); elsewhere it is skipped.
func TestDiskFullOnTmpfs(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v: %s", err, out)
	}
	defer func() { _ = exec.Command("umount", mnt).Run() }()
	dir := filepath.Join(mnt, "db")
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, WriteBufferSize: 64 << 10})
	require.NoError(t, err)
	value := make([]byte, 512)
	acked := 0
	for ; acked < 100000; acked++ {
		if err := d.Put([]byte(fmt.Sprintf("k%06d", acked)), value, &db.WriteOptions{Sync: true}); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC, "the write that found the disk full")
			break
		}
	}
	require.Less(t, acked, 100000, "the disk never filled")
	_ = d.Close() // may fail: the disk is full
	// Give the file system back a little room at a time, so that Opens
	// fail at every stage (replaying, writing the recovered tables, the
	// MANIFEST, the new WAL): none may leave a directory that reads as
	// damaged. A writable handle that opens closes again and fills the
	// room with nothing new.
	remount := func(kib int) {
		out, err := exec.Command("mount", "-o", fmt.Sprintf("remount,size=%dk", kib), mnt).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	opened := 0
	for kib := 4 << 10; kib <= 8<<10 && opened < 3; kib += 32 {
		remount(kib)
		d, err := db.Open(dir, nil)
		if err != nil {
			require.False(t, errors.Is(err, db.ErrCorruption), "Open with %d KiB: %v", kib, err)
			continue
		}
		opened++
		_ = d.Close()
	}
	remount(64 << 10)
	d, err = db.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	for i := 0; i < acked; i++ {
		_, err := d.Get([]byte(fmt.Sprintf("k%06d", i)), nil)
		require.NoError(t, err, "acknowledged key %d of %d", i, acked)
	}
}
