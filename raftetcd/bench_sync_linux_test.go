//go:build linux

package raftetcd

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// BenchmarkSyncFloor is what a synced Ready costs any store that writes
// its log to a file: n bytes written after what was last written to a
// file that already holds written blocks there (a WAL written over a
// recycled file, as Strata's and Pebble's are in BenchmarkAppend), then
// made durable, with nothing else. n is about a 1-, 16- and 256-entry
// Ready's WAL record in BenchmarkAppend. "write+fdatasync" is the two
// system calls Strata's WAL makes per synced write (and Pebble's);
// "pwritev2-dsync" is one pwritev2 with RWF_DSYNC, the write and its sync
// in one call.
func BenchmarkSyncFloor(b *testing.B) {
	const fileSize = 64 << 20
	for _, n := range []int{200, 2705, 43000} {
		for _, mode := range []string{"write+fdatasync", "pwritev2-dsync"} {
			b.Run(fmt.Sprintf("bytes=%d/%s", n, mode), func(b *testing.B) {
				f, err := os.Create(filepath.Join(b.TempDir(), "log"))
				require.NoError(b, err)
				defer f.Close()
				chunk := make([]byte, 1<<20)
				for off := 0; off < fileSize; off += len(chunk) {
					_, err := f.Write(chunk)
					require.NoError(b, err)
				}
				require.NoError(b, unix.Fdatasync(int(f.Fd())))
				fd := int(f.Fd())
				rec := make([]byte, n)
				for i := range rec {
					rec[i] = byte(i)
				}
				iov := [][]byte{rec}
				b.SetBytes(int64(n))
				b.ResetTimer()
				off := int64(0)
				for i := 0; i < b.N; i++ {
					if off+int64(n) > fileSize {
						off = 0
					}
					switch mode {
					case "write+fdatasync":
						if _, err := unix.Pwrite(fd, rec, off); err != nil {
							b.Fatal(err)
						}
						if err := unix.Fdatasync(fd); err != nil {
							b.Fatal(err)
						}
					default:
						if _, err := unix.Pwritev2(fd, iov, off, unix.RWF_DSYNC); err != nil {
							b.Fatal(err)
						}
					}
					off += int64(n)
				}
			})
		}
	}
}
