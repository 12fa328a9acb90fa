package db

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// recycledFixture is a directory RocksDB 7.8.3's db_bench wrote with
// recycle_log_file_num=2 (and kSkipAnyCorruptedRecords, without which
// RocksDB 7.8 turns recycling off), killed during fillseq: the options in
// testdata/rocksdb-recycled-wal.options.ini, then
//
//	db_bench -benchmarks=fillseq -num=10000000 -value_size=20 \
//	  -options_file=rocksdb-recycled-wal.options.ini -compression_type=none
//
// SIGKILLed after its LOG reported reusing three logs. 000014.log and
// 000016.log were written over older logs and end before their files do;
// 000018.log was renamed from an older log and holds only that log's
// records. RocksDB (ldb scan) recovers 5976 keys: fillseq's keys 0 to
// 5975, each the index in 8 big-endian bytes and "00000000".
const recycledFixture = "testdata/rocksdb-recycled-wal"

// TestRocksDBRecycledWAL: Strata recovers exactly what RocksDB does from
// RocksDB's recycled WALs, in every recovery mode, replaying none of the
// older logs' records that lie past each log's end.
func TestRocksDBRecycledWAL(t *testing.T) {
	for _, mode := range []WALRecoveryMode{WALRecoveryTolerateCorruptedTail, WALRecoveryAbsoluteConsistency,
		WALRecoveryPointInTime, WALRecoverySkipAnyCorrupted} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := compatCopyDir(t, recycledFixture)
			d, err := Open(dir, &Options{WALRecoveryMode: mode, RecycleLogFileNum: 2})
			require.NoError(t, err)
			it := d.NewIterator(nil)
			n := 0
			for it.SeekToFirst(); it.Valid(); it.Next() {
				want := binary.BigEndian.AppendUint64(nil, uint64(n))
				require.Equal(t, string(want)+"00000000", string(it.Key()), "key %d", n)
				n++
			}
			require.NoError(t, it.Err())
			require.NoError(t, it.Close())
			require.Equal(t, 5976, n)
			require.NoError(t, d.Close())
		})
	}
}

// TestCompatLDBReadsRecycledWAL: ldb dump_wal reads Strata's recycled WALs
// (recyclable records over an older log's), and ldb, opening the directory
// with RocksDB, finds exactly Strata's keys: while open (the tail of the
// current WAL, written over an older log, unflushed) and after Close.
func TestCompatLDBReadsRecycledWAL(t *testing.T) {
	compatLDB(t)
	dir := t.TempDir()
	d, err := Open(dir, &Options{CreateIfMissing: true, RecycleLogFileNum: 1, WriteBufferSize: 8 << 20})
	require.NoError(t, err)
	kept := func(n int) {
		require.Eventually(t, func() bool {
			d.mu.Lock()
			defer d.mu.Unlock()
			return len(d.mu.recycleWALs) == n
		}, 10*time.Second, time.Millisecond)
	}
	for i := 0; i < 1000; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("old-%05d", i)), []byte("stale-"+strings.Repeat("s", 100)), nil))
	}
	require.NoError(t, d.Flush())
	kept(1)
	for i := 0; i < 1000; i += 7 {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("old-%05d", i)), []byte("new"), nil))
	}
	require.NoError(t, d.Flush()) // the current WAL overwrites the first
	kept(1)
	for i := 0; i < 40; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("fresh-%05d", i)), []byte("f"), &WriteOptions{Sync: i%2 == 0}))
	}
	d.mu.Lock()
	cur := d.mu.log.num
	d.mu.Unlock()
	wal := filepath.Join(dir, base.MakeFilename(base.FileKindLog, cur))
	st, err := d.fs.Stat(wal)
	require.NoError(t, err)
	require.Greater(t, st.Size(), int64(100000), "the current WAL holds the older log's bytes")
	out := runLDB(t, "dump_wal", "--walfile="+wal, "--header", "--print_value")
	require.Equal(t, 40, strings.Count(out, "PUT(0) : 0x66726573682D"), out) // fresh-
	require.NotContains(t, out, "stale")
	require.NotContains(t, strings.ToLower(out), "corrupt")
	// The records carry the log number.
	b, err := readFileBytes(d, wal, 11)
	require.NoError(t, err)
	require.Equal(t, byte(5), b[6])
	require.Equal(t, uint32(cur), binary.LittleEndian.Uint32(b[7:]))

	want, err := compatScan(t, d)
	require.NoError(t, err)
	require.Contains(t, want, "0x6F6C642D3030303030 : 0x6E6577\n") // old-00000 : new
	compatCheckLDBReads(t, dir, want)
	require.NoError(t, d.Close())
	compatCheckLDBReads(t, dir, want)
}

func readFileBytes(d *DB, name string, n int) ([]byte, error) {
	f, err := d.fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	_, err = f.ReadAt(b, 0)
	return b, err
}

// TestRecycleLogFileNumOptionsFile: recycle_log_file_num is written to the
// OPTIONS file, and a file recording another value than the Open's is
// reported; a negative value fails Open.
func TestRecycleLogFileNumOptionsFile(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{CreateIfMissing: true, RecycleLogFileNum: 3})
	require.NoError(t, err)
	require.NoError(t, d.Close())
	names, err := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	b, err := readOSFile(names[len(names)-1])
	require.NoError(t, err)
	require.Contains(t, string(b), "recycle_log_file_num=3\n")

	d, err = Open(dir, &Options{})
	require.NoError(t, err)
	require.Contains(t, d.optionsFileReport(), "recycle_log_file_num=3")
	require.NoError(t, d.Close())

	_, err = Open(dir, &Options{RecycleLogFileNum: -1})
	require.ErrorIs(t, err, ErrInvalidArgument)
}

func readOSFile(name string) ([]byte, error) { return os.ReadFile(name) }
