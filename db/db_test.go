package db_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/prefix"
	"github.com/stretchr/testify/require"
)

func TestEmptyKeyAndEmptyValue(t *testing.T) {
	d, _ := openTest(t, nil)
	defer d.Close()
	require.NoError(t, d.Put([]byte{}, []byte("empty-key"), nil))
	require.NoError(t, d.Put([]byte("k"), []byte{}, nil))
	require.NoError(t, d.Put([]byte("n"), nil, nil))
	for round := 0; round < 2; round++ {
		v, err := d.Get(nil, nil)
		require.NoError(t, err)
		require.Equal(t, "empty-key", string(v))
		v, err = d.Get([]byte("k"), nil)
		require.NoError(t, err, "an empty value is a value")
		require.Len(t, v, 0)
		_, err = d.Get([]byte("n"), nil)
		require.NoError(t, err)
		require.Equal(t, []string{"=empty-key", "k=", "n="}, scan(t, d, nil))
		require.NoError(t, d.Flush())
	}
	require.NoError(t, d.Delete([]byte{}, nil))
	_, err := d.Get([]byte{}, nil)
	require.ErrorIs(t, err, db.ErrNotFound)
}

func TestKeysOrderBytewiseUnsigned(t *testing.T) {
	d, _ := openTest(t, nil)
	defer d.Close()
	keys := []string{"\xff", "\x7f", "\x80", "\x00", "a", "a\x00", "a\xff", "", "\xff\xff"}
	for _, k := range keys {
		require.NoError(t, d.Put([]byte(k), []byte("v"), nil))
	}
	sorted := append([]string(nil), keys...)
	sort.Strings(sorted)
	var want []string
	for _, k := range sorted {
		want = append(want, k+"=v")
	}
	require.Equal(t, want, scan(t, d, nil))
	require.NoError(t, d.Flush())
	require.Equal(t, want, scan(t, d, nil))
	require.Equal(t, "\xff=v", scan(t, d, &db.ReadOptions{LowerBound: []byte("\x80\x00")})[0])
}

func TestDeleteRangeEmptyAndInverted(t *testing.T) {
	d, _ := openTest(t, nil)
	defer d.Close()
	for _, k := range []string{"a", "b", "c"} {
		require.NoError(t, d.Put([]byte(k), []byte("v"), nil))
	}
	require.NoError(t, d.DeleteRange([]byte("b"), []byte("b"), nil), "DeleteRange(k, k) is a no-op")
	require.Equal(t, []string{"a=v", "b=v", "c=v"}, scan(t, d, nil))
	err := d.DeleteRange([]byte("c"), []byte("a"), nil)
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.Equal(t, []string{"a=v", "b=v", "c=v"}, scan(t, d, nil))
	require.NoError(t, d.DeleteRange([]byte("a"), []byte("c"), nil))
	require.Equal(t, []string{"c=v"}, scan(t, d, nil))
}

func TestCallsAfterClose(t *testing.T) {
	d, _ := openTest(t, nil)
	require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
	s := d.NewSnapshot()
	live := d.NewIterator(nil)
	require.NoError(t, d.Close())
	k := []byte("a")
	b := db.NewBatch()
	b.Put(k, k)
	for name, err := range map[string]error{
		"Close":        d.Close(),
		"Put":          d.Put(k, k, nil),
		"Delete":       d.Delete(k, nil),
		"DeleteRange":  d.DeleteRange(k, k, nil),
		"Write":        d.Write(b, nil),
		"Flush":        d.Flush(),
		"CompactRange": d.CompactRange(nil, nil),
		"SetOptions":   d.SetOptions(map[string]string{"write_buffer_size": "65536"}),
	} {
		require.ErrorIs(t, err, db.ErrClosed, name)
	}
	_, err := d.Get(k, nil)
	require.ErrorIs(t, err, db.ErrClosed)
	_, err = d.Get(k, &db.ReadOptions{Snapshot: s})
	require.ErrorIs(t, err, db.ErrClosed)
	vals, errs := d.MultiGet([][]byte{k, []byte("zz")}, nil)
	require.Len(t, vals, 2)
	for _, err := range errs {
		require.ErrorIs(t, err, db.ErrClosed)
	}
	it := d.NewIterator(nil)
	require.NotNil(t, it)
	require.False(t, it.Valid())
	require.ErrorIs(t, it.Err(), db.ErrClosed)
	exerciseDeadIterator(t, it)
	s2 := d.NewSnapshot()
	require.NotNil(t, s2)
	s2.Release()
	s.Release()
	s.Release()
	_, ok := d.GetProperty(db.PropLevels)
	require.False(t, ok)
	// An iterator made before Close may be closed after it.
	live.SeekToFirst()
	require.NoError(t, live.Close())
}

// exerciseDeadIterator calls every method of a closed or failed iterator:
// none may panic or become valid.
func exerciseDeadIterator(t *testing.T, it *db.Iterator) {
	t.Helper()
	it.SeekToFirst()
	it.SeekToLast()
	it.Seek([]byte("a"))
	it.SeekForPrev([]byte("a"))
	it.Next()
	it.Prev()
	require.False(t, it.Valid())
	require.ErrorIs(t, it.Err(), db.ErrClosed)
	require.ErrorIs(t, it.Close(), db.ErrClosed)
	require.ErrorIs(t, it.Close(), db.ErrClosed)
}

func TestClosedIteratorAndReleasedSnapshot(t *testing.T) {
	d, _ := openTest(t, nil)
	defer d.Close()
	require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
	it := d.NewIterator(nil)
	it.SeekToFirst()
	require.True(t, it.Valid())
	require.NoError(t, it.Close())
	require.False(t, it.Valid())
	exerciseDeadIterator(t, it)

	s := d.NewSnapshot()
	s.Release()
	s.Release() // harmless
	ro := &db.ReadOptions{Snapshot: s}
	_, err := d.Get([]byte("a"), ro)
	require.ErrorIs(t, err, db.ErrClosed)
	_, errs := d.MultiGet([][]byte{[]byte("a"), []byte("b")}, ro)
	for _, err := range errs {
		require.ErrorIs(t, err, db.ErrClosed)
	}
	it = d.NewIterator(ro)
	require.NotNil(t, it)
	require.False(t, it.Valid())
	require.ErrorIs(t, it.Err(), db.ErrClosed)
	exerciseDeadIterator(t, it)
}

func TestSecondOpenFails(t *testing.T) {
	for _, mem := range []bool{false, true} {
		t.Run(fmt.Sprintf("mem=%v", mem), func(t *testing.T) {
			opts := &db.Options{CreateIfMissing: true}
			dir := t.TempDir()
			if mem {
				opts.FS, dir = vfs.NewMem(), "/db"
			}
			d, err := db.Open(dir, opts)
			require.NoError(t, err)
			require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
			_, err = db.Open(dir, opts)
			require.Error(t, err, "a second Open of an open directory must fail")
			require.NoError(t, d.Close())
			d, err = db.Open(dir, opts)
			require.NoError(t, err)
			v, err := d.Get([]byte("a"), nil)
			require.NoError(t, err)
			require.Equal(t, "1", string(v))
			require.NoError(t, d.Close())
		})
	}
}

func TestCreateIfMissingAndErrorIfExists(t *testing.T) {
	dir := t.TempDir()
	_, err := db.Open(dir, &db.Options{})
	require.Error(t, err, "CreateIfMissing unset on an empty directory")
	_, err = db.Open(filepath.Join(dir, "missing"), nil)
	require.Error(t, err)
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, ErrorIfExists: true})
	require.NoError(t, err, "ErrorIfExists on a new database")
	require.NoError(t, d.Close())
	_, err = db.Open(dir, &db.Options{CreateIfMissing: true, ErrorIfExists: true})
	require.Error(t, err, "ErrorIfExists on an existing database")
	d, err = db.Open(dir, nil)
	require.NoError(t, err, "the failed Opens left the database usable")
	require.NoError(t, d.Close())
}

// listing describes every file of dir with its size.
func listing(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	sort.Strings(names)
	var out []string
	for _, n := range names {
		fi, err := fs.Stat(filepath.Join(dir, n))
		require.NoError(t, err)
		out = append(out, fmt.Sprintf("%s:%d", n, fi.Size()))
	}
	return out
}

func TestReadOnly(t *testing.T) {
	mem := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: mem, CreateIfMissing: true})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("flushed"), []byte("1"), nil))
	require.NoError(t, d.Flush())
	require.NoError(t, d.Put([]byte("wal-only"), []byte("2"), &db.WriteOptions{Sync: true}))
	require.NoError(t, d.DeleteRange([]byte("f"), []byte("g"), &db.WriteOptions{Sync: true}))
	img := mem.CrashClone() // the last writes exist only in the WAL
	require.NoError(t, d.Close())

	before := listing(t, img, "/db")
	ro, err := db.Open("/db", &db.Options{FS: img, ReadOnly: true})
	require.NoError(t, err)
	v, err := ro.Get([]byte("wal-only"), nil)
	require.NoError(t, err, "ReadOnly sees data that exists only in the WAL")
	require.Equal(t, "2", string(v))
	_, err = ro.Get([]byte("flushed"), nil)
	require.ErrorIs(t, err, db.ErrNotFound)
	require.Equal(t, []string{"wal-only=2"}, scan(t, ro, nil))
	b := db.NewBatch()
	b.Put([]byte("x"), nil)
	require.ErrorIs(t, ro.Put([]byte("x"), nil, nil), db.ErrReadOnly)
	require.ErrorIs(t, ro.Delete([]byte("x"), nil), db.ErrReadOnly)
	require.ErrorIs(t, ro.DeleteRange([]byte("a"), []byte("b"), nil), db.ErrReadOnly)
	require.ErrorIs(t, ro.Write(b, nil), db.ErrReadOnly)
	require.NoError(t, ro.Close())
	require.Equal(t, before, listing(t, img, "/db"), "ReadOnly created or changed files")

	// A read-only Open does not take the lock: it works beside a writer.
	d, err = db.Open("/db", &db.Options{FS: img})
	require.NoError(t, err)
	defer d.Close()
	ro, err = db.Open("/db", &db.Options{FS: img, ReadOnly: true})
	if err == nil {
		ro.Close()
	}
}

func TestGetReturnsOwnedSlice(t *testing.T) {
	d, _ := openTest(t, nil)
	defer d.Close()
	key, val := []byte("key"), []byte("value")
	require.NoError(t, d.Put(key, val, nil))
	// The caller may reuse its slices once Put returns.
	key[0], val[0] = 'X', 'X'
	for round := 0; round < 2; round++ {
		v, err := d.Get([]byte("key"), nil)
		require.NoError(t, err)
		require.Equal(t, "value", string(v))
		v[0] = 'Z'
		v = append(v[:0], "overwritten"...)
		v2, err := d.Get([]byte("key"), nil)
		require.NoError(t, err)
		require.Equal(t, "value", string(v2), "mutating a returned slice changed the DB")
		vals, _ := d.MultiGet([][]byte{[]byte("key")}, nil)
		vals[0][0] = 'Q'
		require.Equal(t, []string{"key=value"}, scan(t, d, nil))
		_, err = d.Get([]byte("Xey"), nil)
		require.ErrorIs(t, err, db.ErrNotFound)
		require.NoError(t, d.Flush())
	}
	// Delete and DeleteRange copy their arguments too.
	k := []byte("key")
	require.NoError(t, d.Delete(k, nil))
	k[0] = 'Y'
	_, err := d.Get([]byte("key"), nil)
	require.ErrorIs(t, err, db.ErrNotFound)
}

func TestGetPropertyUnknown(t *testing.T) {
	d, _ := openTest(t, nil)
	defer d.Close()
	for _, name := range []string{"", "bogus", "rocksdb.bogus", "rocksdb.num-files-at-level99", "rocksdb.num-files-at-levelx"} {
		v, ok := d.GetProperty(name)
		require.False(t, ok, name)
		require.Equal(t, "", v, name)
	}
	v, ok := d.GetProperty(db.PropNumFilesAtLevelPrefix + "0")
	require.True(t, ok)
	require.Equal(t, "0", v)
}

func TestSetOptionsInvalid(t *testing.T) {
	d, _ := openTest(t, &db.Options{PrefixExtractor: prefix.Fixed(2)})
	defer d.Close()
	extractorIs := func(want string) {
		t.Helper()
		v, ok := d.GetProperty(db.PropPrefixExtractor)
		require.True(t, ok)
		require.Equal(t, want, v)
	}
	extractorIs("rocksdb.FixedPrefix.2")
	for _, c := range []struct{ name, value string }{
		{"no_such_option", "1"},
		{"write_buffer_size", "abc"},
		{"write_buffer_size", "-5"},
		{"write_buffer_size", "1.5"},
		{"disable_auto_compactions", "yes"},
		{"prefix_extractor", "fixed:0"},
		{"prefix_extractor", "capped:-1"},
		{"prefix_extractor", "bogus:2"},
	} {
		err := d.SetOptions(map[string]string{c.name: c.value})
		require.ErrorIs(t, err, db.ErrInvalidArgument, "%s=%s", c.name, c.value)
		require.Contains(t, err.Error(), c.name)
		require.Contains(t, err.Error(), c.value)
	}
	// Atomic: a good entry next to a bad one is not applied.
	for i := 0; i < 10; i++ { // map order varies
		err := d.SetOptions(map[string]string{"prefix_extractor": "fixed:3", "write_buffer_size": "x"})
		require.ErrorIs(t, err, db.ErrInvalidArgument)
		err = d.SetOptions(map[string]string{"prefix_extractor": "capped:3", "bogus": "1"})
		require.ErrorIs(t, err, db.ErrInvalidArgument)
		extractorIs("rocksdb.FixedPrefix.2")
	}
	require.NoError(t, d.SetOptions(map[string]string{"prefix_extractor": "fixed:3", "write_buffer_size": "65536",
		"disable_auto_compactions": "true"}))
	extractorIs("rocksdb.FixedPrefix.3")
	require.NoError(t, d.SetOptions(map[string]string{"prefix_extractor": ""}))
	extractorIs("nullptr")
	require.NoError(t, d.SetOptions(map[string]string{"prefix_extractor": "rocksdb.CappedPrefix.4"}))
	extractorIs("rocksdb.CappedPrefix.4")
	require.NoError(t, d.SetOptions(map[string]string{"prefix_extractor": "nullptr"}))
	extractorIs("nullptr")
	require.NoError(t, d.SetOptions(nil))
}

func TestPrefixParse(t *testing.T) {
	for _, s := range []string{"", "nullptr", "fixed:0", "capped:-1", "bogus:2", "fixed:", "fixed:x", "capped:0", "rocksdb.FixedPrefix.0"} {
		_, err := prefix.Parse(s)
		require.Error(t, err, "Parse(%q)", s)
	}
	for s, name := range map[string]string{
		"fixed:3": "rocksdb.FixedPrefix.3", "capped:2": "rocksdb.CappedPrefix.2", "noop": "rocksdb.Noop",
		"rocksdb.FixedPrefix.4": "rocksdb.FixedPrefix.4", "rocksdb.CappedPrefix.5": "rocksdb.CappedPrefix.5",
		"rocksdb.Noop": "rocksdb.Noop",
	} {
		e, err := prefix.Parse(s)
		require.NoError(t, err, s)
		require.Equal(t, name, e.Name())
	}
}

func TestSnapshotSeesAcknowledgedWrites(t *testing.T) {
	d, _ := openTest(t, &db.Options{WriteBufferSize: 16 << 10})
	defer d.Close()
	require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
	require.NoError(t, d.Put([]byte("b"), []byte("1"), nil))
	require.NoError(t, d.Put([]byte("c"), []byte("1"), nil))
	s := d.NewSnapshot()
	require.NoError(t, d.Put([]byte("a"), []byte("2"), nil))
	require.NoError(t, d.Delete([]byte("b"), nil))
	require.NoError(t, d.DeleteRange([]byte("c"), []byte("d"), nil))
	require.NoError(t, d.Put([]byte("z"), []byte("2"), nil))
	ro := &db.ReadOptions{Snapshot: s}
	for round := 0; round < 3; round++ {
		require.Equal(t, []string{"a=1", "b=1", "c=1"}, scan(t, d, ro), "round %d", round)
		require.Equal(t, []string{"a=2", "z=2"}, scan(t, d, nil), "round %d", round)
		require.NoError(t, d.Flush())
		require.NoError(t, d.CompactRange(nil, nil))
	}
	v, ok := d.GetProperty(db.PropNumSnapshots)
	require.True(t, ok)
	require.Equal(t, "1", v)
	s.Release()

	// With a concurrent writer: a snapshot holds a prefix of the writes
	// that includes each one acknowledged before NewSnapshot and none
	// begun after it returned.
	var acked atomic.Int64
	acked.Store(-1)
	var wg sync.WaitGroup
	werr := make(chan error, 1) // the writer's failure, checked after wg.Wait
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 2000; i++ {
			if err := d.Put([]byte(fmt.Sprintf("s%05d", i)), []byte(strconv.Itoa(i)), nil); err != nil {
				werr <- err
				return
			}
			acked.Store(int64(i))
		}
	}()
	for round := 0; round < 20; round++ {
		lo := int(acked.Load())
		s := d.NewSnapshot()
		hi := int(acked.Load()) + 1 // at most one write in flight
		if round%5 == 0 {
			require.NoError(t, d.Flush())
		}
		it := d.NewIterator(&db.ReadOptions{Snapshot: s, LowerBound: []byte("s"), UpperBound: []byte("t")})
		n := 0
		for it.SeekToFirst(); it.Valid(); it.Next() {
			require.Equal(t, fmt.Sprintf("s%05d", n), string(it.Key()), "hole in the snapshot")
			n++
		}
		require.NoError(t, it.Close())
		require.GreaterOrEqual(t, n-1, lo, "snapshot misses an acknowledged write")
		require.LessOrEqual(t, n-1, hi, "snapshot sees a write begun after NewSnapshot")
		s.Release()
	}
	wg.Wait()
	close(werr)
	require.NoError(t, <-werr)
}

// prefixScan seeks (or seeks for prev) to key and returns the keys in the
// direction of the seek.
func prefixScan(t *testing.T, it *db.Iterator, key string, backward bool) []string {
	t.Helper()
	var out []string
	if backward {
		for it.SeekForPrev([]byte(key)); it.Valid(); it.Prev() {
			out = append(out, string(it.Key()))
		}
	} else {
		for it.Seek([]byte(key)); it.Valid(); it.Next() {
			out = append(out, string(it.Key()))
		}
	}
	require.NoError(t, it.Err())
	return out
}

func TestPrefixSameAsStart(t *testing.T) {
	keys := []string{"a", "aa1", "aa2", "ab", "ab1", "ab2", "ac", "b", "ba1"}
	for _, flushed := range []bool{false, true} {
		for _, totalOrder := range []bool{false, true} {
			t.Run(fmt.Sprintf("flushed=%v/totalOrder=%v", flushed, totalOrder), func(t *testing.T) {
				d, _ := openTest(t, &db.Options{PrefixExtractor: prefix.Fixed(2), BloomBitsPerKey: 10})
				defer d.Close()
				for i, k := range keys {
					require.NoError(t, d.Put([]byte(k), []byte("v"), nil))
					if flushed && i%3 == 2 {
						require.NoError(t, d.Flush()) // spread keys over tables
					}
				}
				ro := &db.ReadOptions{PrefixSameAsStart: true, TotalOrderSeek: totalOrder}
				it := d.NewIterator(ro)
				require.Equal(t, []string{"aa1", "aa2"}, prefixScan(t, it, "aa", false))
				require.Equal(t, []string{"aa2", "aa1"}, prefixScan(t, it, "aa9", true))
				require.Equal(t, []string{"ab1", "ab2"}, prefixScan(t, it, "ab0", false))
				require.Equal(t, []string{"ab", "ab1", "ab2"}, prefixScan(t, it, "ab", false))
				require.Equal(t, []string{"ab2", "ab1", "ab"}, prefixScan(t, it, "ab\xff", true))
				require.Empty(t, prefixScan(t, it, "zz", false))
				require.Empty(t, prefixScan(t, it, "az", true))
				// Direction changes stay inside the prefix.
				it.Seek([]byte("ab1"))
				require.True(t, it.Valid())
				it.Prev()
				require.Equal(t, "ab", string(it.Key()))
				it.Prev()
				require.False(t, it.Valid())
				it.SeekForPrev([]byte("ab1"))
				it.Next()
				it.Next()
				require.False(t, it.Valid())
				// A Seek key outside the domain narrows nothing.
				require.Equal(t, []string{"b", "ba1"}, prefixScan(t, it, "b", false))
				require.Equal(t, []string{"a"}, prefixScan(t, it, "a", true))
				require.NoError(t, it.Close())

				// The extractor in force at NewIterator is the one used.
				it = d.NewIterator(ro)
				require.NoError(t, d.SetOptions(map[string]string{"prefix_extractor": "fixed:1"}))
				require.Equal(t, []string{"aa1", "aa2"}, prefixScan(t, it, "aa", false))
				require.NoError(t, it.Close())
				it = d.NewIterator(ro)
				require.Equal(t, []string{"aa1", "aa2", "ab", "ab1", "ab2", "ac"}, prefixScan(t, it, "aa", false))
				require.NoError(t, it.Close())

				// No extractor: no narrowing.
				require.NoError(t, d.SetOptions(map[string]string{"prefix_extractor": "nullptr"}))
				it = d.NewIterator(ro)
				require.Equal(t, []string{"ab2", "ac", "b", "ba1"}, prefixScan(t, it, "ab2", false))
				require.NoError(t, it.Close())
				// Without PrefixSameAsStart, full order whatever the extractor.
				require.NoError(t, d.SetOptions(map[string]string{"prefix_extractor": "fixed:2"}))
				it = d.NewIterator(&db.ReadOptions{TotalOrderSeek: totalOrder})
				require.Equal(t, []string{"ac", "b", "ba1"}, prefixScan(t, it, "ac", false))
				require.Equal(t, []string{"aa1", "a"}, prefixScan(t, it, "aa1", true))
				require.NoError(t, it.Close())
			})
		}
	}
}

// copyDir copies the regular files of src (a live database, possibly)
// into dst, skipping LOCK.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dst, 0o755))
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() == "LOCK" || !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644))
	}
}

// filesWithSuffix lists dir's files ending in suffix, or containing it for
// a name like "MANIFEST".
func filesMatching(t *testing.T, dir, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	require.NoError(t, err)
	return m
}

// flipByte inverts one byte of a file.
func flipByte(t *testing.T, name string, off int64) {
	t.Helper()
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	require.Less(t, off, int64(len(data)), "%s has %d bytes", name, len(data))
	data[off] ^= 0xff
	require.NoError(t, os.WriteFile(name, data, 0o644))
}

// TestEmptyUpperBound: an empty, non-nil UpperBound is a bound below every
// key (nil is no bound).
func TestEmptyUpperBound(t *testing.T) {
	d, _ := openTest(t, nil)
	defer d.Close()
	require.NoError(t, d.Put([]byte(""), []byte("v"), nil))
	require.NoError(t, d.Put([]byte("a"), []byte("v"), nil))
	require.Empty(t, scan(t, d, &db.ReadOptions{UpperBound: []byte{}}))
	it := d.NewIterator(&db.ReadOptions{UpperBound: []byte{}})
	it.SeekForPrev([]byte("z"))
	require.False(t, it.Valid())
	it.SeekToLast()
	require.False(t, it.Valid())
	require.NoError(t, it.Close())
	require.Len(t, scan(t, d, &db.ReadOptions{UpperBound: nil, LowerBound: []byte{}}), 2)
}

// TestUpperBoundInSeekPrefixBackward: with an upper bound in the Seek key's
// prefix, filters may skip tables for a forward Seek (RocksDB's auto prefix
// mode), but SeekForPrev and Prev read keys of other prefixes, in tables
// the filter would skip.
func TestUpperBoundInSeekPrefixBackward(t *testing.T) {
	d, _ := openTest(t, &db.Options{PrefixExtractor: prefix.Fixed(2), BloomBitsPerKey: 10,
		DisableAutoCompactions: true})
	defer d.Close()
	for _, k := range []string{"aa1", "ab1", "ac1"} { // one table each
		require.NoError(t, d.Put([]byte(k), []byte("v"), nil))
		require.NoError(t, d.Flush())
	}
	it := d.NewIterator(&db.ReadOptions{UpperBound: []byte("ac9")})
	defer it.Close()
	it.SeekForPrev([]byte("ac5"))
	require.True(t, it.Valid())
	require.Equal(t, "ac1", string(it.Key()))
	it.Prev()
	require.True(t, it.Valid(), "SeekForPrev then Prev lost ab1")
	require.Equal(t, "ab1", string(it.Key()))
	it.SeekForPrev([]byte("ac0"))
	require.True(t, it.Valid(), "SeekForPrev lost ab1")
	require.Equal(t, "ab1", string(it.Key()))
	it.Seek([]byte("ac0"))
	require.Equal(t, "ac1", string(it.Key()))
	it.Prev()
	require.True(t, it.Valid(), "Seek then Prev lost ab1")
	require.Equal(t, "ab1", string(it.Key()))
	it.Prev()
	require.Equal(t, "aa1", string(it.Key()))
	it.Next()
	it.Next()
	require.Equal(t, "ac1", string(it.Key()))
	require.NoError(t, it.Err())
}

// TestBatchLargerThanWriteBuffer: a batch bigger than the write buffer
// gets a memtable of its own, at write time and at WAL replay.
func TestBatchLargerThanWriteBuffer(t *testing.T) {
	mem := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: mem, CreateIfMissing: true, WriteBufferSize: 4 << 10})
	require.NoError(t, err)
	b := db.NewBatch()
	for i := 0; i < 100; i++ {
		b.Put([]byte(fmt.Sprintf("k%03d", i)), make([]byte, 100))
	}
	done := make(chan error, 1)
	go func() {
		err := d.Write(b, &db.WriteOptions{Sync: true})
		if err == nil {
			err = d.SetOptions(map[string]string{"write_buffer_size": "1024"})
		}
		if err == nil {
			err = d.Write(b, &db.WriteOptions{Sync: true})
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Write of a batch larger than the write buffer hangs")
	}
	require.Len(t, scan(t, d, nil), 100)
	img := mem.CrashClone() // the batches are only in the WAL
	require.NoError(t, d.Close())
	d, err = db.Open("/db", &db.Options{FS: img, WriteBufferSize: 1024})
	require.NoError(t, err, "replaying a batch larger than the write buffer")
	require.Len(t, scan(t, d, nil), 100)
	require.NoError(t, d.Close())
}

// TestReadOnlyBesideWriterIsRefused: a read-only Open of a directory a
// writer holds open fails with the lock error (it would read tables the
// writer's compactions delete); once the writer closes it opens, and a
// second handle beside it is refused in turn.
func TestReadOnlyBesideWriterIsRefused(t *testing.T) {
	dir := t.TempDir()
	w, err := db.Open(dir, &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	require.NoError(t, w.Put([]byte("k"), []byte("v"), nil))
	require.NoError(t, w.Flush())
	_, err = db.Open(dir, &db.Options{ReadOnly: true})
	require.Error(t, err, "a read-only handle beside a live writer")
	require.Contains(t, err.Error(), "lock")
	require.NoError(t, w.Close())

	r, err := db.Open(dir, &db.Options{ReadOnly: true})
	require.NoError(t, err)
	v, err := r.Get([]byte("k"), nil)
	require.NoError(t, err)
	require.Equal(t, "v", string(v))
	_, err = db.Open(dir, &db.Options{})
	require.Error(t, err, "a writer beside a read-only handle")
	require.NoError(t, r.Close())
}
