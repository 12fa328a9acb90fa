//go:build linux && (amd64 || arm64)

package vfs

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/record"
	"github.com/stretchr/testify/require"
)

// flushCapture is a record.FramedWriter that keeps each flush.
type flushCapture struct {
	flushes []capturedFlush
}

type capturedFlush struct {
	p    []byte
	hdrs []int
}

func (c *flushCapture) Write(p []byte) (int, error) { panic("WriteFramed expected") }

func (c *flushCapture) WriteFramed(p []byte, hdrs []int) (int, error) {
	c.flushes = append(c.flushes, capturedFlush{append([]byte(nil), p...), append([]int(nil), hdrs...)})
	return len(p), nil
}

// TestMappedFile_KilledMidFlushLeavesACleanOrTornEnd: for every point at
// which a process could be killed while a flush is copied into the mapping
// (each copy and header store of writeFramed, and each page of the
// pwrite of a large flush), the log holds every record
// of the earlier flushes and then ends cleanly or in a torn tail, which
// recovery drops; never a fragment that fails its checksum, which the
// default recovery mode refuses. The flushes cross a block and the mapped
// window's boundary. (TestCrashRecovery once found such a fragment after a
// SIGKILL when Write copied a flush front to back.)
func TestMappedFile_KilledMidFlushLeavesACleanOrTornEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	payload := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32()) | 1 // no zero bytes, like most batches
		}
		return b
	}
	// Records: enough to come close to the end of the first window, then
	// a flush of one record spanning blocks and the window boundary, then
	// a flush of several small ones.
	var c flushCapture
	w := record.NewWriter(&c, 1)
	var recs [][]byte
	var flushOf []int // flush index of each record
	add := func(p []byte) {
		_, err := w.WriteRecord(p)
		require.NoError(t, err)
		recs = append(recs, p)
		flushOf = append(flushOf, len(c.flushes))
	}
	for w.Size() < mapWindow-30000 {
		add(payload(1000 + rng.IntN(20000)))
		require.NoError(t, w.Flush())
	}
	add(payload(70000))
	require.NoError(t, w.Flush())
	for i := 0; i < 5; i++ {
		add(payload(10 + rng.IntN(200)))
	}
	require.NoError(t, w.Flush())
	require.Greater(t, w.Size(), int64(mapWindow), "the flushes must cross the window")
	// The large flush goes in by pwrite, the small one by copying.
	require.GreaterOrEqual(t, len(c.flushes[len(c.flushes)-2].p), pwriteMin)
	require.Less(t, len(c.flushes[len(c.flushes)-1].p), pwriteMin)

	killEveryStep(t, c.flushes, recs, flushOf, len(c.flushes)-2)
}

// TestMappedFile_KilledMidFlushHeaderAcrossPages: a flush written by
// pwrite whose first header crosses a page boundary (the kernel may stop a
// write between the two pages) leaves a clean or torn end wherever the
// process is killed.
func TestMappedFile_KilledMidFlushHeaderAcrossPages(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var c flushCapture
	w := record.NewWriter(&c, 1)
	var recs [][]byte
	var flushOf []int
	for _, n := range []int{2*4096 - 3 - record.HeaderSize, 20000, 13000} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32()) | 1
		}
		_, err := w.WriteRecord(p)
		require.NoError(t, err)
		recs = append(recs, p)
		flushOf = append(flushOf, len(c.flushes))
		require.NoError(t, w.Flush())
	}
	// The second flush's header starts 3 bytes before a page's end.
	require.Equal(t, 2*4096-3, len(c.flushes[0].p))
	require.GreaterOrEqual(t, len(c.flushes[1].p), pwriteMin)
	killEveryStep(t, c.flushes, recs, flushOf, 1)
}

// killEveryStep writes flushes[:fl] to a new mapped log, then flush fl
// stopped after each step in turn, for each fl from from on, and checks
// that the image a kill there leaves reads back as every record of the
// earlier flushes and then a clean or torn end.
func killEveryStep(t *testing.T, flushes []capturedFlush, recs [][]byte, flushOf []int, from int) {
	dir := t.TempDir()
	for fl := from; fl < len(flushes); fl++ {
		for steps := 0; ; steps++ {
			name := filepath.Join(dir, "000001.log")
			f, err := Default.(MappedCreator).CreateMapped(name)
			require.NoError(t, err)
			m, ok := f.(*mappedFile)
			if !ok {
				require.NoError(t, f.Close())
				t.Skip("the temporary directory's file system has no fallocate")
			}
			for _, e := range flushes[:fl] {
				_, err := m.WriteFramed(e.p, e.hdrs)
				require.NoError(t, err)
			}
			before := bytes.Clone(flushes[fl].p)
			n, err := m.writeFramed(flushes[fl].p, flushes[fl].hdrs, steps)
			require.NoError(t, err)
			require.True(t, bytes.Equal(before, flushes[fl].p), "the flush's buffer is given back as it came")
			done := n == len(flushes[fl].p)
			// The image a kill leaves: the mapped bytes, reserved zeroes
			// included (no Close, which would trim them).
			img, err := os.ReadFile(name)
			require.NoError(t, err)
			require.NoError(t, m.Close())

			r := record.NewReader(bytes.NewReader(img), 1, name)
			got := 0
			for {
				rec, err := r.Next()
				if err == io.EOF || errors.Is(err, record.ErrTornTail) {
					break
				}
				require.NoError(t, err, "flush %d, killed after %d steps: record %d", fl, steps, got)
				require.True(t, bytes.Equal(recs[got], rec), "flush %d, %d steps: record %d differs", fl, steps, got)
				got++
			}
			// Every record of the earlier flushes is there.
			want := 0
			for want < len(recs) && flushOf[want] < fl {
				want++
			}
			require.GreaterOrEqual(t, got, want, "flush %d, %d steps", fl, steps)
			if done {
				require.Equal(t, len(recs)-countAfter(flushOf, fl), got)
				break
			}
		}
	}
}

// countAfter is the number of records flushed after flush fl.
func countAfter(flushOf []int, fl int) int {
	n := 0
	for _, f := range flushOf {
		if f > fl {
			n++
		}
	}
	return n
}

// TestMappedFile_WriteFramedDoesNotAllocate: a flush allocates nothing once
// the file is warm, copied (small) or written by pwrite (large, several
// headers).
func TestMappedFile_WriteFramedDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	for _, n := range []int{100, 16 << 10, 70000} {
		m, _ := mappedOrSkip(t)
		var c flushCapture
		w := record.NewWriter(&c, 1)
		_, err := w.WriteRecord(make([]byte, n))
		require.NoError(t, err)
		require.NoError(t, w.Flush())
		f := c.flushes[0]
		for i := 0; i < 10; i++ {
			_, err := m.WriteFramed(f.p, f.hdrs) // warm: the helper starts, hdrSave grows
			require.NoError(t, err)
		}
		allocs := testing.AllocsPerRun(50, func() {
			if _, err := m.WriteFramed(f.p, f.hdrs); err != nil {
				panic(err)
			}
		})
		require.Zero(t, allocs, "%d-byte record", n)
		require.NoError(t, m.Close())
	}
}
