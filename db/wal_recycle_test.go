package db_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/internal/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// walNums lists the WAL numbers in dir, ascending.
func walNums(t *testing.T, fs vfs.FS, dir string) []uint64 {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	var nums []uint64
	for _, n := range names {
		if kind, num, ok := base.ParseFilename(n); ok && kind == base.FileKindLog {
			nums = append(nums, num)
		}
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	return nums
}

func walSize(t *testing.T, fs vfs.FS, dir string, num uint64) int64 {
	t.Helper()
	st, err := fs.Stat(filepath.Join(dir, base.MakeFilename(base.FileKindLog, num)))
	require.NoError(t, err)
	return st.Size()
}

// putMany writes n keys prefix-i = value (about size bytes each).
func putMany(t *testing.T, d *db.DB, prefix string, n int, value string, wo *db.WriteOptions) {
	t.Helper()
	for i := 0; i < n; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("%s-%05d", prefix, i)), []byte(value), wo))
	}
}

// TestWALRecycle_KeepsAndReuses: with RecycleLogFileNum 2, obsolete WALs
// are kept instead of deleted, a rotation takes the oldest kept file by rename
// (the new WAL holds the old file's bytes past what it wrote), every WAL
// fragment is of a recyclable type naming its log, and the next Open
// deletes the kept files.
func TestWALRecycle_KeepsAndReuses(t *testing.T) {
	mem := vfs.NewMem()
	opts := &db.Options{FS: mem, CreateIfMissing: true, RecycleLogFileNum: 2}
	d, err := db.Open("/db", opts)
	require.NoError(t, err)
	value := strings.Repeat("v", 200)
	var kept []uint64
	for round := 0; round < 5; round++ {
		putMany(t, d, fmt.Sprintf("r%d", round), 500-round*50, value, nil)
		before := walNums(t, mem, "/db")
		require.NoError(t, d.Flush())
		after := walNums(t, mem, "/db")
		// One live WAL plus at most two kept.
		require.LessOrEqual(t, len(after), 3, "round %d: %v", round, after)
		cur := after[len(after)-1]
		if len(kept) > 0 {
			// The oldest kept file became the new WAL: its name is
			// gone and the new WAL is at least as long as it was.
			require.NotContains(t, after, kept[0], "round %d", round)
			require.Contains(t, before, kept[0])
		}
		kept = after[:len(after)-1]
		if round >= 1 {
			// Each flush makes one WAL obsolete and each rotation
			// takes one: one is kept.
			require.Len(t, kept, 1, "round %d: %v", round, after)
		}
		require.Less(t, kept[len(kept)-1], cur)
	}
	// The current WAL, written over an older log: its fragments name it.
	putMany(t, d, "tail", 3, "x", &db.WriteOptions{Sync: true})
	nums := walNums(t, mem, "/db")
	cur := nums[len(nums)-1]
	f, err := mem.Open(filepath.Join("/db", base.MakeFilename(base.FileKindLog, cur)))
	require.NoError(t, err)
	var hdr [record.RecyclableHeaderSize]byte
	_, err = io.ReadFull(f, hdr[:])
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.True(t, hdr[6] >= 5 && hdr[6] <= 8, "type %d", hdr[6])
	require.Equal(t, uint32(cur), binary.LittleEndian.Uint32(hdr[7:]))
	require.Greater(t, walSize(t, mem, "/db", cur), int64(3*100), "the file keeps the older log's bytes")
	require.NoError(t, d.Close())

	d, err = db.Open("/db", opts)
	require.NoError(t, err)
	v, err := d.Get([]byte("tail-00002"), nil)
	require.NoError(t, err)
	require.Equal(t, "x", string(v))
	v, err = d.Get([]byte("r4-00000"), nil)
	require.NoError(t, err)
	require.Equal(t, value, string(v))
	require.Len(t, walNums(t, mem, "/db"), 1, "Open deletes the kept WALs")
	require.NoError(t, d.Close())
}

// recycledStaleDB builds, on fs, a database whose current WAL was written
// over an older, longer WAL holding older values of keys old-i, which a
// bottommost compaction has since rewritten with sequence number zero: a
// stale record replayed at Open would shadow them. The current WAL holds
// synced keys fresh-0..fresh-(fresh-1). It returns the open DB.
func recycledStaleDB(t *testing.T, fs vfs.FS, opts db.Options, fresh int) *db.DB {
	t.Helper()
	opts.FS = fs
	opts.CreateIfMissing = true
	opts.RecycleLogFileNum = 1
	opts.WriteBufferSize = 8 << 20 // no rotation but the flushes'
	d, err := db.Open("/db", &opts)
	require.NoError(t, err)
	putMany(t, d, "old", 1000, "stale-value-"+strings.Repeat("s", 100), nil)
	require.NoError(t, d.Flush()) // the first WAL is kept
	waitKept(t, fs, "/db", 1)
	putNew(t, d)
	require.NoError(t, d.Flush()) // the next WAL overwrites it
	waitKept(t, fs, "/db", 2)
	require.NoError(t, d.CompactRange(nil, nil))
	putMany(t, d, "fresh", fresh, "f", &db.WriteOptions{Sync: true})
	padToBlock(t, fs, d)
	return d
}

// waitKept waits until the info log of the database in dir reports n WALs
// kept for recycling: a flush's obsolete WAL is kept after Flush returns.
func waitKept(t *testing.T, fs vfs.FS, dir string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		f, err := fs.Open(filepath.Join(dir, "LOG"))
		if err != nil {
			return false
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		return err == nil && strings.Count(string(b), "WAL kept for recycling") >= n
	}, 10*time.Second, time.Millisecond)
}

// recordEnd returns the offset after a record of n bytes written at off by
// a recyclable writer (fragments never cross a block; a trailer of fewer
// than 11 bytes is padding).
func recordEnd(off int64, n int) int64 {
	for {
		if left := record.BlockSize - off%record.BlockSize; left < record.RecyclableHeaderSize {
			off += left
		}
		avail := int(record.BlockSize - off%record.BlockSize - record.RecyclableHeaderSize)
		if n <= avail {
			return off + record.RecyclableHeaderSize + int64(n)
		}
		off += int64(record.RecyclableHeaderSize + avail)
		n -= avail
	}
}

// padToBlock writes synced records until the current WAL ends exactly at a
// block boundary, where the older log's bytes hold the header of one of its
// fragments, intact: only its log number tells it from this log's.
func padToBlock(t *testing.T, fs vfs.FS, d *db.DB) {
	t.Helper()
	nums := walNums(t, fs, "/db")
	cur := nums[len(nums)-1]
	name := filepath.Join("/db", base.MakeFilename(base.FileKindLog, cur))
	for i := 0; ; i++ {
		f, err := fs.Open(name)
		require.NoError(t, err)
		r := record.NewReader(f, cur, name)
		var end int64
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			end = recordEnd(r.Offset(), len(rec))
		}
		require.NoError(t, f.Close())
		need := int(record.BlockSize - end%record.BlockSize - record.RecyclableHeaderSize)
		if end%record.BlockSize == 0 && i > 0 {
			return
		}
		// A batch of one Put of a 3-byte key: a 12-byte header, the
		// type, the key's length and key, the value's length and value.
		v := need - (12 + 1 + 1 + 3 + 2)
		switch {
		case need < 200:
			v = 100 // to the next block
		case v >= 1<<14:
			v = 16000
		}
		require.NoError(t, d.Put([]byte(fmt.Sprintf("p%02d", i)), bytes.Repeat([]byte("p"), v), &db.WriteOptions{Sync: true}))
	}
}

// checkedOld are the keys old-i that get a newer value. Few, and the old
// keys no more than the first memtable holds (it is smaller than
// WriteBufferSize), so that no memtable fills and rotates on its own: the
// current WAL is then the one written over the stale values.
var checkedOld = []int{0, 1, 500, 999}

func putNew(t *testing.T, d *db.DB) {
	t.Helper()
	for _, i := range checkedOld {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("old-%05d", i)), []byte("new"), nil))
	}
}

func requireRecoveredStale(t *testing.T, d *db.DB, fresh int) {
	t.Helper()
	for i := 0; i < fresh; i++ {
		v, err := d.Get([]byte(fmt.Sprintf("fresh-%05d", i)), nil)
		require.NoError(t, err, "fresh-%d", i)
		require.Equal(t, "f", string(v))
	}
	for _, i := range checkedOld {
		v, err := d.Get([]byte(fmt.Sprintf("old-%05d", i)), nil)
		require.NoError(t, err)
		require.Equal(t, "new", string(v), "old-%d: a stale record of the recycled file was replayed", i)
	}
}

// TestWALRecycle_CrashKeepsStaleTailDead: a power loss with the current WAL
// written over an older one recovers every synced write and none of the
// older log's records, which lie in the file past the new log's end.
func TestWALRecycle_CrashKeepsStaleTailDead(t *testing.T) {
	mem := vfs.NewMem()
	d := recycledStaleDB(t, mem, db.Options{}, 50)
	for _, mode := range []db.WALRecoveryMode{db.WALRecoveryTolerateCorruptedTail, db.WALRecoveryAbsoluteConsistency,
		db.WALRecoveryPointInTime, db.WALRecoverySkipAnyCorrupted} {
		t.Run(mode.String(), func(t *testing.T) {
			crashed := mem.CrashClone()
			nums := walNums(t, crashed, "/db")
			require.Greater(t, walSize(t, crashed, "/db", nums[len(nums)-1]), int64(100000), "the old log's bytes are there")
			d2, err := db.Open("/db", &db.Options{FS: crashed, WALRecoveryMode: mode, RecycleLogFileNum: 1})
			require.NoError(t, err)
			requireRecoveredStale(t, d2, 50)
			require.NoError(t, d2.Close())
		})
	}
	require.NoError(t, d.Close())
}

// recordOffsets returns the offsets of the records of WAL file path.
func recordOffsets(t *testing.T, path string, num uint64) []int64 {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r := record.NewReader(f, num, path)
	var offs []int64
	for {
		_, err := r.Next()
		if err == io.EOF {
			return offs
		}
		require.NoError(t, err)
		offs = append(offs, r.Offset())
	}
}

// TestWALRecycle_TornTailAndCorruption, on disk: the current WAL overwrote
// an older one. Its last record cut (the rest of it the old bytes, as a
// crash during the write leaves it) is a torn tail: dropped under the
// default mode, ErrCorruption under AbsoluteConsistency. A damaged record
// in the middle is ErrCorruption naming the file and offset (default and
// AbsoluteConsistency), the end of replay (PointInTime), or skipped
// (SkipAnyCorrupted).
func TestWALRecycle_TornTailAndCorruption(t *testing.T) {
	base0 := t.TempDir()
	src := filepath.Join(base0, "src")
	opts := db.Options{WALRecoveryMode: db.WALRecoveryAbsoluteConsistency}
	opts.CreateIfMissing = true
	opts.RecycleLogFileNum = 1
	opts.WriteBufferSize = 8 << 20
	d, err := db.Open(src, &opts)
	require.NoError(t, err)
	putMany(t, d, "old", 1000, "stale-value-"+strings.Repeat("s", 100), nil)
	require.NoError(t, d.Flush())
	waitKept(t, vfs.Default, src, 1)
	putNew(t, d)
	require.NoError(t, d.Flush())
	waitKept(t, vfs.Default, src, 2)
	require.NoError(t, d.CompactRange(nil, nil))
	for i := 0; i < 20; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("fresh-%05d", i)), bytes.Repeat([]byte("f"), 300), &db.WriteOptions{Sync: true}))
	}
	nums := walNums(t, vfs.Default, src)
	cur := nums[len(nums)-1]
	walName := base.MakeFilename(base.FileKindLog, cur)
	// A copy of the directory as a kill now leaves it (nothing is
	// flushed at a kill; the DB stays open until the copies are made).
	snapshot := func(name string) string {
		dst := filepath.Join(base0, name)
		require.NoError(t, os.MkdirAll(dst, 0o755))
		names, err := os.ReadDir(src)
		require.NoError(t, err)
		for _, e := range names {
			if e.Name() == "LOCK" {
				continue
			}
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
		}
		return dst
	}
	offs := recordOffsets(t, filepath.Join(src, walName), cur)
	require.Len(t, offs, 20)
	old := snapshot("pristine")
	oldWAL, err := os.ReadFile(filepath.Join(old, walName))
	require.NoError(t, err)
	require.NoError(t, d.Close())

	open := func(dir string, mode db.WALRecoveryMode) (*db.DB, error) {
		return db.Open(dir, &db.Options{WALRecoveryMode: mode, RecycleLogFileNum: 1})
	}
	fresh := func(t *testing.T, d *db.DB) (n int) {
		for i := 0; i < 20; i++ {
			if _, err := d.Get([]byte(fmt.Sprintf("fresh-%05d", i)), nil); err == nil {
				n++
			}
		}
		return n
	}
	damaged := func(name string, edit func(b []byte)) string {
		dir := filepath.Join(base0, name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		names, err := os.ReadDir(old)
		require.NoError(t, err)
		for _, e := range names {
			b, err := os.ReadFile(filepath.Join(old, e.Name()))
			require.NoError(t, err)
			if e.Name() == walName {
				edit(b)
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644))
		}
		return dir
	}
	// Torn: the second half of the last record's bytes replaced by what
	// the file held before (a byte pattern of the previous life).
	last := offs[19]
	torn := func(b []byte) {
		for i := last + 150; i < last+300; i++ {
			b[i] = oldWAL[i] ^ 0x5a
		}
	}
	mid := offs[10]
	corrupt := func(b []byte) { b[mid+100] ^= 0x01 }

	t.Run("torn/absolute", func(t *testing.T) {
		_, err := open(damaged("torn-absolute", torn), db.WALRecoveryAbsoluteConsistency)
		require.ErrorIs(t, err, db.ErrCorruption)
		require.Contains(t, err.Error(), walName)
	})
	for _, mode := range []db.WALRecoveryMode{db.WALRecoveryTolerateCorruptedTail, db.WALRecoveryAbsoluteConsistency} {
		t.Run("mid/"+mode.String(), func(t *testing.T) {
			_, err := open(damaged("mid-"+mode.String(), corrupt), mode)
			require.ErrorIs(t, err, db.ErrCorruption)
			require.Contains(t, err.Error(), walName)
			require.Contains(t, err.Error(), fmt.Sprintf("offset %d", mid))
		})
	}
	// The damaged databases that open: the fresh records up to the damage
	// back, and nothing of the WAL's previous life. Under SkipAnyCorrupted
	// the rest of the damaged block goes, as in RocksDB: the records after
	// it are in the same block.
	for _, tc := range []struct {
		name  string
		edit  func(b []byte)
		mode  db.WALRecoveryMode
		fresh int
	}{
		{"torn/default", torn, db.WALRecoveryTolerateCorruptedTail, 19},
		{"mid/pit", corrupt, db.WALRecoveryPointInTime, 10},
		{"mid/skip", corrupt, db.WALRecoverySkipAnyCorrupted, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := open(damaged(strings.ReplaceAll(tc.name, "/", "-"), tc.edit), tc.mode)
			require.NoError(t, err)
			require.Equal(t, tc.fresh, fresh(t, d))
			requireRecoveredStale(t, d, 0)
			require.NoError(t, d.Close())
		})
	}
}

// TestWALRecycle_Faults: a reuse whose rename or open fails falls back to a
// new file; a failed write or sync of a reused WAL fails the write. Each
// time the database, after a power loss, opens with every acknowledged
// synced write.
func TestWALRecycle_Faults(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   errorfs.Op
		// fails: the injected fault fails a write (else the rotation
		// falls back and writes go on).
		fails bool
	}{
		{"rename", errorfs.OpRename, false},
		{"open", errorfs.OpOpen, false},
		{"write", errorfs.OpWrite, true},
		{"sync", errorfs.OpSync, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			toggle := errorfs.NewToggle(tc.op).PathContains(".log")
			fs := errorfs.Wrap(mem, toggle)
			d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true, RecycleLogFileNum: 1})
			require.NoError(t, err)
			sync := &db.WriteOptions{Sync: true}
			var acked []string
			put := func(k string) error {
				err := d.Put([]byte(k), []byte("v-"+k), sync)
				if err == nil {
					acked = append(acked, k)
				}
				return err
			}
			for i := 0; i < 300; i++ {
				require.NoError(t, put(fmt.Sprintf("a-%04d", i)))
			}
			require.NoError(t, d.Flush()) // the first WAL is kept
			for i := 0; i < 300; i++ {
				require.NoError(t, put(fmt.Sprintf("b-%04d", i)))
			}
			// The next rotation reuses the kept WAL; its file's faults
			// start now.
			if tc.op == errorfs.OpRename || tc.op == errorfs.OpOpen {
				toggle.Enable()
			}
			require.NoError(t, d.Flush())
			toggle.Disable()
			if tc.fails {
				toggle.Enable()
			}
			var failed bool
			for i := 0; i < 50; i++ {
				if put(fmt.Sprintf("c-%04d", i)) != nil {
					failed = true
				}
			}
			toggle.Disable()
			require.Equal(t, tc.fails, failed)
			crashed := mem.CrashClone()
			_ = d.Close()
			d2, err := db.Open("/db", &db.Options{FS: crashed, RecycleLogFileNum: 1})
			require.NoError(t, err)
			for _, k := range acked {
				v, err := d2.Get([]byte(k), nil)
				require.NoError(t, err, "acknowledged %s lost", k)
				require.Equal(t, "v-"+k, string(v))
			}
			require.NoError(t, d2.Close())
		})
	}
}
