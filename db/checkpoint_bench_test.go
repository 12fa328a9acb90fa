package db

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkCheckpoint times Checkpoint of an on-disk database of N tables
// (64 KiB memtables, no compactions), each checkpoint into a new directory:
// the cost is a flush of an empty memtable, one hard link per table, and
// the MANIFEST, OPTIONS and CURRENT writes and syncs.
func BenchmarkCheckpoint(b *testing.B) {
	for _, tables := range []int{10, 100} {
		b.Run(fmt.Sprintf("tables=%d", tables), func(b *testing.B) {
			dir := b.TempDir()
			d, err := Open(dir, &Options{CreateIfMissing: true, DisableAutoCompactions: true})
			require.NoError(b, err)
			val := make([]byte, 1000)
			for i := 0; i < tables; i++ {
				for j := 0; j < 64; j++ {
					require.NoError(b, d.Put([]byte(fmt.Sprintf("k%05d-%03d", i, j)), val, nil))
				}
				require.NoError(b, d.Flush())
			}
			out := b.TempDir()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				require.NoError(b, d.Checkpoint(filepath.Join(out, fmt.Sprint(i))))
			}
			b.StopTimer()
			require.NoError(b, d.Close())
		})
	}
}
