package db

// RocksDB 7.8.3 compatibility: Strata opens directories RocksDB wrote
// (testdata/rocksdb, written by RocksDB 7.8.3's own tools; see
// testdata/rocksdb/README.md), and RocksDB's ldb opens directories Strata wrote.
// Tests that run ldb skip when it is missing, except under CI=true.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stratadb/strata/prefix"
	"github.com/stretchr/testify/require"
)

const compatFixtures = "testdata/rocksdb"

// compatLDB returns the path of RocksDB's ldb, skipping the test when it is
// not installed (failing under CI, which installs rocksdb-tools).
func compatLDB(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("ldb")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ldb not found (CI installs it with apt-get install -y rocksdb-tools): %v", err)
		}
		t.Skip("ldb (RocksDB 7.8.3 rocksdb-tools) is not installed; skipping the check against RocksDB")
	}
	return p
}

// runLDB runs ldb with args and returns its stdout; any failure, or
// anything on stderr, fails the test.
func runLDB(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(compatLDB(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "ldb %v: %s", args, stderr.String())
	require.Empty(t, stderr.String(), "ldb %v", args)
	require.NotContains(t, stdout.String(), "Failed", "ldb %v", args)
	return stdout.String()
}

// compatCopyDir copies the plain files of src into a new temporary
// directory (ldb and Strata both modify what they open).
func compatCopyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
	}
	return dst
}

// compatScan renders every live key and value as `ldb scan --hex` does.
func compatScan(t *testing.T, d *DB) (string, error) {
	t.Helper()
	var b strings.Builder
	it := d.NewIterator(nil)
	for it.SeekToFirst(); it.Valid(); it.Next() {
		fmt.Fprintf(&b, "0x%X : 0x%X\n", it.Key(), it.Value())
	}
	err := it.Err()
	require.NoError(t, it.Close())
	return b.String(), err
}

// compatExpected reads a fixture's ldb-scan-hex.expected (recorded with
// `ldb scan --hex` on a copy of the fixture).
func compatExpected(t *testing.T, fixture string) (entries int, sum string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(compatFixtures, fixture, "ldb-scan-hex.expected"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "entries="); ok {
			entries, err = strconv.Atoi(v)
			require.NoError(t, err)
		}
		if v, ok := strings.CutPrefix(line, "sha256="); ok {
			sum = v
		}
	}
	require.NotEmpty(t, sum, fixture)
	return entries, sum
}

func compatSHA(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// compatReadableFixtures are the fixture DBs Strata reads in full (ldb-cf
// is refused, merge-hashsearch holds Merge entries).
func compatReadableFixtures(t *testing.T) []string {
	dirs, err := filepath.Glob(filepath.Join(compatFixtures, "*", "db"))
	require.NoError(t, err)
	var out []string
	for _, d := range dirs {
		name := filepath.Base(filepath.Dir(d))
		if name != "ldb-cf" && !strings.Contains(name, "merge") {
			out = append(out, name)
		}
	}
	require.GreaterOrEqual(t, len(out), 19)
	return out
}

// TestCompatOpenRocksDBFixtures opens every RocksDB-written fixture
// read-only and read-write, and checks Strata reads exactly what
// `ldb scan --hex` reports; after a read-write Open (which flushes the WAL
// and writes a new MANIFEST and OPTIONS file), ldb must still read it.
func TestCompatOpenRocksDBFixtures(t *testing.T) {
	_, ldbErr := exec.LookPath("ldb")
	for _, name := range compatReadableFixtures(t) {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join(compatFixtures, name, "db")
			entries, sum := compatExpected(t, name)
			want := ""
			if ldbErr == nil {
				want = runLDB(t, "--db="+compatCopyDir(t, src), "scan", "--hex")
				require.Equal(t, sum, compatSHA(want), "ldb disagrees with the recorded expectation")
			}
			for _, ro := range []bool{true, false} {
				dir := compatCopyDir(t, src)
				d, err := Open(dir, &Options{ReadOnly: ro})
				require.NoError(t, err, "read-only=%v", ro)
				got, err := compatScan(t, d)
				require.NoError(t, err)
				require.Equal(t, entries, strings.Count(got, "\n"), "read-only=%v", ro)
				require.Equal(t, sum, compatSHA(got), "read-only=%v", ro)
				if want != "" {
					require.Equal(t, want, got)
				}
				require.NoError(t, d.Close())
				if ro {
					continue
				}
				d, err = Open(dir, &Options{ReadOnly: true})
				require.NoError(t, err)
				got, err = compatScan(t, d)
				require.NoError(t, err)
				require.Equal(t, sum, compatSHA(got), "after a read-write Open")
				require.NoError(t, d.Close())
				if ldbErr == nil {
					cp := compatCopyDir(t, dir)
					require.Contains(t, runLDB(t, "--db="+cp, "checkconsistency"), "OK")
					require.Equal(t, sum, compatSHA(runLDB(t, "--db="+cp, "scan", "--hex")))
				}
			}
		})
	}
}

// TestCompatLDBTinyPointReads checks deletions and the range deletion of
// the ldb-tiny fixture through Get, and the OPTIONS report.
func TestCompatLDBTinyPointReads(t *testing.T) {
	for _, name := range []string{"ldb-tiny-before-compact", "ldb-tiny-after-compact"} {
		d, err := Open(compatCopyDir(t, filepath.Join(compatFixtures, name, "db")), &Options{ReadOnly: true})
		require.NoError(t, err)
		for k, v := range map[string]string{"apple": "green", "cherry": "red", "fig": "green", "grape": "purple"} {
			got, err := d.Get([]byte(k), nil)
			require.NoError(t, err, "%s %s", name, k)
			require.Equal(t, v, string(got), "%s %s", name, k)
		}
		for _, k := range []string{"banana", "date", "elderberry", "zucchini"} {
			_, err := d.Get([]byte(k), nil)
			require.ErrorIs(t, err, ErrNotFound, "%s %s", name, k)
		}
		report := d.optionsFileReport()
		// ldb sets a merge operator and Snappy; Strata's defaults differ.
		require.Contains(t, report, `[CFOptions "default"] merge_operator={id=StringAppendOperator;delimiter=\:;}: no Options.MergeOperator: using the built-in {id=StringAppendOperator;delimiter=\:;}`)
		require.Contains(t, report, `[CFOptions "default"] compression=kSnappyCompression: Strata uses kNoCompression`)
		require.NotContains(t, report, "write_buffer_size", "same as Strata's default")
		require.NoError(t, d.Close())
	}
}

// TestCompatColumnFamiliesOpen: a DB with a second column family, made by
// ldb, opens (read-only and writable, with and without its OPTIONS file)
// with both families and their data, the second one's only in the WAL.
func TestCompatColumnFamiliesOpen(t *testing.T) {
	src := filepath.Join(compatFixtures, "ldb-cf", "db")
	for _, ro := range []bool{true, false} {
		for _, withOptions := range []bool{true, false} {
			dir := compatCopyDir(t, src)
			if !withOptions {
				opts, _ := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
				for _, f := range opts {
					require.NoError(t, os.Remove(f))
				}
			}
			d, err := Open(dir, &Options{ReadOnly: ro})
			require.NoError(t, err)
			names := []string{}
			for _, cf := range d.ColumnFamilies() {
				names = append(names, cf.Name())
			}
			require.Equal(t, []string{"default", "cf2"}, names)
			v, err := d.Get([]byte("k0"), nil)
			require.NoError(t, err)
			require.Equal(t, "v0", string(v))
			cf := d.ColumnFamily("cf2")
			require.NotNil(t, cf)
			require.Equal(t, uint32(1), cf.ID())
			for _, kv := range [][2]string{{"k1", "v1"}, {"k2", "v2"}} {
				v, err := cf.Get([]byte(kv[0]), nil)
				require.NoError(t, err)
				require.Equal(t, kv[1], string(v))
			}
			_, err = cf.Get([]byte("k0"), nil)
			require.ErrorIs(t, err, ErrNotFound)
			require.NoError(t, d.Close())
		}
	}
}

// compatOptionsFiles lists the OPTIONS files of dir, ascending.
func compatOptionsFiles(t *testing.T, dir string) []string {
	names, err := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
	require.NoError(t, err)
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	return names
}

// TestCompatOptionsFileWritten: a writable Open writes an OPTIONS file
// describing the options in force, keeps the two newest, and a reopen with
// the same options reports nothing while one with other options reports
// the differences.
func TestCompatOptionsFileWritten(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{CreateIfMissing: true, Compression: ZstdCompression, BloomBitsPerKey: 10,
		PrefixExtractor: prefix.Fixed(4), WriteBufferSize: 1 << 20, CompactionStyle: FIFOCompaction,
		FIFOMaxTableFilesSize: 1 << 30, DisableAutoCompactions: true, BlockSize: 8192}
	for i := 0; i < 3; i++ {
		d, err := Open(dir, opts)
		require.NoError(t, err)
		require.Empty(t, d.optionsFileReport(), "open %d", i)
		require.NoError(t, d.Close())
	}
	files := compatOptionsFiles(t, dir)
	require.Len(t, files, 2, "%v", files)
	text, err := os.ReadFile(filepath.Join(dir, files[1]))
	require.NoError(t, err)
	for _, want := range []string{"[Version]\n  rocksdb_version=7.8.3\n  options_file_version=1.1\n",
		"compression=kZSTD\n", "prefix_extractor=rocksdb.FixedPrefix.4\n", "filter_policy=bloomfilter:10:false\n",
		"compaction_style=kCompactionStyleFIFO\n", "write_buffer_size=1048576\n", "block_size=8192\n",
		"disable_auto_compactions=true\n", "comparator=leveldb.BytewiseComparator\n", "checksum=kXXH3\n", "format_version=5\n",
		`[TableOptions/BlockBasedTable "default"]`} {
		require.Contains(t, string(text), want)
	}

	d, err := Open(dir, &Options{ReadOnly: true})
	require.NoError(t, err)
	report := d.optionsFileReport()
	for _, want := range []string{"compression=kZSTD: Strata uses kNoCompression", "prefix_extractor=rocksdb.FixedPrefix.4: Strata uses nullptr",
		"filter_policy=bloomfilter:10:false: Strata uses nullptr", "compaction_style=kCompactionStyleFIFO: Strata uses kCompactionStyleLevel",
		"block_size=8192: Strata uses 4096"} {
		require.Contains(t, report, want)
	}
	require.NotContains(t, report, "compaction_options_fifo", "irrelevant under level compaction")
	require.Equal(t, files, compatOptionsFiles(t, dir), "read-only Open writes nothing")
	require.NoError(t, d.Close())
}

// TestCompatOptionsFileChecks: a comparator other than the one opened with
// is refused, a
// malformed file is corruption naming the file and line, a custom prefix
// extractor is written as nullptr.
func TestCompatOptionsFileChecks(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{CreateIfMissing: true, PrefixExtractor: customExtractor{}})
	require.NoError(t, err)
	require.NoError(t, d.Close())
	files := compatOptionsFiles(t, dir)
	require.Len(t, files, 1)
	path := filepath.Join(dir, files[0])
	orig, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(orig), "prefix_extractor=nullptr\n")

	bad := strings.Replace(string(orig), "comparator=leveldb.BytewiseComparator", "comparator=rocksdb.ReverseBytewiseComparator", 1)
	require.NoError(t, os.WriteFile(path, []byte(bad), 0o644))
	_, err = Open(dir, nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "comparator rocksdb.ReverseBytewiseComparator does not match the leveldb.BytewiseComparator it is opened with")
	require.ErrorContains(t, err, files[0])

	require.NoError(t, os.WriteFile(path, append(append([]byte(nil), orig...), "  no equals sign\n"...), 0o644))
	_, err = Open(dir, &Options{ReadOnly: true})
	require.ErrorIs(t, err, ErrCorruption)
	require.ErrorContains(t, err, files[0]+" line ")

	require.NoError(t, os.WriteFile(path, []byte("[DBOptions]\n  a=b\n"), 0o644))
	_, err = Open(dir, &Options{ReadOnly: true})
	require.ErrorIs(t, err, ErrCorruption)
	require.ErrorContains(t, err, "no [Version] section")
}

type customExtractor struct{}

func (customExtractor) Name() string                { return "my.custom.extractor" }
func (customExtractor) InDomain(key []byte) bool    { return len(key) >= 2 }
func (customExtractor) Transform(key []byte) []byte { return key[:2] }

// compatFill writes puts, deletes, range deletions and flushes, and ends
// with synced writes that live only in the WAL.
func compatFill(t *testing.T, d *DB) {
	t.Helper()
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }
	for round := 0; round < 3; round++ {
		for i := round; i < 600; i += 3 {
			require.NoError(t, d.Put(key(i), []byte(fmt.Sprintf("value-%d-%d", i, round)), nil))
		}
		require.NoError(t, d.Delete(key(10+round), nil))
		require.NoError(t, d.DeleteRange(key(100+50*round), key(120+50*round), nil))
		require.NoError(t, d.Flush())
	}
	require.NoError(t, d.CompactRange(nil, nil))
	require.NoError(t, d.Put(key(5), []byte("overwritten"), nil))
	require.NoError(t, d.DeleteRange(key(300), key(305), nil))
	require.NoError(t, d.Delete(key(400), nil))
	require.NoError(t, d.Put([]byte("zzz-wal-only"), []byte("synced"), &WriteOptions{Sync: true}))
}

// compatCheckLDBReads runs ldb checkconsistency and scan on a copy of dir
// and requires the scan to equal want.
func compatCheckLDBReads(t *testing.T, dir, want string) {
	t.Helper()
	cp := compatCopyDir(t, dir)
	// The MANIFEST and WALs as Strata wrote them decode with RocksDB's
	// dumpers (before ldb opens the DB and replaces them).
	current, err := os.ReadFile(filepath.Join(cp, "CURRENT"))
	require.NoError(t, err)
	manifest := strings.TrimSuffix(string(current), "\n")
	require.Contains(t, runLDB(t, "manifest_dump", "--path="+filepath.Join(cp, manifest)), "comparator: leveldb.BytewiseComparator")
	logs, err := filepath.Glob(filepath.Join(cp, "*.log"))
	require.NoError(t, err)
	for _, l := range logs {
		runLDB(t, "dump_wal", "--walfile="+l, "--header")
	}
	require.Contains(t, runLDB(t, "--db="+cp, "checkconsistency"), "OK")
	require.Equal(t, want, runLDB(t, "--db="+cp, "scan", "--hex"))
}

// TestCompatLDBReadsStrataDirectory: RocksDB's ldb accepts directories
// Strata wrote, both while the DB is open (unflushed writes in the WAL) and
// after Close, and lists exactly Strata's live keys and values.
func TestCompatLDBReadsStrataDirectory(t *testing.T) {
	compatLDB(t)
	for _, opts := range []*Options{
		{CreateIfMissing: true},
		{CreateIfMissing: true, Compression: SnappyCompression, BloomBitsPerKey: 10, PrefixExtractor: prefix.Fixed(4)},
		{CreateIfMissing: true, Compression: ZstdCompression, CompactionStyle: FIFOCompaction},
	} {
		dir := t.TempDir()
		d, err := Open(dir, opts)
		require.NoError(t, err)
		compatFill(t, d)
		want, err := compatScan(t, d)
		require.NoError(t, err)
		require.Contains(t, want, "0x7A7A7A2D77616C2D6F6E6C79 : 0x73796E636564\n")
		compatCheckLDBReads(t, dir, want) // copied while open: the WAL holds the tail
		require.NoError(t, d.Close())
		compatCheckLDBReads(t, dir, want)
	}
}

// TestCompatRoundTripWithLDB: Strata writes, ldb adds keys and compacts,
// Strata reopens and sees both, writes again, and ldb sees everything.
func TestCompatRoundTripWithLDB(t *testing.T) {
	compatLDB(t)
	dir := t.TempDir()
	d, err := Open(dir, &Options{CreateIfMissing: true, Compression: SnappyCompression})
	require.NoError(t, err)
	compatFill(t, d)
	require.NoError(t, d.Close())

	runLDB(t, "--db="+dir, "put", "--hex", "0x6C64622D6B6579", "0x6C64622D76616C7565") // ldb-key → ldb-value
	runLDB(t, "--db="+dir, "put", "--hex", "0x6B65793030303031", "0x667261672D6C6462") // overwrite key00001
	runLDB(t, "--db="+dir, "delete", "--hex", "0x6B65793030303032")                    // delete key00002
	runLDB(t, "--db="+dir, "compact")

	d, err = Open(dir, &Options{Compression: SnappyCompression})
	require.NoError(t, err)
	for k, v := range map[string]string{"ldb-key": "ldb-value", "key00001": "frag-ldb", "key00005": "overwritten", "zzz-wal-only": "synced", "key00599": "value-599-2"} {
		got, err := d.Get([]byte(k), nil)
		require.NoError(t, err, k)
		require.Equal(t, v, string(got), k)
	}
	for _, k := range []string{"key00002", "key00012", "key00201", "key00302", "key00400"} {
		_, err := d.Get([]byte(k), nil)
		require.ErrorIs(t, err, ErrNotFound, k)
	}
	// ldb rewrote the OPTIONS file with its own settings (a merge operator).
	require.Contains(t, d.optionsFileReport(), "merge_operator=")
	require.NoError(t, d.Put([]byte("strata-again"), []byte("yes"), nil))
	want, err := compatScan(t, d)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	require.Contains(t, want, "0x6C64622D6B6579 : 0x6C64622D76616C7565\n")
	require.Equal(t, want, runLDB(t, "--db="+dir, "scan", "--hex"))
}
