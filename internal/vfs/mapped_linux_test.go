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
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

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

// TestMappedFile_NextWindowPreparedAhead: once the writer has filled half
// a window (and not before: a log that is barely written maps nothing
// more), the next one is reserved, mapped and (on kernels with
// MADV_POPULATE_READ) resident before the writer reaches it, and a failure
// to prepare it is the error of the write that needs it, with the bytes
// before the boundary written.
func TestMappedFile_NextWindowPreparedAhead(t *testing.T) {
	m, name := mappedOrSkip(t)
	_, err := m.Write([]byte("abc"))
	require.NoError(t, err)
	require.Nil(t, m.next, "nothing is prepared for a log written this little")
	_, err = m.Write(make([]byte, mapWindow/2-3))
	require.NoError(t, err)
	require.NotNil(t, m.next)
	p := <-m.next
	require.NoError(t, p.err)
	require.Len(t, p.win, mapWindow)
	fi, err := os.Stat(name)
	require.NoError(t, err)
	require.GreaterOrEqual(t, fi.Size(), int64(2*mapWindow), "the next window is reserved")
	vec := make([]byte, mapWindow/os.Getpagesize())
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&p.win[0])), uintptr(len(p.win)), uintptr(unsafe.Pointer(&vec[0])))
	require.Zero(t, errno)
	resident := 0
	for _, v := range vec {
		resident += int(v & 1)
	}
	if unix.Madvise(p.win, unix.MADV_POPULATE_READ) == nil {
		require.Equal(t, len(vec), resident, "populated pages are resident")
	}

	// The prepared window failed: the write crossing into it fails, after
	// writing what fits before the boundary, and so does every later one.
	require.NoError(t, unix.Munmap(p.win))
	failed := errors.New("prepare failed")
	ch := make(chan preparedWindow, 1)
	ch <- preparedWindow{err: failed}
	m.next = ch
	n, err := m.Write(make([]byte, mapWindow))
	require.ErrorIs(t, err, failed)
	require.Equal(t, mapWindow/2, n)
	_, err = m.Write([]byte("x"))
	require.ErrorIs(t, err, failed)
	require.NoError(t, m.Close())
	fi, err = os.Stat(name)
	require.NoError(t, err)
	require.Equal(t, int64(mapWindow), fi.Size())
}

// TestMappedFile_FailedUnmapIsKeptForClose: when the retired window cannot
// be unmapped, the write that needs the next window fails with that error,
// and the window is kept for Close to try again (and report) rather than
// dropped and leaked.
func TestMappedFile_FailedUnmapIsKeptForClose(t *testing.T) {
	m, _ := mappedOrSkip(t)
	// An odd address: munmap refuses it (EINVAL) whatever it points into.
	buf := make([]byte, 16)
	bad := buf[1:2]
	m.retired = bad
	_, err := m.Write(make([]byte, mapWindow/2))
	require.NoError(t, err)
	_, err = m.Write(make([]byte, mapWindow))
	require.ErrorIs(t, err, unix.EINVAL)
	require.Equal(t, &bad[0], &m.retired[0], "the window that failed to unmap is kept")
	err = m.Close()
	require.ErrorIs(t, err, unix.EINVAL, "Close tries it again")
}

// TestMappedFile_SyncSeesWindowFailure: the DB syncs its WAL outside the
// lock its writers hold, so Sync runs while a write fails to move to the
// next window (a prepared window that could not be reserved, as with a
// lowered RLIMIT_FSIZE). Sync returns that failure, and the two share the
// file's error without a data race (run with -race).
func TestMappedFile_SyncSeesWindowFailure(t *testing.T) {
	m, _ := mappedOrSkip(t)
	_, err := m.Write(make([]byte, mapWindow/2))
	require.NoError(t, err)
	require.NotNil(t, m.next)
	p := <-m.next
	require.NoError(t, p.err)
	require.NoError(t, unix.Munmap(p.win))
	failed := errors.New("prepare failed")
	ch := make(chan preparedWindow, 1)
	ch <- preparedWindow{err: failed}
	m.next = ch

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
	_, err = m.Write(make([]byte, mapWindow))
	require.ErrorIs(t, err, failed)
	require.ErrorIs(t, <-synced, failed)
	require.ErrorIs(t, m.Sync(), failed)
	require.NoError(t, m.Close())
}
