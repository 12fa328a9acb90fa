package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var memoryLine = regexp.MustCompile(`^strata\.memory: peak_rss=(\d+\.\d) MB heap_inuse=(\d+\.\d) MB heap_sys=(\d+\.\d) MB go_sys=(\d+\.\d) MB gc=\d+$`)

// The memory line comes last, on a line of its own, after the result lines
// and the statistics.
func TestBench_MemoryLineLastFake(t *testing.T) {
	useFake(t)
	for _, args := range [][]string{
		{"-benchmarks=fillseq,readrandom", "-num=200"},
		{"-benchmarks=fillseq", "-num=200", "-statistics"},
	} {
		out := runBench(t, args...)
		require.True(t, strings.HasSuffix(out, "\n"), out)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		last := lines[len(lines)-1]
		if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
			t.Skip("peak RSS is reported on Linux and macOS")
		}
		m := memoryLine.FindStringSubmatch(last)
		require.NotNil(t, m, "last line %q of\n%s", last, out)
		require.Equal(t, 1, strings.Count(out, "strata.memory:"), out)
		rss, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		inuse, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		// Heap in use need not be resident (untouched spans), so the two
		// are not ordered; both are reported.
		require.Greater(t, rss, 0.0)
		require.Greater(t, inuse, 0.0)
		found := false
		for _, l := range lines {
			found = found || resultLine.MatchString(l)
		}
		require.True(t, found, out)
	}
}

// Peak RSS is in bytes, not KiB: a process that touched 64 MiB reports at
// least that.
func TestPeakRSSUnits(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("peak RSS is reported on Linux and macOS")
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		if i%4096 == 0 {
			buf[i] = 1
		}
	}
	require.GreaterOrEqual(t, peakRSS(), int64(len(buf)))
	runtime.KeepAlive(buf)
	var w bytes.Buffer
	memoryReport{peakRSS: 3 << 20, heapInuse: 1 << 20, heapSys: 2 << 20, goSys: 5 << 19, numGC: 7}.print(&w)
	require.Equal(t, "strata.memory: peak_rss=3.0 MB heap_inuse=1.0 MB heap_sys=2.0 MB go_sys=2.5 MB gc=7\n", w.String())
	w.Reset()
	memoryReport{peakRSS: -1}.print(&w)
	require.True(t, strings.HasPrefix(w.String(), "strata.memory: peak_rss=n/a heap_inuse=0.0 MB"), w.String())
}

func TestBench_MemProfileFake(t *testing.T) {
	useFake(t)
	p := filepath.Join(t.TempDir(), "heap.pprof")
	runBench(t, "-benchmarks=fillseq", "-num=100", "-memprofile="+p)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NotEmpty(t, b)
}

// TestBench_TraceAndMutexProfileFake: -trace writes an execution trace and
// -mutexprofile a pprof profile (gzip-compressed protobuf).
func TestBench_TraceAndMutexProfileFake(t *testing.T) {
	useFake(t)
	dir := t.TempDir()
	tr, mp := filepath.Join(dir, "run.trace"), filepath.Join(dir, "mutex.pprof")
	runBench(t, "-benchmarks=fillseq", "-num=100", "-trace="+tr, "-mutexprofile="+mp)
	b, err := os.ReadFile(tr)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte("go 1.")), "not an execution trace: %q", b[:min(len(b), 16)])
	b, err = os.ReadFile(mp)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte{0x1f, 0x8b}), "not a pprof profile")
}
