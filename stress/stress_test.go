package stress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// childEnv holds the JSON Config of a crash-test child: the test binary
// re-executed runs that stress run instead of the tests.
const childEnv = "STRATA_STRESS_CHILD"

func TestMain(m *testing.M) {
	if js := os.Getenv(bankChildEnv); js != "" {
		var c BankConfig
		if err := json.Unmarshal([]byte(js), &c); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		c.Log = os.Stderr
		if err := RunBank(c, new(BankStats)); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if js := os.Getenv(childEnv); js != "" {
		var c Config
		if err := json.Unmarshal([]byte(js), &c); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		c.Log = os.Stderr
		if err := NewRunner(c).Run(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// scale is how much longer the runs are with STRATA_LONG set.
func scale() int {
	if testutil.Long() {
		return 20
	}
	return 1
}

func TestValueRoundTrip(t *testing.T) {
	for _, mult := range []int{1, 3} {
		for i := 0; i < 50; i++ {
			for v := uint32(1); v < 40; v++ {
				got, err := DecodeValue(i, Value(i, v, mult), mult)
				require.NoError(t, err)
				require.Equal(t, v, got)
			}
		}
	}
	b := Value(7, 3, 1)
	_, err := DecodeValue(8, b, 1)
	require.Error(t, err, "a value of another key")
	b[len(b)-1] ^= 1
	_, err = DecodeValue(7, b, 1)
	require.Error(t, err, "a damaged value")
	k, err := KeyIndex(Key(1234))
	require.NoError(t, err)
	require.Equal(t, 1234, k)
}

// TestCheckRead pins the oracle's rules for reads that race with writes.
func TestCheckRead(t *testing.T) {
	val := func(v uint32) []byte { return Value(5, v, 1) }
	never := KeyState{}
	put3 := KeyState{Lo: 3, Hi: 3, LastDel: 1, Next: 3}
	del4 := KeyState{Lo: 4, Hi: 4, LastDel: 4, Next: 4}
	pending5 := KeyState{Lo: 3, Hi: 3, LastDel: 1, Pending: 4, Next: 4}
	pendingDel := KeyState{Lo: 3, Hi: 3, LastDel: 4, Pending: 4, Next: 4}
	failed := KeyState{Lo: 3, Hi: 4, LastDel: 4, Next: 4}
	for _, c := range []struct {
		name      string
		pre, post KeyState
		found     bool
		v         uint32
		ok        bool
	}{
		{"never written, absent", never, never, false, 0, true},
		{"exact value", put3, put3, true, 3, true},
		{"older value", put3, put3, true, 2, false},
		{"newer value not written", put3, put3, true, 4, false},
		{"lost put", put3, put3, false, 0, false},
		{"delete holds", del4, del4, false, 0, true},
		{"deleted value back", del4, del4, true, 3, false},
		{"racing put: old", put3, pending5, true, 3, true},
		{"racing put: new", put3, pending5, true, 4, true},
		{"racing put: absent", put3, pending5, false, 0, false},
		{"racing delete: absent", put3, pendingDel, false, 0, true},
		{"failed delete: either", failed, failed, false, 0, true},
		{"failed delete: old", failed, failed, true, 3, true},
	} {
		var b []byte
		if c.found {
			b = val(c.v)
		}
		err := CheckRead(5, c.pre, c.post, c.found, b, 1)
		if c.ok {
			require.NoError(t, err, c.name)
		} else {
			require.Error(t, err, c.name)
		}
	}
}

func memConfig(t *testing.T) Config {
	seed := testutil.Seed(t)
	return Config{Seed: seed, Threads: 4, OpsPerThread: 1500 * scale(), MaxKey: 500, Dir: "/db", FS: vfs.NewMem(),
		WriteBufferSize: 32 << 10, BloomBits: 10, PrefixSize: 7, Reopen: 1500,
		FlushOneIn: 300, CompactRangeOneIn: 500, SnapshotOneIn: 50, SetOptionsOneIn: 200, SwapExtractorOneIn: 100}
}

func runStress(t *testing.T, c Config) *Runner {
	t.Helper()
	var log strings.Builder
	c.Log = &log
	r := NewRunner(c)
	err := r.Run()
	t.Logf("seed %d: %s", c.Seed, &r.Stats)
	require.NoError(t, err, "seed %d\n%s", c.Seed, log.String())
	return r
}

// TestStressExtractorSwaps is the short stress run: every operation, with
// the prefix extractor changed by SetOptions and by reopen.
func TestStressExtractorSwaps(t *testing.T) {
	c := memConfig(t)
	r := runStress(t, c)
	require.Positive(t, r.Stats.Swaps.Load())
	require.Positive(t, r.Stats.Iters.Load())
}

// TestStressBinaryKeys is the short stress run with keys shaped as
// db_bench's (big-endian behind zero bytes), whose memtable searches are
// decided by the summaries in the skiplist's link words rather than by the
// keys.
func TestStressBinaryKeys(t *testing.T) {
	require.NoError(t, SetKeyShape("binary"))
	defer func() { require.NoError(t, SetKeyShape("decimal")) }()
	c := memConfig(t)
	r := runStress(t, c)
	require.Positive(t, r.Stats.Swaps.Load())
	require.Positive(t, r.Stats.Iters.Load())
}

func TestStressFIFOZstd(t *testing.T) {
	c := memConfig(t)
	c.FIFO, c.Compression, c.OpsPerThread = true, db.ZstdCompression, 800*scale()
	runStress(t, c)
}

// TestStressPartitioned runs the short stress with partitioned indexes and
// filters read through the block cache, the prefix extractor swapped as it
// runs: prefix probes of partitioned filters must never hide a key.
func TestStressPartitioned(t *testing.T) {
	c := memConfig(t)
	c.PartitionIndexAndFilters, c.CacheIndexAndFilterBlocks, c.OpsPerThread = true, true, 800*scale()
	r := runStress(t, c)
	require.Positive(t, r.Stats.Swaps.Load())
}

// TestStressPartitionedSmallCache is TestStressPartitioned through a block
// cache small enough that index and filter partitions overflow the
// high-priority pool and data blocks evict them.
func TestStressPartitionedSmallCache(t *testing.T) {
	c := memConfig(t)
	c.PartitionIndexAndFilters, c.CacheIndexAndFilterBlocks, c.OpsPerThread = true, true, 800*scale()
	c.BlockCacheSize, c.HighPriPoolRatio = 32<<10, 0.3
	runStress(t, c)
}

// TestStressCatchesWrongAnswers checks that the oracle can fail: a key
// changed behind its back is reported with the key.
func TestStressCatchesWrongAnswers(t *testing.T) {
	dir := t.TempDir()
	c := Config{Seed: testutil.Seed(t), Threads: 2, OpsPerThread: 300, MaxKey: 50, Dir: filepath.Join(dir, "db"),
		ExpectedLog: filepath.Join(dir, "expected"), WritePercent: 100}
	runStress(t, c)
	d, err := db.Open(c.Dir, &db.Options{MergeOperator: ConcatMergeOperator{}})
	require.NoError(t, err)
	// A lost write, or a write from nowhere when the run left the key
	// deleted: deleting an absent key would change nothing to catch.
	if _, err := d.Get(Key(7), nil); err == nil {
		require.NoError(t, d.Delete(Key(7), nil))
	} else {
		require.ErrorIs(t, err, db.ErrNotFound)
		require.NoError(t, d.Put(Key(7), []byte("not a value the oracle wrote"), nil))
	}
	require.NoError(t, d.Close())
	c.OpsPerThread = 0
	err = NewRunner(c).Run()
	require.True(t, errors.Is(err, ErrWrongAnswer), "%v", err)
	require.Contains(t, err.Error(), string(Key(7)))
}

// TestPowerLoss takes crash images of the in-memory FS during a run with
// Sync writes and verifies each.
func TestPowerLoss(t *testing.T) {
	c := memConfig(t)
	c.OpsPerThread, c.CrashImageOneIn = 600*scale(), 150
	r := runStress(t, c)
	require.Positive(t, r.Stats.Images.Load())
}

// TestFaultInjection runs on errorfs failing random reads, writes, syncs,
// renames and removes: no wrong answer, no panic, and after the run every
// acknowledged write is there on the healthy FS.
func TestFaultInjection(t *testing.T) {
	c := memConfig(t)
	c.FaultOneIn, c.OpsPerThread = 100, 1000*scale()
	r := runStress(t, c)
	require.Positive(t, r.Stats.Errors.Load(), "no fault reached the caller")
}

// TestCrash kills a stress child (this test binary re-executed) with
// SIGKILL a few times, Sync on and off, and with DisableWAL (structural
// checks only); each next child verifies the
// database against the expected-state log before writing.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, mode := range []struct{ sync, disableWAL bool }{{false, false}, {true, false}, {false, true}} {
		sync := mode.sync
		t.Run(fmt.Sprintf("sync=%v,disable_wal=%v", sync, mode.disableWAL), func(t *testing.T) {
			dir := t.TempDir()
			seed := testutil.Seed(t)
			c := Config{Seed: seed, Threads: 4, MaxKey: 300, Dir: filepath.Join(dir, "db"),
				ExpectedLog: filepath.Join(dir, "expected"), WriteBufferSize: 16 << 10, Sync: sync, DisableWAL: mode.disableWAL,
				FlushOneIn: 200, CompactRangeOneIn: 400, SnapshotOneIn: 50, SwapExtractorOneIn: 200, PrefixSize: 6}
			runCrashTest(t, c, 4*scale())
		})
	}
}

// runCrashTest runs cycles kill cycles of children running c (this test
// binary re-executed), each with its own seed, and a last verifying child.
func runCrashTest(t *testing.T, c Config, cycles int) CrashStats {
	t.Helper()
	seed := c.Seed
	var log strings.Builder
	st, err := RunCrash(CrashConfig{Seed: seed, Cycles: cycles, MaxWait: 400 * time.Millisecond, Log: &log,
		Child: func(i int, verifyOnly bool) *exec.Cmd {
			cc := c
			cc.Seed = seed + int64(i)
			if verifyOnly {
				cc.OpsPerThread, cc.Duration = 0, 0
			} else {
				cc.Duration = time.Hour
			}
			js, _ := json.Marshal(cc)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+string(js))
			return cmd
		}})
	require.NoError(t, err, "%s", log.String())
	t.Logf("seed %d: %+v", seed, st)
	require.Positive(t, st.Kills+st.KillPoints)
	return st
}

// TestBinaryKeys checks that binary keys decode, sort as their indexes do,
// and are refused in the decimal shape and the other way around.
func TestBinaryKeys(t *testing.T) {
	require.NoError(t, SetKeyShape("binary"))
	defer func() { require.NoError(t, SetKeyShape("decimal")) }()
	var prev []byte
	for _, i := range []int{0, 1, 2, 6, 7, 255, 256, 999, 1000, 65535, 1 << 20, MaxBinaryKeys - 1} {
		k := Key(i)
		require.Len(t, k, KeyLen)
		n, err := KeyIndex(k)
		require.NoError(t, err)
		require.Equal(t, i, n)
		require.Negative(t, bytes.Compare(prev, k), "key %d", i)
		prev = k
	}
	_, err := KeyIndex([]byte("00000123"))
	require.Error(t, err)
	require.Error(t, SetKeyShape("hex"))
	require.NoError(t, SetKeyShape("decimal"))
	_, err = KeyIndex(prev)
	require.Error(t, err)
}

// TestStressBlobFiles runs the short stress with blob files (a small
// min_blob_size, so most values go there), garbage collection, and
// SetOptions toggling both; then power-loss images and injected faults
// with them.
func TestStressBlobFiles(t *testing.T) {
	c := memConfig(t)
	c.BlobFiles, c.MinBlobSize, c.OpsPerThread, c.SetOptionsOneIn = true, 16, 800*scale(), 50
	runStress(t, c)

	c = memConfig(t)
	c.BlobFiles, c.MinBlobSize = true, 16
	c.OpsPerThread, c.CrashImageOneIn = 600*scale(), 150
	r := runStress(t, c)
	require.Positive(t, r.Stats.Images.Load())

	c = memConfig(t)
	c.BlobFiles, c.MinBlobSize = true, 16
	c.FaultOneIn, c.OpsPerThread = 100, 1000*scale()
	r = runStress(t, c)
	require.Positive(t, r.Stats.Errors.Load(), "no fault reached the caller")
}
