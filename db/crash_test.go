package db_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stretchr/testify/require"
)

// Environment of the crash test's child process (a re-execution of this
// test binary): the directory, whether writes sync, the write buffer size.
const (
	crashChildDirEnv  = "STRATA_CRASH_CHILD_DIR"
	crashChildSyncEnv = "STRATA_CRASH_CHILD_SYNC"
	crashChildWBSEnv  = "STRATA_CRASH_CHILD_WBS"
)

// TestMain runs the crash test's child workload instead of the tests when
// the test binary is re-executed as that child.
//
// A build tagged strata_noprefixcheck (unsafe: prefix filters are used with
// no compatibility check) runs benchmarks only.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildDirEnv); dir != "" {
		flag.Parse()
		os.Exit(crashChild(dir))
	}
	if db.PrefixCheckSkipped {
		flag.Parse()
		if err := flag.Set("test.run", "^$"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}

// Keys of the crash workload. Batch n puts crashPointsPerBatch keys
// "n<n>-<j>", sets "last" to n, puts "s<n>" and deletes the range
// ["s<n-10>", "s<n-9>") (the key "s<n-10>"), and moves "d": puts "d<n>"
// and deletes "d<n-1>". After batches 0..k, exactly the point keys of
// batches 0..k, "s" keys k-9..k and "d<k>" exist.
const crashPointsPerBatch = 4

func crashKey(kind string, n int) []byte { return []byte(fmt.Sprintf("%s%08d", kind, n)) }

func crashPointKey(n, j int) []byte { return []byte(fmt.Sprintf("n%08d-%d", n, j)) }

func crashValue(n, j int) []byte {
	reps := 1 + (n+j)%12
	if j == 0 && n%4 == 0 {
		// One batch in four is over 12 KiB, which the mapped WAL
		// writes with pwrite rather than by copying.
		reps = 4000
	}
	return bytes.Repeat([]byte(fmt.Sprintf("%d.%d;", n, j)), reps)
}

// crashBatch fills b with batch n.
func crashBatch(b *db.Batch, n int) {
	b.Reset()
	for j := 0; j < crashPointsPerBatch; j++ {
		b.Put(crashPointKey(n, j), crashValue(n, j))
	}
	b.Put([]byte("last"), []byte(strconv.Itoa(n)))
	b.Put(crashKey("s", n), crashValue(n, 9))
	if n >= 10 {
		b.DeleteRange(crashKey("s", n-10), crashKey("s", n-9))
	}
	if n >= 1 {
		b.Delete(crashKey("d", n-1))
	}
	b.Put(crashKey("d", n), crashValue(n, 8))
}

// crashChild writes batches forever, from the one after "last", printing
// each batch number once Write has returned.
func crashChild(dir string) int {
	wbs, _ := strconv.Atoi(os.Getenv(crashChildWBSEnv))
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, WriteBufferSize: wbs,
		Level0SlowdownWritesTrigger: 1 << 20, Level0StopWritesTrigger: 1 << 20})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		return 2
	}
	next := 0
	if v, err := d.Get([]byte("last"), nil); err == nil {
		n, _ := strconv.Atoi(string(v))
		next = n + 1
	}
	wo := &db.WriteOptions{Sync: os.Getenv(crashChildSyncEnv) == "1"}
	b := db.NewBatch()
	for n := next; ; n++ {
		crashBatch(b, n)
		if err := d.Write(b, wo); err != nil {
			fmt.Fprintln(os.Stderr, "child: write:", err)
			return 2
		}
		if _, err := fmt.Fprintf(os.Stdout, "%d\n", n); err != nil {
			return 2
		}
	}
}

// TestCrashRecovery kills a writing child process with SIGKILL at random
// moments and checks after each kill that the database holds exactly the
// batches 0..k for some k at or past the last acknowledged one: nothing
// acknowledged is lost and no batch is partly present.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewSource(seed))
	iters := 6
	if testutil.Long() {
		iters = 40
	}
	dir := t.TempDir()
	lastAcked := -1
	for i := 0; i < iters; i++ {
		sync := i%2 == 1
		wbs := []int{8 << 10, 64 << 10, 0}[rng.Intn(3)]
		acked := runCrashChild(t, rng, dir, sync, wbs)
		if acked > lastAcked {
			lastAcked = acked
		}
		k := checkCrashState(t, dir)
		t.Logf("iteration %d: sync=%v wbs=%d: last acknowledged %d, recovered 0..%d", i, sync, wbs, lastAcked, k)
		require.GreaterOrEqual(t, k, lastAcked, "iteration %d (sync=%v wbs=%d): acknowledged batches lost", i, sync, wbs)
		lastAcked = k
	}
}

// runCrashChild starts the child, kills it after a random number of
// acknowledged batches or a random time, and returns the last batch it
// acknowledged (-1 if none).
func runCrashChild(t *testing.T, rng *rand.Rand, dir string, sync bool, wbs int) int {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildDirEnv+"="+dir, crashChildWBSEnv+"="+strconv.Itoa(wbs))
	if sync {
		cmd.Env = append(cmd.Env, crashChildSyncEnv+"=1")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var acked, lines atomic.Int64
	acked.Store(-1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			n, err := strconv.Atoi(sc.Text())
			if err == nil {
				acked.Store(int64(n))
				lines.Add(1)
			}
		}
	}()
	target := int64(1 + rng.Intn(3000))
	deadline := time.Now().Add(time.Duration(20+rng.Intn(400)) * time.Millisecond)
	for lines.Load() < target && time.Now().Before(deadline) {
		select {
		case <-done:
			cmd.Wait()
			t.Fatalf("child exited early: %s", stderr.String())
		case <-time.After(time.Millisecond):
		}
	}
	require.NoError(t, cmd.Process.Kill())
	<-done // every line written before the kill has been read
	cmd.Wait()
	require.NotContains(t, stderr.String(), "child:", "child failed")
	return int(acked.Load())
}

// checkCrashState opens dir, checks that it holds exactly batches 0..k,
// and returns k (-1 for an empty database).
func checkCrashState(t *testing.T, dir string) int {
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	k := -1
	if v, err := d.Get([]byte("last"), nil); err == nil {
		k, err = strconv.Atoi(string(v))
		require.NoError(t, err)
	} else {
		require.ErrorIs(t, err, db.ErrNotFound)
	}
	want := map[string]string{}
	if k >= 0 {
		want["last"] = strconv.Itoa(k)
		want[string(crashKey("d", k))] = string(crashValue(k, 8))
	}
	for n := 0; n <= k; n++ {
		for j := 0; j < crashPointsPerBatch; j++ {
			want[string(crashPointKey(n, j))] = string(crashValue(n, j))
		}
		if n > k-10 {
			want[string(crashKey("s", n))] = string(crashValue(n, 9))
		}
	}
	it := d.NewIterator(nil)
	got := 0
	for it.SeekToFirst(); it.Valid(); it.Next() {
		w, ok := want[string(it.Key())]
		require.True(t, ok, "key %q present but its batch is not (last=%d)", it.Key(), k)
		require.Equal(t, w, string(it.Value()), "value of %q (last=%d)", it.Key(), k)
		got++
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.Equal(t, len(want), got, "keys of batches 0..%d missing", k)
	return k
}
