package db_test

// Interop of the reverse bytewise comparator with RocksDB 7.8.3's tools,
// both ways: a database RocksDB wrote (testdata/rocksdb-reverse, made by
// its gen.sh with ldb) reads exactly as `ldb scan` reads it, and ldb,
// `ldb checkconsistency` and sst_dump read a database Strata wrote.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

const reverseFixture = "testdata/rocksdb-reverse"

// hexScan renders the family's live entries in iteration order as
// `ldb scan --hex` does.
func hexScan(t *testing.T, it *db.Iterator) string {
	t.Helper()
	var b strings.Builder
	for it.SeekToFirst(); it.Valid(); it.Next() {
		fmt.Fprintf(&b, "0x%X : 0x%X\n", it.Key(), it.Value())
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return b.String()
}

// hexScanBackward is hexScan from the last key back, lines reversed again
// so that it equals hexScan's output.
func hexScanBackward(t *testing.T, it *db.Iterator) string {
	t.Helper()
	var lines []string
	for it.SeekToLast(); it.Valid(); it.Prev() {
		lines = append(lines, fmt.Sprintf("0x%X : 0x%X\n", it.Key(), it.Value()))
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	var b strings.Builder
	for i := len(lines) - 1; i >= 0; i-- {
		b.WriteString(lines[i])
	}
	return b.String()
}

// TestComparerRocksDBFixture: the reverse-comparator database RocksDB
// wrote (tables and a WAL) reads identically to `ldb scan --hex`, read-only
// and after a read-write Open (which replays the WAL into a table and
// writes a MANIFEST and OPTIONS file of its own), after which ldb still
// reads it the same and finds it consistent. Opened as bytewise it is
// refused.
func TestComparerRocksDBFixture(t *testing.T) {
	wantB, err := os.ReadFile(filepath.Join(reverseFixture, "ldb-scan-hex.expected"))
	require.NoError(t, err)
	want := string(wantB)
	require.Equal(t, 290, strings.Count(want, "\n"))
	logs, err := filepath.Glob(filepath.Join(reverseFixture, "db", "*.log"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	st, err := os.Stat(logs[0])
	require.NoError(t, err)
	require.Positive(t, st.Size(), "the fixture keeps writes in its WAL")

	dir := filepath.Join(t.TempDir(), "db")
	copyDir(t, filepath.Join(reverseFixture, "db"), dir)
	_, err = db.Open(dir, &db.Options{ReadOnly: true})
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.ErrorContains(t, err, "leveldb.BytewiseComparator: does not match existing comparator rocksdb.ReverseBytewiseComparator")

	opts := &db.Options{Comparer: db.ReverseBytewiseComparer()}
	ro := *opts
	ro.ReadOnly = true
	d, err := db.Open(dir, &ro)
	require.NoError(t, err)
	require.Equal(t, want, hexScan(t, d.NewIterator(nil)))
	require.Equal(t, want, hexScanBackward(t, d.NewIterator(nil)))
	v, err := d.Get([]byte("key0010"), nil)
	require.NoError(t, err)
	require.Equal(t, "in-the-wal", string(v))
	_, err = d.Get([]byte("key0145"), nil) // under the range deletion
	require.ErrorIs(t, err, db.ErrNotFound)
	require.NoError(t, d.Close())

	d, err = db.Open(dir, opts)
	require.NoError(t, err)
	require.Equal(t, want, hexScan(t, d.NewIterator(nil)))
	require.NoError(t, d.CompactRange(nil, nil))
	require.Equal(t, want, hexScan(t, d.NewIterator(nil)))
	require.NoError(t, d.Close())

	c := filepath.Join(t.TempDir(), "c")
	copyDir(t, dir, c)
	require.Equal(t, want, rocksdbTool(t, "ldb", "--db="+c, "--try_load_options", "scan", "--hex"))
	require.Contains(t, rocksdbTool(t, "ldb", "--db="+c, "--try_load_options", "checkconsistency"), "OK")
}

// TestComparerRocksDBReadsOurs: a reverse-comparator database Strata
// wrote, with tables on several levels, range deletions and writes left in
// the WAL, reads the same through `ldb scan`, passes `ldb
// checkconsistency`, and sst_dump reads each table in the order Strata's
// reader does.
func TestComparerRocksDBReadsOurs(t *testing.T) {
	dir := t.TempDir()
	opts := &db.Options{CreateIfMissing: true, Comparer: db.ReverseBytewiseComparer(),
		WriteBufferSize: 16 << 10, BlockSize: 512, TargetFileSizeBase: 8 << 10, BloomBitsPerKey: 10}
	d, err := db.Open(dir, opts)
	require.NoError(t, err)
	for i := 0; i < 600; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("k%04d", i*7%600)), []byte(fmt.Sprintf("v%d", i)), nil))
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.CompactRange(nil, nil))
	// In reverse order k0300 sorts before k0200: [k0300, k0200) deletes
	// k0300 down to k0201.
	require.NoError(t, d.DeleteRange([]byte("k0300"), []byte("k0200"), nil))
	for i := 0; i < 600; i += 5 {
		require.NoError(t, d.Delete([]byte(fmt.Sprintf("k%04d", i)), nil))
	}
	require.NoError(t, d.Flush())
	for i := 0; i < 50; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("w%03d", i)), []byte("in-wal"), nil))
	}
	ours := hexScan(t, d.NewIterator(nil))
	require.NoError(t, d.Close())
	require.Equal(t, 600-120-80+50, strings.Count(ours, "\n"))

	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(ssts), 2)
	for _, p := range ssts {
		out := rocksdbTool(t, "sst_dump", "--file="+p, "--command=scan", "--output_hex")
		var got []string
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "'") {
				got = append(got, line)
			}
		}
		require.Equal(t, tableEntries(t, p), got, p)
		props := rocksdbTool(t, "sst_dump", "--file="+p, "--show_properties")
		require.Contains(t, props, "comparator name: rocksdb.ReverseBytewiseComparator", p)
	}

	c := filepath.Join(t.TempDir(), "c")
	copyDir(t, dir, c)
	require.Equal(t, ours, rocksdbTool(t, "ldb", "--db="+c, "--try_load_options", "scan", "--hex"))
	c2 := filepath.Join(t.TempDir(), "c2")
	copyDir(t, dir, c2)
	require.Contains(t, rocksdbTool(t, "ldb", "--db="+c2, "--try_load_options", "checkconsistency"), "OK")
}

// tableEntries renders the point entries of the table at path as
// `sst_dump --command=scan --output_hex` prints them, read by Strata's
// reader with the order the table's properties name.
func tableEntries(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	st, err := f.Stat()
	require.NoError(t, err)
	r, err := table.Open(f, st.Size(), table.ReaderOptions{FileName: path})
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, base.ReverseComparatorName, r.Properties().ComparatorName)
	it := r.NewIter()
	var out []string
	var keys [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		keys = append(keys, append([]byte(nil), k.UserKey...))
		out = append(out, fmt.Sprintf("'%X' seq:%d, type:%d => %X", k.UserKey, k.SeqNum(), k.Kind(), it.Value()))
	}
	require.NoError(t, it.Close())
	// The table is in reverse bytewise order.
	require.True(t, sort.SliceIsSorted(keys, func(i, j int) bool { return string(keys[i]) > string(keys[j]) }))
	return out
}

// TestComparerIngestRocksDBFiles: external files RocksDB's SstFileWriter
// wrote with the reverse comparator (ldb write_extern_sst, which takes the
// comparator from the OPTIONS file of a reverse database) are ingested
// into a reverse family in its order: files given in any order are sorted
// by their smallest key in that order, and two files whose ranges overlap
// in it are refused.
func TestComparerIngestRocksDBFiles(t *testing.T) {
	rev := &db.Options{CreateIfMissing: true, Comparer: db.ReverseBytewiseComparer()}
	optsDir := t.TempDir() // an empty reverse database, for ldb's options
	d, err := db.Open(optsDir, rev)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	files := t.TempDir()
	write := func(name string, keys ...string) string {
		t.Helper()
		var in strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&in, "%s ==> v-%s\n", k, k)
		}
		p := filepath.Join(files, name)
		cmd := exec.Command(ldbPath(t), "--db="+optsDir, "--try_load_options", "write_extern_sst", p)
		cmd.Stdin = strings.NewReader(in.String())
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return p
	}
	high := write("high.sst", "k9", "k8", "k7")
	low := write("low.sst", "k3", "k2", "k1")
	a := write("a.sst", "k8", "k5")
	b := write("b.sst", "k7", "k4")

	d, _ = openTest(t, rev)
	defer d.Close()
	require.NoError(t, d.Put([]byte("k6"), []byte("v-k6"), nil))
	require.NoError(t, d.Flush())
	require.NoError(t, d.Ingest([]string{low, high}, nil))
	require.Equal(t, []string{"k9", "k8", "k7", "k6", "k3", "k2", "k1"}, scanKeys(t, d, nil))
	err = d.Ingest([]string{b, a}, nil)
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.ErrorContains(t, err, "overlap")
}

// ldbPath returns RocksDB's ldb, skipping the test when it is not
// installed (as rocksdbTool).
func ldbPath(t *testing.T) string {
	t.Helper()
	rocksdbTool(t, "ldb", "--help")
	p, err := exec.LookPath("ldb")
	require.NoError(t, err)
	return p
}
