package db

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratadb/strata/internal/record"
	"github.com/stretchr/testify/require"
)

// TestMappedWALLargeRecords: writes of 16 KiB values go into the mapped WAL
// by pwrite (headers after), small ones by copying, batches of several
// large values across blocks. A copy of the directory taken while the
// database is open (what a SIGKILL leaves) recovers every write in every
// recovery mode, and RocksDB's ldb dump_wal reads every record of the
// WALs.
func TestMappedWALLargeRecords(t *testing.T) {
	dir := t.TempDir()
	// The copy below is taken file by file: no flush or compaction may
	// change the directory meanwhile. So compactions are off, and flushes
	// first grow the memtable to the full write buffer (each memtable's
	// arena is twice the last one's), which the writes then fit in.
	d, err := Open(dir, &Options{CreateIfMissing: true, WriteBufferSize: 64 << 20, DisableAutoCompactions: true})
	require.NoError(t, err)
	for size := initialMemTableSize; size < 64<<20; size *= 2 {
		require.NoError(t, d.Put([]byte("warm"), []byte("up"), nil))
		require.NoError(t, d.Flush())
	}
	value := func(i, n int) []byte {
		return bytes.Repeat([]byte{byte('a' + i%26)}, n)
	}
	sizes := map[string]int{}
	for i := 0; i < 300; i++ {
		n := 16 << 10
		switch i % 5 {
		case 1:
			n = 100
		case 3:
			n = 12<<10 + i
		}
		k := fmt.Sprintf("k%04d", i)
		require.NoError(t, d.Put([]byte(k), value(i, n), nil))
		sizes[k] = n
		if i%50 == 0 {
			b := NewBatch()
			for j := 0; j < 4; j++ {
				bk := fmt.Sprintf("b%04d-%d", i, j)
				b.Put([]byte(bk), value(i+j, 20000))
				sizes[bk] = 20000
			}
			require.NoError(t, d.Write(b, nil))
		}
	}
	image := compatCopyDir(t, dir)
	for _, mode := range []WALRecoveryMode{WALRecoveryTolerateCorruptedTail, WALRecoveryAbsoluteConsistency,
		WALRecoveryPointInTime, WALRecoverySkipAnyCorrupted} {
		r, err := Open(compatCopyDir(t, image), &Options{WALRecoveryMode: mode})
		require.NoError(t, err, "mode %s", mode)
		for k, n := range sizes {
			v, err := r.Get([]byte(k), nil)
			require.NoError(t, err, "mode %s key %s", mode, k)
			require.Len(t, v, n, "mode %s key %s", mode, k)
		}
		require.NoError(t, r.Close())
	}
	require.NoError(t, d.Close())

	logs, err := filepath.Glob(filepath.Join(image, "*.log"))
	require.NoError(t, err)
	// ldb prints one line per record (batch) of each WAL: as many as
	// our reader finds, and the live WALs hold the last batches written.
	lines, records := 0, 0
	for _, l := range logs {
		lines += strings.Count(runLDB(t, "dump_wal", "--walfile="+l), "\n")
		b, err := os.ReadFile(l)
		require.NoError(t, err)
		r := record.NewReader(bytes.NewReader(b), 0, l)
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			records++
		}
	}
	require.Equal(t, records, lines, "one line per batch")
	require.Greater(t, records, 100)
}
