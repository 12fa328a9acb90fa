//go:build linux && (amd64 || arm64)

package vfs

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// mapWindow is the span the tests map: spanSize lowered (TestMain), so
// that the tests cross spans cheaply.
const mapWindow = 1 << 20

func TestMain(m *testing.M) {
	spanSize = mapWindow
	os.Exit(m.Run())
}

// mappedOrSkip creates a mapped file in a temporary directory, skipping the
// test where the file system there cannot map (no fallocate).
func mappedOrSkip(t *testing.T) (*mappedFile, string) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "000001.log")
	f, err := Default.(MappedCreator).CreateMapped(name)
	require.NoError(t, err)
	m, ok := f.(*mappedFile)
	if !ok {
		require.NoError(t, f.Close())
		t.Skip("the temporary directory's file system has no fallocate")
	}
	return m, name
}

func TestMappedFile_WritesAcrossWindows(t *testing.T) {
	m, name := mappedOrSkip(t)
	rng := rand.New(rand.NewPCG(1, 2))
	var want []byte
	// Writes of every size up to several windows, so that writes end
	// exactly on, just before and just after window boundaries.
	for len(want) < 3*mapWindow+12345 {
		n := rng.IntN(9000)
		if rng.IntN(50) == 0 {
			n = mapWindow + rng.IntN(mapWindow)
		}
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		got, err := m.Write(p)
		require.NoError(t, err)
		require.Equal(t, n, got)
		want = append(want, p...)

		fi, err := m.Stat()
		require.NoError(t, err)
		require.Equal(t, int64(len(want)), fi.Size())
	}
	// The reservation runs ahead of the data: the file is longer than
	// what was written until Close trims it.
	onDisk, err := os.Stat(name)
	require.NoError(t, err)
	require.Greater(t, onDisk.Size(), int64(len(want)))

	// ReadAt and Read see the written bytes only.
	buf := make([]byte, 100)
	n, err := m.ReadAt(buf, int64(len(want))-40)
	require.Equal(t, 40, n)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, want[len(want)-40:], buf[:40])
	all, err := io.ReadAll(m)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, all))

	require.NoError(t, m.Sync())
	require.NoError(t, m.Close())
	got, err := os.ReadFile(name)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "file after Close differs (len %d, want %d)", len(got), len(want))

	_, err = m.Write([]byte("x"))
	require.Error(t, err, "Write after Close")
}

func TestMappedFile_EmptyCloseLeavesEmptyFile(t *testing.T) {
	m, name := mappedOrSkip(t)
	require.NoError(t, m.Close())
	fi, err := os.Stat(name)
	require.NoError(t, err)
	require.Zero(t, fi.Size())
}

// TestMappedFile_SurvivesSIGKILL: bytes copied into the mapping are in the
// page cache when Write returns; killing the process loses none of them. The
// file keeps its reserved zero tail, as a crashed WAL does.
func TestMappedFile_SurvivesSIGKILL(t *testing.T) {
	if dir := os.Getenv("STRATA_MAPPED_CHILD"); dir != "" {
		mappedChild(dir)
		return
	}
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("needs /proc")
	}
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe")
	f, err := Default.(MappedCreator).CreateMapped(probe)
	require.NoError(t, err)
	_, mapped := f.(*mappedFile)
	require.NoError(t, f.Close())
	if !mapped {
		t.Skip("the temporary directory's file system has no fallocate")
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestMappedFile_SurvivesSIGKILL$")
	cmd.Env = append(os.Environ(), "STRATA_MAPPED_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	// The child prints the number of bytes it has written, then waits to
	// be killed.
	line := make([]byte, 32)
	n, err := out.Read(line)
	require.NoError(t, err)
	written, err := strconv.Atoi(string(bytes.TrimSpace(line[:n])))
	require.NoError(t, err)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	got, err := os.ReadFile(filepath.Join(dir, "000001.log"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(got), written)
	for i := 0; i < written; i++ {
		if got[i] != byte(i*7) {
			require.Failf(t, "lost byte", "offset %d: %d, want %d", i, got[i], byte(i*7))
		}
	}
	require.True(t, bytes.Count(got[written:], []byte{0}) == len(got)-written, "the reserved tail is zeroes")
}

func mappedChild(dir string) {
	f, err := Default.(MappedCreator).CreateMapped(filepath.Join(dir, "000001.log"))
	if err != nil {
		os.Exit(2)
	}
	p := make([]byte, mapWindow+mapWindow/3)
	for i := range p {
		p[i] = byte(i * 7)
	}
	if _, err := f.Write(p); err != nil {
		os.Exit(3)
	}
	os.Stdout.WriteString(strconv.Itoa(len(p)) + "\n")
	time.Sleep(time.Hour)
}

// TestMappedFile_HelperWorksAheadAndBehind: a log never written starts no
// helper; once written, the helper keeps the space ahead of the
// write position reserved and its first pages resident (on kernels with
// MADV_POPULATE_READ), and hands back the pages behind, across spans, with
// every byte kept.
func TestMappedFile_HelperWorksAheadAndBehind(t *testing.T) {
	// A span of many steps, so that the pages behind are still mapped
	// unless the helper drops them.
	spanSize = 16 * mapStep
	m, name := mappedOrSkip(t)
	spanSize = mapWindow
	var want []byte
	write := func(n int) {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(len(want)+i) | 1
		}
		_, err := writeCopied(m, p)
		require.NoError(t, err)
		want = append(want, p...)
	}
	require.Nil(t, m.kick, "nothing is started for a log not written")
	write(3)
	require.NotNil(t, m.kick)
	write(10*mapStep + mapStep/2)
	require.NotNil(t, m.kick)
	pos := m.size
	require.Eventually(t, func() bool {
		return m.reserved.Load() >= pos-pos%mapStep+reserveAhead
	}, 10*time.Second, time.Millisecond, "the helper reserves ahead")
	fi, err := os.Stat(name)
	require.NoError(t, err)
	require.GreaterOrEqual(t, fi.Size(), pos-pos%mapStep+reserveAhead)

	// The pages behind the write position leave the process's RSS: the
	// helper drops them from the mapping, which /proc/self/smaps shows as
	// the span's Rss.
	require.Eventually(t, func() bool {
		return spanRss(t, m.win) <= int64(populateAhead+2*mapStep)
	}, 10*time.Second, time.Millisecond, "the pages behind the writer are dropped")

	write(10 * mapStep) // into the next span
	require.Equal(t, int64(16*mapStep), m.winOff)
	require.NoError(t, m.Close())
	got, err := os.ReadFile(name)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "file after Close differs (len %d, want %d)", len(got), len(want))
}

// TestMappedFile_HelperStartsWritebackOfWhatItDropped: the helper starts
// the writeback of the steps behind the writer, contiguously from the
// file's start, and only of pages it has handed back (never of a page still
// mapped, whose cleaning would write-protect it under the writer). Planted:
// writeback up to the write position's step instead of what was dropped
// fails the last check.
func TestMappedFile_HelperStartsWritebackOfWhatItDropped(t *testing.T) {
	spanSize = 16 * mapStep
	m, _ := mappedOrSkip(t)
	spanSize = mapWindow
	var mu sync.Mutex
	var end int64
	contiguous := true
	m.syncFileRange = func(fd int, off, n int64, flags int) error {
		mu.Lock()
		defer mu.Unlock()
		if off != end || n <= 0 || flags != unix.SYNC_FILE_RANGE_WRITE {
			contiguous = false
		}
		end = off + n
		return unix.SyncFileRange(fd, off, n, flags)
	}
	_, err := writeCopied(m, make([]byte, 10*mapStep+mapStep/2))
	require.NoError(t, err)
	pos := m.size
	dropped := pos - pos%mapStep - mapStep
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return end >= dropped
	}, 10*time.Second, time.Millisecond, "the helper starts the writeback behind the writer")
	require.NoError(t, m.Close())
	mu.Lock()
	defer mu.Unlock()
	require.True(t, contiguous, "writeback ranges are contiguous from 0, WRITE only")
	require.Equal(t, dropped, end, "writeback reaches what was dropped, and no further")
}

// writeCopied writes p in writes below pwriteMin, which are copied into the
// mapping (larger ones go in by pwrite), and returns what Write returned
// in all, stopping at the first error.
func writeCopied(m *mappedFile, p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k, err := m.Write(p[:min(len(p), pwriteMin-1)])
		n += k
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// spanRss returns the Rss of the mapping that starts at win, from
// /proc/self/smaps.
func spanRss(t *testing.T, win []byte) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	require.NoError(t, err)
	start := strconv.FormatUint(uint64(uintptr(unsafe.Pointer(&win[0]))), 16) + "-"
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if lo, _, ok := strings.Cut(f[0], "-"); ok && !strings.HasSuffix(f[0], ":") {
			if _, err := strconv.ParseUint(lo, 16, 64); err == nil {
				in = strings.HasPrefix(f[0], start)
				continue
			}
		}
		if in && f[0] == "Rss:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	require.Fail(t, "mapping not in /proc/self/smaps")
	return 0
}

// TestMappedFile_ReserveFailureFailsTheWrite: when the space a write needs
// cannot be reserved (a full disk), the write fails with that error after
// writing what fits in the space already reserved, and so does every later
// write; Close trims the file to the bytes written.
func TestMappedFile_ReserveFailureFailsTheWrite(t *testing.T) {
	m, name := mappedOrSkip(t)
	failed := errors.New("no space")
	m.reserveMu.Lock()
	m.fallocate = func(int, int64, int64) error { return failed }
	m.reserveMu.Unlock()
	n, err := writeCopied(m, make([]byte, 3*mapStep))
	require.ErrorIs(t, err, failed)
	require.Equal(t, mapStep, n, "the reserved first step is written")
	_, err = m.Write([]byte("x"))
	require.ErrorIs(t, err, failed)
	require.NoError(t, m.Close())
	fi, err := os.Stat(name)
	require.NoError(t, err)
	require.Equal(t, int64(mapStep), fi.Size())
}

// TestMappedFile_FailedUnmapIsReportedByClose: a span that could not be
// unmapped is kept, and Close tries again and reports it rather than
// dropping it.
func TestMappedFile_FailedUnmapIsReportedByClose(t *testing.T) {
	m, _ := mappedOrSkip(t)
	// An odd address: munmap refuses it (EINVAL) whatever it points into.
	buf := make([]byte, 16)
	bad := buf[1:2]
	m.mu.Lock()
	m.retired = append(m.retired, bad)
	m.mu.Unlock()
	_, err := m.Write(make([]byte, mapWindow/2))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.helperWin != nil && len(m.retired) == 1
	}, 10*time.Second, time.Millisecond)
	err = m.Close()
	require.ErrorIs(t, err, unix.EINVAL, "Close tries it again")
}

// TestMappedFile_SyncSeesWindowFailure: the DB syncs its WAL outside the
// lock its writers hold, so Sync runs while a write fails to reserve space
// (a full disk, or a lowered RLIMIT_FSIZE). Sync returns that failure, and
// the two share the file's error without a data race (run with -race).
func TestMappedFile_SyncSeesWindowFailure(t *testing.T) {
	m, _ := mappedOrSkip(t)
	failed := errors.New("reserve failed")
	m.reserveMu.Lock()
	m.fallocate = func(int, int64, int64) error { return failed }
	m.reserveMu.Unlock()

	synced := make(chan error, 1)
	go func() {
		// Sync until the writer's failure shows (or a second).
		deadline := time.Now().Add(time.Second)
		for {
			err := m.Sync()
			if err != nil || time.Now().After(deadline) {
				synced <- err
				return
			}
		}
	}()
	_, err := writeCopied(m, make([]byte, 2*mapStep))
	require.ErrorIs(t, err, failed)
	require.ErrorIs(t, <-synced, failed)
	require.ErrorIs(t, m.Sync(), failed)
	require.NoError(t, m.Close())
}

// TestMappedFile_HelperBehindTheWriterStaysInItsSpan: the helper copies the
// span it advises before it reads the write position, so it can find the
// writer past that span's end (the writer moved to the next span
// meanwhile); it must then advise nothing outside the span. Here the
// position is set past the span by hand; a helper that advised up to it
// would slice past the mapping and crash the test.
func TestMappedFile_HelperBehindTheWriterStaysInItsSpan(t *testing.T) {
	spanSize = 4 * mapStep
	m, name := mappedOrSkip(t)
	spanSize = mapWindow
	want := make([]byte, 3*mapStep)
	for i := range want {
		want[i] = byte(i%253) | 1
	}
	_, err := m.Write(want)
	require.NoError(t, err)
	m.pos.Store(m.winOff + 3*m.spanSize)
	m.kick <- struct{}{}
	require.NoError(t, m.Close())
	got, err := os.ReadFile(name)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got))
}

// TestMappedFile_PwriteFailureFailsTheFile: a large write that pwrite
// refuses fails with the system's error naming the file, and so does every
// later write, small ones (copied) included; the size does not move.
func TestMappedFile_PwriteFailureFailsTheFile(t *testing.T) {
	m, name := mappedOrSkip(t)
	_, err := m.Write(make([]byte, 100))
	require.NoError(t, err)
	// The system's refusal, as pwrite(2) gives it for a bad descriptor. The
	// descriptor itself stays: the helper goroutine reserves space with it.
	m.pwrite = func(int, []byte, int64) (int, error) { return 0, unix.EBADF }
	_, err = m.Write(make([]byte, pwriteMin))
	m.pwrite = unix.Pwrite
	require.ErrorIs(t, err, unix.EBADF)
	require.ErrorContains(t, err, name)
	_, err = m.Write([]byte("x"))
	require.ErrorIs(t, err, unix.EBADF)
	fi, err := m.Stat()
	require.NoError(t, err)
	require.Equal(t, int64(100), fi.Size())
	require.NoError(t, m.Close())
}
