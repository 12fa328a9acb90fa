package db_test

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/internal/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// seqKey and seqValue are the keys of the sequential workloads below:
// write i puts seqKey(i) and sets "last" to i.
func seqKey(i int) []byte { return []byte(fmt.Sprintf("k%06d", i)) }

func seqValue(i int) []byte { return []byte(fmt.Sprintf("value-%d-%0*d", i, i%50, 0)) }

func seqBatch(i int) *db.Batch {
	b := db.NewBatch()
	b.Put(seqKey(i), seqValue(i))
	b.Put([]byte("last"), []byte(strconv.Itoa(i)))
	if i%7 == 3 {
		b.DeleteRange(seqKey(i-3), seqKey(i-2)) // deletes seqKey(i-3)
	}
	return b
}

// seqPresent reports whether write j is live after writes 0..k.
func seqPresent(j, k int) bool {
	return j <= k && !(j%7 == 0 && j+3 <= k)
}

// checkSeqPrefix opens a database and checks that it holds exactly the
// writes 0..k for some k >= minK; it returns k.
func checkSeqPrefix(t *testing.T, fs vfs.FS, dir string, minK, maxWrites int) int {
	t.Helper()
	d, err := db.Open(dir, &db.Options{FS: fs, WriteBufferSize: 256 << 10})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	k := -1
	if v, err := d.Get([]byte("last"), nil); err == nil {
		k, _ = strconv.Atoi(string(v))
	} else {
		require.ErrorIs(t, err, db.ErrNotFound)
	}
	require.GreaterOrEqual(t, k, minK, "acknowledged writes lost")
	for j := 0; j < maxWrites; j++ {
		v, err := d.Get(seqKey(j), nil)
		if seqPresent(j, k) {
			require.NoError(t, err, "write %d of 0..%d", j, k)
			require.Equal(t, seqValue(j), v)
		} else {
			require.ErrorIs(t, err, db.ErrNotFound, "write %d present after 0..%d", j, k)
		}
	}
	return k
}

// TestPowerLossSyncedWrites takes crash images (only synced bytes and
// synced directory entries) of a strict in-memory file system while a
// goroutine writes with Sync: every image must open to a prefix of the
// writes that holds every write acknowledged before the image was taken.
func TestPowerLossSyncedWrites(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewSource(seed))
	for _, lax := range []bool{false, true} {
		fs := vfs.NewMem()
		if lax {
			fs = vfs.NewLaxMem()
		}
		d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true, WriteBufferSize: 8 << 10,
			Level0SlowdownWritesTrigger: 1 << 20, Level0StopWritesTrigger: 1 << 20})
		require.NoError(t, err)
		const n = 1500
		var acked atomic.Int64
		acked.Store(-1)
		var wg sync.WaitGroup
		werr := make(chan error, 1) // the writer's failure, checked after wg.Wait
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				if err := d.Write(seqBatch(i), &db.WriteOptions{Sync: true}); err != nil {
					werr <- fmt.Errorf("write %d: %w", i, err)
					return
				}
				acked.Store(int64(i))
				if i%300 == 299 {
					if err := d.Flush(); err != nil {
						werr <- fmt.Errorf("flush after write %d: %w", i, err)
						return
					}
				}
			}
		}()
		var images []*vfs.MemFS
		var mins []int
		for len(images) < 12 {
			a := int(acked.Load())
			images = append(images, fs.CrashClone())
			mins = append(mins, a)
			if a >= n-1 {
				break
			}
			for spin := rng.Intn(20000); spin > 0; spin-- {
				_ = acked.Load()
			}
		}
		wg.Wait()
		close(werr)
		require.NoError(t, <-werr)
		images = append(images, fs.CrashClone())
		mins = append(mins, n-1)
		for i, img := range images {
			k := checkSeqPrefix(t, img, "/db", mins[i], n)
			t.Logf("lax=%v image %d: acknowledged %d, recovered 0..%d", lax, i, mins[i], k)
		}
		require.NoError(t, d.Close())
	}
}

// TestPowerLossFlushAndClose: writes without Sync survive a crash once
// Flush returned; DisableWAL writes survive a clean Close.
func TestPowerLossFlushAndClose(t *testing.T) {
	fs := vfs.NewMem()
	opts := &db.Options{FS: fs, CreateIfMissing: true, WriteBufferSize: 16 << 10}
	d, err := db.Open("/db", opts)
	require.NoError(t, err)
	for i := 0; i < 500; i++ {
		require.NoError(t, d.Write(seqBatch(i), nil))
	}
	require.NoError(t, d.Flush())
	checkSeqPrefix(t, fs.CrashClone(), "/db", 499, 500)

	for i := 500; i < 1000; i++ {
		require.NoError(t, d.Write(seqBatch(i), &db.WriteOptions{DisableWAL: true}))
	}
	require.NoError(t, d.Close())
	checkSeqPrefix(t, fs.CrashClone(), "/db", 999, 1000)
}

// TestPowerLossDisableWALMixed mixes synced WAL writes with DisableWAL
// writes to other keys: after a crash every synced write is there; a
// DisableWAL key holds a value that was written to it, or nothing.
func TestPowerLossDisableWALMixed(t *testing.T) {
	fs := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true, WriteBufferSize: 8 << 10,
		Level0SlowdownWritesTrigger: 1 << 20, Level0StopWritesTrigger: 1 << 20})
	require.NoError(t, err)
	const n = 600
	for i := 0; i < n; i++ {
		require.NoError(t, d.Write(seqBatch(i), &db.WriteOptions{Sync: true}))
		x := []byte(fmt.Sprintf("x%03d", i%37))
		require.NoError(t, d.Put(x, []byte(strconv.Itoa(i)), &db.WriteOptions{DisableWAL: true}))
	}
	img := fs.CrashClone()
	require.NoError(t, d.Close())
	checkSeqPrefix(t, img, "/db", n-1, n)
	d, err = db.Open("/db", &db.Options{FS: img})
	require.NoError(t, err)
	defer d.Close()
	for j := 0; j < 37; j++ {
		v, err := d.Get([]byte(fmt.Sprintf("x%03d", j)), nil)
		if err != nil {
			require.ErrorIs(t, err, db.ErrNotFound)
			continue
		}
		i, err := strconv.Atoi(string(v))
		require.NoError(t, err)
		require.Equal(t, j, i%37, "x%03d holds a value never written to it", j)
	}
}

// TestWALWriteErrorStopsWrites injects a failure on the WAL: the Write that
// hits it fails, every later write fails too, reads keep working, and a
// reopen on the healthy file system has every acknowledged write.
func TestWALWriteErrorStopsWrites(t *testing.T) {
	for _, op := range []errorfs.Op{errorfs.OpWrite, errorfs.OpSync} {
		t.Run(op.String(), func(t *testing.T) {
			mem := vfs.NewMem()
			toggle := errorfs.NewToggle(op).PathContains(".log")
			fs := errorfs.Wrap(mem, toggle)
			d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true})
			require.NoError(t, err)
			const n = 200
			for i := 0; i < n; i++ {
				require.NoError(t, d.Write(seqBatch(i), &db.WriteOptions{Sync: i%2 == 0}))
			}
			toggle.Enable()
			require.ErrorIs(t, d.Write(seqBatch(n), &db.WriteOptions{Sync: true}), errorfs.ErrInjected)
			toggle.Disable()
			require.Error(t, d.Write(seqBatch(n+1), nil), "writes after a WAL failure must fail")
			require.Error(t, d.Put([]byte("x"), []byte("y"), nil))
			v, err := d.Get(seqKey(n-1), nil)
			require.NoError(t, err)
			require.Equal(t, seqValue(n-1), v)
			it := d.NewIterator(nil)
			it.SeekToFirst()
			require.True(t, it.Valid())
			require.NoError(t, it.Close())
			d.Close() // may report the background error
			k := checkSeqPrefix(t, mem, "/db", n-1, n+2)
			require.LessOrEqual(t, k, n, "a write after the failure survived")
		})
	}
}

// TestOpenFaultInjection fails each file-system operation of Open in turn
// (once, and from that operation on): Open must fail cleanly or succeed
// with every write, and a retry without faults must succeed with every
// write.
func TestOpenFaultInjection(t *testing.T) {
	const n = 300
	base := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: base, CreateIfMissing: true, WriteBufferSize: 8 << 10})
	require.NoError(t, err)
	for i := 0; i < n; i++ {
		require.NoError(t, d.Write(seqBatch(i), &db.WriteOptions{Sync: true}))
		if i == n/2 {
			require.NoError(t, d.Flush())
		}
	}
	// The image has tables, a MANIFEST and WAL-only writes to recover.
	image := base.CrashClone()
	require.NoError(t, d.Close())

	counter := errorfs.OnIndex(-1)
	d, err = db.Open("/db", &db.Options{FS: errorfs.Wrap(image.CrashClone(), counter), WriteBufferSize: 256 << 10})
	require.NoError(t, err)
	require.NoError(t, d.Close())
	ops := counter.Count()
	require.Greater(t, ops, 10)
	t.Logf("Open performs %d file-system operations", ops)
	for i := 0; i < ops; i++ {
		for _, sticky := range []bool{false, true} {
			mem := image.CrashClone()
			inj := errorfs.OnIndex(i)
			if sticky {
				inj = inj.Sticky()
			}
			d, err := db.Open("/db", &db.Options{FS: errorfs.Wrap(mem, inj), WriteBufferSize: 256 << 10})
			if err == nil {
				// The fault hit something Open may ignore (or a close).
				d.Close()
			}
			checkSeqPrefix(t, mem, "/db", n-1, n)
			// And once more after a crash of the retried state.
			checkSeqPrefix(t, mem.CrashClone(), "/db", n-1, n)
		}
	}
}

// TestCorruptTableBlock flips a byte in a table's first data block: every
// read either returns the right value or an ErrCorruption error naming the
// file; none returns wrong data or panics.
func TestCorruptTableBlock(t *testing.T) {
	for _, c := range []db.Compression{db.NoCompression, db.SnappyCompression, db.ZstdCompression} {
		t.Run(c.String(), func(t *testing.T) {
			d, dir := openTest(t, &db.Options{Compression: c, BlockSize: 1024})
			for i := 0; i < 500; i++ {
				require.NoError(t, d.Put(seqKey(i), seqValue(i), nil))
			}
			require.NoError(t, d.Close())
			tables := filesMatching(t, dir, "*.sst")
			require.Len(t, tables, 1)
			flipByte(t, tables[0], 40)

			d, err := db.Open(dir, &db.Options{DisableAutoCompactions: true})
			require.NoError(t, err)
			defer d.Close()
			corrupt := 0
			for i := 0; i < 500; i++ {
				v, err := d.Get(seqKey(i), nil)
				if err != nil {
					require.ErrorIs(t, err, db.ErrCorruption, "Get %d", i)
					require.Contains(t, err.Error(), filepath.Base(tables[0]))
					corrupt++
					continue
				}
				require.Equal(t, seqValue(i), v, "Get %d returned wrong data", i)
			}
			require.Greater(t, corrupt, 0, "the flipped byte went unnoticed")
			it := d.NewIterator(nil)
			n := 0
			for it.SeekToFirst(); it.Valid(); it.Next() {
				require.Equal(t, seqValue(n), it.Value())
				n++
			}
			require.ErrorIs(t, it.Err(), db.ErrCorruption)
			require.Contains(t, it.Err().Error(), filepath.Base(tables[0]))
			it.Close()
			_, errs := d.MultiGet([][]byte{seqKey(0)}, nil)
			require.ErrorIs(t, errs[0], db.ErrCorruption)
		})
	}
}

// TestCorruptManifest flips a byte in the MANIFEST's first record: Open
// fails with ErrCorruption naming the file.
func TestCorruptManifest(t *testing.T) {
	d, dir := openTest(t, nil)
	require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
	require.NoError(t, d.Close())
	manifests := filesMatching(t, dir, "MANIFEST-*")
	require.Len(t, manifests, 1)
	flipByte(t, manifests[0], 9)
	_, err := db.Open(dir, nil)
	require.ErrorIs(t, err, db.ErrCorruption)
	require.Contains(t, err.Error(), filepath.Base(manifests[0]))
}

// TestCorruptWALRecord flips a byte inside an early record of the WAL,
// followed by valid ones: acknowledged writes after it would be lost, so
// Open must fail with ErrCorruption naming the WAL rather than drop them.
func TestCorruptWALRecord(t *testing.T) {
	d, dir := openTest(t, &db.Options{WriteBufferSize: 4 << 20})
	defer d.Close()
	for i := 0; i < 200; i++ {
		require.NoError(t, d.Write(seqBatch(i), nil))
	}
	// The WAL is written to the OS on every Write: copy the live files.
	cp := filepath.Join(t.TempDir(), "copy")
	copyDir(t, dir, cp)
	wals := filesMatching(t, cp, "*.log")
	require.NotEmpty(t, wals)
	sort.Strings(wals)
	flipByte(t, wals[len(wals)-1], 20)
	_, err := db.Open(cp, nil)
	require.ErrorIs(t, err, db.ErrCorruption)
	require.Contains(t, err.Error(), filepath.Base(wals[len(wals)-1]))

	// The copy without the flip opens with every write.
	cp2 := filepath.Join(t.TempDir(), "copy2")
	copyDir(t, dir, cp2)
	checkSeqPrefix(t, vfs.Default, cp2, 199, 200)
}

// TestFileErrorKeepsAcknowledgedWrites makes one kind of file operation
// fail from a random moment on (a disk that fills or dies) while synced
// writes and flushes run: the workload stops at the first error, and
// after reopening on the healthy file system, and after a crash of it,
// every acknowledged write is there and nothing follows a missing one.
func TestFileErrorKeepsAcknowledgedWrites(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewSource(seed))
	cases := []struct {
		op   errorfs.Op
		path string
	}{
		{errorfs.OpWrite, ".sst"}, {errorfs.OpSync, ".sst"}, {errorfs.OpCreate, ".sst"},
		{errorfs.OpWrite, "MANIFEST"}, {errorfs.OpSync, "MANIFEST"}, {errorfs.OpCreate, ".log"},
		{errorfs.OpSync, ".log"}, {errorfs.OpWrite, ".log"}, {errorfs.OpSync, ""}, {errorfs.OpRename, ""},
		{errorfs.OpRemove, ""}, {errorfs.OpRead, ".sst"},
	}
	for _, c := range cases {
		t.Run(c.op.String()+c.path, func(t *testing.T) {
			mem := vfs.NewMem()
			toggle := errorfs.NewToggle(c.op).PathContains(c.path)
			d, err := db.Open("/db", &db.Options{FS: errorfs.Wrap(mem, toggle), CreateIfMissing: true,
				WriteBufferSize: 8 << 10, Level0FileNumCompactionTrigger: 2})
			require.NoError(t, err)
			const n = 800
			failAt := rng.Intn(n)
			last := -1
			for i := 0; i < n; i++ {
				if i == failAt {
					toggle.Enable()
				}
				if err := d.Write(seqBatch(i), &db.WriteOptions{Sync: i%3 == 0}); err != nil {
					break
				}
				last = i
				if i%97 == 0 {
					if err := d.Flush(); err != nil {
						break
					}
				}
				if i%5 == 0 { // reads work whatever happens to writes
					v, err := d.Get(seqKey(i), nil)
					if err == nil {
						require.Equal(t, seqValue(i), v)
					}
				}
			}
			t.Logf("fault from write %d on; last acknowledged %d", failAt, last)
			d.Close() // may report the error
			toggle.Disable()
			// Writes that were not synced may be lost in a crash, but
			// not after a clean reopen of the same file system.
			checkSeqPrefix(t, mem, "/db", last, n)
			checkSeqPrefix(t, mem.CrashClone(), "/db", last, n)
		})
	}
}

// TestCloseAfterBackgroundErrorReportsUnflushedWrites: once a flush failed,
// Close cannot flush the memtables, so writes made with DisableWAL are lost;
// Close says so instead of returning nil (a clean Close persists every
// write, DisableWAL ones included).
func TestCloseAfterBackgroundErrorReportsUnflushedWrites(t *testing.T) {
	mem := vfs.NewMem()
	toggle := errorfs.NewToggle(errorfs.OpCreate).PathContains(".sst")
	d, err := db.Open("/db", &db.Options{FS: errorfs.Wrap(mem, toggle), CreateIfMissing: true})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("a"), []byte("1"), &db.WriteOptions{DisableWAL: true}))
	toggle.Enable()
	require.ErrorIs(t, d.Flush(), errorfs.ErrInjected)
	toggle.Disable()
	err = d.Close()
	require.ErrorIs(t, err, errorfs.ErrInjected, "Close after a failed flush with unflushed writes")
	require.Contains(t, err.Error(), "DisableWAL")

	// With nothing left in the memtables, Close after a background error
	// has nothing to report beyond what the failed call already returned.
	d, err = db.Open("/db", &db.Options{FS: errorfs.Wrap(mem, toggle)})
	require.NoError(t, err)
	require.NoError(t, d.Close())
}

// An ingestion is a write after every write acknowledged before it: a crash
// that keeps the ingestion keeps them too, Sync=false or not. Before the fix
// Ingest made its sequence number durable in the MANIFEST without syncing
// the WAL, and a power loss kept the ingested file but lost the earlier Put.
func TestPowerLossIngestAfterUnsyncedPut(t *testing.T) {
	for _, syscalls := range []bool{false, true} {
		t.Run(fmt.Sprintf("WALWriteSyscalls=%v", syscalls), func(t *testing.T) {
			fs := vfs.NewMem()
			d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true, WALWriteSyscalls: syscalls})
			require.NoError(t, err)
			defer func() { require.NoError(t, d.Close()) }()
			require.NoError(t, d.Put([]byte("a"), []byte("put"), nil))
			writeExtFile(t, fs, "/ext.sst", []extOp{{key: "z", value: "ingested"}})
			require.NoError(t, d.Ingest([]string{"/ext.sst"}, nil))

			c, err := db.Open("/db", &db.Options{FS: fs.CrashClone()})
			require.NoError(t, err)
			defer func() { require.NoError(t, c.Close()) }()
			_, zerr := c.Get([]byte("z"), nil)
			if zerr == nil {
				v, err := c.Get([]byte("a"), nil)
				require.NoError(t, err, "the ingestion survived the power loss, the Put before it did not")
				require.Equal(t, "put", string(v))
			} else {
				require.ErrorIs(t, zerr, db.ErrNotFound)
			}
			// The ingestion returned: it must have survived.
			require.NoError(t, zerr)
		})
	}
}
