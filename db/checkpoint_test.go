package db

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/internal/vfs/errorfs"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

// ckptScan opens dir read-write with fs, scans it and closes it.
func ckptScan(t *testing.T, fs vfs.FS, dir string) string {
	t.Helper()
	d, err := Open(dir, &Options{FS: fs})
	require.NoError(t, err)
	got, err := compatScan(t, d)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	return got
}

// TestCheckpointLDBAccepts: a Strata checkpoint (taken while writes sit in
// the WAL only) shares the source's tables by hard links, opens in Strata
// with the source's contents, and RocksDB's ldb checkconsistency and scan
// accept it.
func TestCheckpointLDBAccepts(t *testing.T) {
	for _, opts := range []*Options{
		{CreateIfMissing: true},
		{CreateIfMissing: true, Compression: SnappyCompression, BloomBitsPerKey: 10},
	} {
		src := t.TempDir()
		d, err := Open(src, opts)
		require.NoError(t, err)
		compatFill(t, d)
		require.NoError(t, d.Put([]byte("nowal"), []byte("kept"), &WriteOptions{DisableWAL: true}))
		want, err := compatScan(t, d)
		require.NoError(t, err)
		ckpt := filepath.Join(t.TempDir(), "ckpt")
		require.NoError(t, d.Checkpoint(ckpt))

		// Tables are links to the source's files.
		tables, err := filepath.Glob(filepath.Join(ckpt, "*.sst"))
		require.NoError(t, err)
		require.NotEmpty(t, tables)
		for _, tbl := range tables {
			a, err := os.Stat(tbl)
			require.NoError(t, err)
			b, err := os.Stat(filepath.Join(src, filepath.Base(tbl)))
			require.NoError(t, err)
			require.True(t, os.SameFile(a, b), tbl)
		}
		_, err = os.Stat(ckpt + checkpointTempSuffix)
		require.ErrorIs(t, err, os.ErrNotExist)

		// The source keeps working and the checkpoint does not follow it.
		require.NoError(t, d.Put([]byte("after"), []byte("checkpoint"), nil))
		require.NoError(t, d.CompactRange(nil, nil))
		require.NoError(t, d.Close())

		if _, err := exec.LookPath("ldb"); err == nil || os.Getenv("CI") == "true" {
			compatCheckLDBReads(t, ckpt, want)
		}
		require.Equal(t, want, ckptScan(t, vfs.Default, ckpt))
	}
}

// TestCheckpointOfRocksDBCheckpoint: Strata opens a checkpoint made by
// RocksDB's `ldb checkpoint` of a RocksDB-written database.
func TestCheckpointOfRocksDBCheckpoint(t *testing.T) {
	compatLDB(t)
	for _, fixture := range []string{"ldb-tiny-before-compact", "fv5-xxh3-snappy-bloom10", "wal-only-batches"} {
		src := compatCopyDir(t, filepath.Join(compatFixtures, fixture, "db"))
		ckpt := filepath.Join(t.TempDir(), "ck")
		runLDB(t, "--db="+src, "checkpoint", "--checkpoint_dir="+ckpt)
		entries, sum := compatExpected(t, fixture)
		got := ckptScan(t, vfs.Default, ckpt)
		require.Equal(t, sum, compatSHA(got), fixture)
		require.Equal(t, entries, len(splitLines(got)), fixture)
	}
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

func TestCheckpointErrors(t *testing.T) {
	fs := vfs.NewMem()
	d, err := Open("/db", &Options{FS: fs, CreateIfMissing: true})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("k"), []byte("v"), nil))
	require.NoError(t, fs.MkdirAll("/exists", 0o755))
	require.ErrorIs(t, d.Checkpoint("/exists"), ErrInvalidArgument)
	require.ErrorIs(t, d.Checkpoint("/db"), ErrInvalidArgument)
	require.ErrorIs(t, d.Checkpoint(""), ErrInvalidArgument)
	require.NoError(t, d.Checkpoint("/c1"))
	require.ErrorIs(t, d.Checkpoint("/c1"), ErrInvalidArgument)
	require.NoError(t, d.Close())
	require.ErrorIs(t, d.Checkpoint("/c2"), ErrClosed)
	require.Equal(t, "0x6B : 0x76\n", ckptScan(t, fs, "/c1"))
}

// TestCheckpointReadOnly: a read-only database flushes nothing, so its
// checkpoint carries copies of the WALs.
func TestCheckpointReadOnly(t *testing.T) {
	fs := vfs.NewMem()
	d, err := Open("/db", &Options{FS: fs, CreateIfMissing: true})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("a"), []byte("table"), nil))
	require.NoError(t, d.Flush())
	require.NoError(t, d.Put([]byte("b"), []byte("wal"), &WriteOptions{Sync: true}))
	img := fs.CrashClone() // the WAL still holds "b"
	require.NoError(t, d.Close())
	d, err = Open("/db", &Options{FS: img, ReadOnly: true})
	require.NoError(t, err)
	require.NoError(t, d.Checkpoint("/ck"))
	require.NoError(t, d.Close())
	require.Equal(t, "0x61 : 0x7461626C65\n0x62 : 0x77616C\n", ckptScan(t, img, "/ck"))
}

// TestCheckpointPinsItsVersion: a compaction that runs while the checkpoint
// links its tables deletes none of them (the checkpoint pins its version).
func TestCheckpointPinsItsVersion(t *testing.T) {
	fs := vfs.NewMem()
	d, err := Open("/db", &Options{FS: fs, CreateIfMissing: true, DisableAutoCompactions: true})
	require.NoError(t, err)
	var want string
	for i := 0; i < 4; i++ {
		for j := 0; j < 50; j++ {
			k := fmt.Sprintf("key%03d", j)
			v := fmt.Sprintf("v%d", i)
			require.NoError(t, d.Put([]byte(k), []byte(v), nil))
		}
		require.NoError(t, d.Flush())
	}
	want, err = compatScan(t, d)
	require.NoError(t, err)
	before, err := fs.List("/db")
	require.NoError(t, err)
	var hookErr error
	d.testing.checkpointPinned = func() {
		// Overwrite everything and compact: every table of the pinned
		// version leaves the current one.
		for j := 0; j < 50 && hookErr == nil; j++ {
			hookErr = d.Put([]byte(fmt.Sprintf("key%03d", j)), []byte("later"), nil)
		}
		if hookErr == nil {
			hookErr = d.CompactRange(nil, nil)
		}
	}
	require.NoError(t, d.Checkpoint("/ck"))
	require.NoError(t, hookErr)
	require.Equal(t, want, ckptScan(t, fs, "/ck"))
	// The pinned tables go once the checkpoint is done and work resumes.
	require.NoError(t, d.Put([]byte("x"), []byte("y"), nil))
	require.NoError(t, d.Flush())
	after, err := fs.List("/db")
	require.NoError(t, err)
	require.Less(t, countSuffix(after, ".sst"), countSuffix(before, ".sst"))
	require.NoError(t, d.Close())
}

func countSuffix(names []string, suffix string) int {
	n := 0
	for _, s := range names {
		if filepath.Ext(s) == suffix {
			n++
		}
	}
	return n
}

// TestCheckpointUnderConcurrentWrites: one writer puts key i%keys = i for
// i = 0, 1, 2..., with flushes and compactions running (small memtables).
// Each checkpoint must hold the state after exactly some prefix 0..P of the
// writes, with P at least the last write acknowledged before Checkpoint
// was called. STRATA_CHECKPOINT_ROUNDS raises the number of checkpoints.
func TestCheckpointUnderConcurrentWrites(t *testing.T) {
	rounds := 4
	if s := os.Getenv("STRATA_CHECKPOINT_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		rounds = n
	}
	const keys = 97
	fs := vfs.NewMem()
	d, err := Open("/db", &Options{FS: fs, CreateIfMissing: true, WriteBufferSize: 16 << 10})
	require.NoError(t, err)
	var acked atomic.Int64
	acked.Store(-1)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			k := fmt.Sprintf("k%03d", i%keys)
			v := fmt.Sprintf("%09d-%s", i, "padding-padding-padding")
			if err := d.Put([]byte(k), []byte(v), nil); err != nil {
				done <- err
				return
			}
			acked.Store(int64(i))
		}
	}()
	for r := 0; r < rounds; r++ {
		for acked.Load() < int64((r+1)*2000) {
			select {
			case err := <-done:
				require.NoError(t, err)
			default:
			}
		}
		before := acked.Load()
		dir := fmt.Sprintf("/ck%d", r)
		require.NoError(t, d.Checkpoint(dir))
		c, err := Open(dir, &Options{FS: fs})
		require.NoError(t, err)
		got := map[int]int{}
		it := c.NewIterator(nil)
		p := -1
		for it.SeekToFirst(); it.Valid(); it.Next() {
			k, err := strconv.Atoi(string(it.Key()[1:]))
			require.NoError(t, err)
			v, err := strconv.Atoi(string(it.Value()[:9]))
			require.NoError(t, err)
			got[k] = v
			p = max(p, v)
		}
		require.NoError(t, it.Err())
		require.NoError(t, it.Close())
		require.NoError(t, c.Close())
		require.GreaterOrEqual(t, int64(p), before, "checkpoint %d misses acknowledged writes", r)
		for k := 0; k < keys; k++ {
			want := p - ((p-k)%keys+keys)%keys // the last i <= p with i%keys == k
			if want < 0 {
				require.NotContains(t, got, k)
				continue
			}
			require.Equal(t, want, got[k], "checkpoint %d (prefix %d), key %d", r, p, k)
		}
	}
	close(stop)
	require.NoError(t, <-done)
	require.NoError(t, d.Close())
}

// TestCheckpointCrash crashes (takes a crash image) before each file-system
// operation of a Checkpoint, and separately fails each operation: either
// no checkpoint exists afterwards or a complete one does, the source
// database is intact, and a new Checkpoint to the same directory succeeds.
func TestCheckpointCrash(t *testing.T) {
	base := vfs.NewMem()
	d, err := Open("/db", &Options{FS: base, CreateIfMissing: true, WriteBufferSize: 8 << 10})
	require.NoError(t, err)
	for i := 0; i < 300; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprintf("v%d", i)), &WriteOptions{Sync: i%50 == 0}))
	}
	want, err := compatScan(t, d)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	image := base.CrashClone()

	// How many operations touch the checkpoint's paths?
	counter := errorfs.OnIndex(-1).PathContains("/ck")
	mem := image.CrashClone()
	d, err = Open("/db", &Options{FS: errorfs.Wrap(mem, counter)})
	require.NoError(t, err)
	require.NoError(t, d.Checkpoint("/ck"))
	require.NoError(t, d.Close())
	ops := counter.Count()
	require.Greater(t, ops, 5)

	check := func(t *testing.T, fs *vfs.MemFS, what string) {
		t.Helper()
		if _, err := fs.Stat("/ck"); err == nil {
			require.Equal(t, want, ckptScan(t, fs, "/ck"), what)
		} else {
			require.ErrorIs(t, err, os.ErrNotExist, what)
		}
		require.Equal(t, want, ckptScan(t, fs, "/db"), what)
		// A retry works, whatever the crash left behind.
		d, err := Open("/db", &Options{FS: fs})
		require.NoError(t, err)
		if _, err := fs.Stat("/ck"); err == nil {
			require.NoError(t, d.Checkpoint("/ck2"))
		} else {
			require.NoError(t, d.Checkpoint("/ck"))
		}
		require.NoError(t, d.Close())
	}
	for i := 0; i < ops; i++ {
		// A crash just before operation i.
		mem := image.CrashClone()
		var crashed *vfs.MemFS
		var n atomic.Int64
		inj := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
			if filepath.Base(path) != "" && containsCk(path) && n.Add(1)-1 == int64(i) {
				crashed = mem.CrashClone()
			}
			return nil
		})
		d, err := Open("/db", &Options{FS: errorfs.Wrap(mem, inj)})
		require.NoError(t, err)
		require.NoError(t, d.Checkpoint("/ck"))
		require.NoError(t, d.Close())
		require.NotNil(t, crashed, "op %d", i)
		check(t, crashed, fmt.Sprintf("crash before op %d", i))

		// Operation i fails: Checkpoint reports it and cleans up.
		mem = image.CrashClone()
		d, err = Open("/db", &Options{FS: errorfs.Wrap(mem, errorfs.OnIndex(i).PathContains("/ck"))})
		require.NoError(t, err)
		cerr := d.Checkpoint("/ck")
		require.NoError(t, d.Close())
		if cerr != nil {
			_, err := mem.Stat("/ck")
			require.ErrorIs(t, err, os.ErrNotExist, "failed op %d: %v", i, cerr)
		}
		check(t, mem.CrashClone(), fmt.Sprintf("failed op %d", i))
	}
}

func containsCk(path string) bool {
	for i := 0; i+3 <= len(path); i++ {
		if path[i:i+3] == "/ck" {
			return true
		}
	}
	return false
}

// TestCheckpointPrefixWithIngestAfterFlush: a Put and then an Ingest land
// between Checkpoint's flush and its version pin. The checkpoint holds the
// ingested table, so it must hold the Put made before it too: a prefix of
// the acknowledged writes. Before the fix it held the ingestion only (the
// Put was in the source's memtable, which a checkpoint does not copy).
func TestCheckpointPrefixWithIngestAfterFlush(t *testing.T) {
	fs := vfs.NewMem()
	d, err := Open("/db", &Options{FS: fs, CreateIfMissing: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	require.NoError(t, d.Put([]byte("b"), []byte("before"), nil))
	f, err := fs.Create("/ext.sst")
	require.NoError(t, err)
	w := table.NewExternalWriter(f, table.ExternalWriterOptions{})
	require.NoError(t, w.Put([]byte("z"), []byte("ingested")))
	_, err = w.Finish()
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())

	var hookErr error
	hookRan := false
	d.testing.checkpointFlushed = func() {
		d.testing.checkpointFlushed = nil
		hookRan = true
		hookErr = d.Put([]byte("a"), []byte("put"), nil)
		if hookErr == nil {
			hookErr = d.Ingest([]string{"/ext.sst"}, nil)
		}
	}
	require.NoError(t, d.Checkpoint("/ck"))
	require.True(t, hookRan, "Checkpoint did not run its after-flush hook")
	require.NoError(t, hookErr)

	c, err := Open("/ck", &Options{FS: fs})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	v, err := c.Get([]byte("b"), nil)
	require.NoError(t, err)
	require.Equal(t, "before", string(v))
	if _, err := c.Get([]byte("z"), nil); err == nil {
		v, err := c.Get([]byte("a"), nil)
		require.NoError(t, err, "the checkpoint holds the ingestion but not the Put before it")
		require.Equal(t, "put", string(v))
	} else {
		require.ErrorIs(t, err, ErrNotFound)
	}
}
