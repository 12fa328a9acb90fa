package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/prefix"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

const fixtureDir = "../../table/testdata/rocksdb"

// sstdump runs realMain and returns its exit status, stdout and stderr.
func sstdump(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := realMain(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// expectations reads the name=value fields of a fixture's expected.txt.
func expectations(t *testing.T, path string) map[string]string {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "footer: format version: "); ok {
			m["footer: format version: "] = v
		} else if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			if fs := strings.Fields(v); len(fs) > 0 {
				m[k] = fs[0]
			}
		}
	}
	require.NoError(t, sc.Err())
	return m
}

// originalName is the bare name sst_dump saw when the fixture's
// expectations were recorded: the part after the last '-'.
func originalName(path string) string {
	b := filepath.Base(path)
	return b[strings.LastIndexByte(b, '-')+1:]
}

// replaceFirstLine swaps the "Process F" line for "Process name".
func replaceFirstLine(out, name string) string {
	_, rest, _ := strings.Cut(out, "\n")
	return "Process " + name + "\n" + rest
}

// TestFixtures runs scan, properties and verify on every table RocksDB
// 7.8.3 wrote and compares with what sst_dump printed for it.
func TestFixtures(t *testing.T) {
	files, err := filepath.Glob(fixtureDir + "/*.sst")
	require.NoError(t, err)
	require.Len(t, files, 22)
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			stem := strings.TrimSuffix(path, ".sst")
			exp := expectations(t, stem+".expected.txt")
			name := originalName(path)
			require.NotEmpty(t, exp["footer: format version: "])

			code, out, errOut := sstdump("-file="+path, "-command=scan", "-output_hex")
			require.Equal(t, 0, code, errOut)
			require.Empty(t, errOut)
			sum := sha256.Sum256([]byte(replaceFirstLine(out, name)))
			require.Equal(t, exp["scan_stdout_sha256"], hex.EncodeToString(sum[:]))
			require.Equal(t, exp["scan_entries"], fmt.Sprint(strings.Count(out, "\n")-3))

			code, out, errOut = sstdump("-file="+path, "-command=properties")
			require.Equal(t, 0, code, errOut)
			want, err := os.ReadFile(stem + ".properties.txt")
			require.NoError(t, err)
			require.Equal(t, dropUniqueID(sectionFrom(string(want), "Table Properties:")),
				sectionUntil(sectionFrom(out, "Table Properties:"), "Footer\n"))
			require.Contains(t, out, "  format version: "+exp["footer: format version: "])

			code, out, errOut = sstdump("-file="+path, "-command=verify")
			require.Equal(t, 0, code, errOut)
			require.Empty(t, errOut)
			require.Equal(t, "Process "+path+"\nSst file format: block-based\nThe file is ok\n", out)
		})
	}
}

func sectionFrom(s, marker string) string {
	i := strings.Index(s, marker)
	if i < 0 {
		return ""
	}
	return s[i:]
}

func sectionUntil(s, marker string) string {
	if i := strings.Index(s, marker); i >= 0 {
		return s[:i]
	}
	return s
}

func dropUniqueID(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "  unique ID: ") {
			b.WriteString(l)
		}
	}
	return b.String()
}

type entry struct {
	key base.InternalKey
	val []byte
}

// writeTable writes entries with table.Writer to a file in dir.
func writeTable(t *testing.T, dir string, es []entry, tombs []base.Tombstone, opts table.WriterOptions) string {
	path := filepath.Join(dir, "000007.sst")
	f, err := os.Create(path)
	require.NoError(t, err)
	w := table.NewWriter(f, opts)
	for _, e := range es {
		require.NoError(t, w.Add(e.key, e.val))
	}
	for _, ts := range tombs {
		require.NoError(t, w.AddTombstone(ts))
	}
	_, err = w.Finish()
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return path
}

func testEntries(n int) []entry {
	es := make([]entry, n)
	for i := range es {
		k := []byte(fmt.Sprintf("key%05d", i))
		kind := base.KindSet
		var v []byte
		if i%10 == 3 {
			kind = base.KindDelete
		} else {
			v = bytes.Repeat([]byte{byte('a' + i%26)}, i%50)
		}
		es[i] = entry{base.MakeInternalKey(k, base.SeqNum(1000+i), kind), v}
	}
	return es
}

// TestOurTables scans, verifies and describes tables written by
// table.Writer.
func TestOurTables(t *testing.T) {
	es := testEntries(500)
	tombs := []base.Tombstone{{Start: []byte("key00100"), End: []byte("key00200"), Seq: 5000}}
	path := writeTable(t, t.TempDir(), es, tombs, table.WriterOptions{
		Compression: table.SnappyCompression, BloomBitsPerKey: 10, WholeKeyFiltering: true,
		PrefixExtractor: prefix.Fixed(5), FileNumber: 7, BlockSize: 512})

	var hexWant, rawWant strings.Builder
	for _, e := range es {
		k := e.key
		fmt.Fprintf(&hexWant, "'%X' seq:%d, type:%d => %X\n", k.UserKey, k.SeqNum(), k.Kind(), e.val)
		fmt.Fprintf(&rawWant, "'%s' seq:%d, type:%d => %s\n", k.UserKey, k.SeqNum(), k.Kind(), e.val)
	}
	header := "Process " + path + "\nSst file format: block-based\nfrom [] to []\n"
	code, out, errOut := sstdump("-file="+path, "-output_hex")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, header+hexWant.String(), out)
	code, out, errOut = sstdump("-file="+path, "-command=scan")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, header+rawWant.String(), out)

	code, out, errOut = sstdump("-file="+path, "-command=verify")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "The file is ok\n")

	code, out, errOut = sstdump("-file="+path, "-command=properties")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{
		"  # entries: 501\n", "  # deletions: 51\n", "  # range deletions: 1\n",
		"  filter policy name: bloomfilter\n", "  prefix extractor name: rocksdb.FixedPrefix.5\n",
		"  comparator name: leveldb.BytewiseComparator\n", "  SST file compression algo: Snappy\n",
		"  original file number: 7\n", "  # rocksdb.block.based.table.prefix.filtering: 0x31\n",
		"  format version: 5\n", "  checksum type: kXXH3\n",
	} {
		require.Contains(t, out, want)
	}
}

func TestScanRange(t *testing.T) {
	path := writeTable(t, t.TempDir(), testEntries(50), nil, table.WriterOptions{})
	lines := func(args ...string) []string {
		code, out, errOut := sstdump(append([]string{"-file=" + path}, args...)...)
		require.Equal(t, 0, code, errOut)
		return strings.Split(strings.TrimSuffix(out, "\n"), "\n")[2:]
	}
	got := lines("-from=key00010", "-to=key00013")
	require.Equal(t, []string{
		"from [key00010] to [key00013]",
		"'key00010' seq:1010, type:1 => kkkkkkkkkk",
		"'key00011' seq:1011, type:1 => lllllllllll",
		"'key00012' seq:1012, type:1 => mmmmmmmmmmmm",
	}, got)
	got = lines("-input_key_hex", "-from=0x6B65793030303438", "-output_hex")
	require.Equal(t, []string{
		"from [6B65793030303438] to []",
		"'6B65793030303438' seq:1048, type:1 => " + strings.Repeat("77", 48),
		"'6B65793030303439' seq:1049, type:1 => " + strings.Repeat("78", 49),
	}, got)
	got = lines("-from=key00040x", "-read_num=2")
	require.Len(t, got, 3)
	require.True(t, strings.HasPrefix(got[1], "'key00041' "))
	// A NUL byte ends the key part and the value, as in sst_dump.
	nul := writeTable(t, t.TempDir(), []entry{
		{base.MakeInternalKey([]byte("a\x00b"), 1, base.KindSet), []byte("x\x00y")}}, nil, table.WriterOptions{})
	code, out, _ := sstdump("-file=" + nul)
	require.Equal(t, 0, code)
	require.True(t, strings.HasSuffix(out, "\n'a => x\n"), "%q", out)
}

// TestDamaged flips bytes and truncates a table: verify must fail.
func TestDamaged(t *testing.T) {
	dir := t.TempDir()
	path := writeTable(t, dir, testEntries(300), nil, table.WriterOptions{
		Compression: table.ZSTDCompression, BloomBitsPerKey: 10, WholeKeyFiltering: true})
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, off := range []int{10, len(good) / 2, len(good) - 60, len(good) - 1} {
		bad := bytes.Clone(good)
		bad[off] ^= 0x40
		p := filepath.Join(dir, fmt.Sprintf("bad-%d.sst", off))
		require.NoError(t, os.WriteFile(p, bad, 0o644))
		code, out, errOut := sstdump("-file="+p, "-command=verify")
		require.Equal(t, 1, code, "offset %d: %s", off, out)
		require.NotContains(t, out, "The file is ok")
		require.True(t, strings.HasPrefix(errOut, p+" is corrupted: "), errOut)
	}
	p := filepath.Join(dir, "short.sst")
	require.NoError(t, os.WriteFile(p, good[:len(good)-20], 0o644))
	code, _, errOut := sstdump("-file="+p, "-command=verify")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "is corrupted")
}

func TestBadUsage(t *testing.T) {
	code, _, errOut := sstdump("-command=scan")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "-file is required")
	code, _, _ = sstdump("-file=x", "-command=raw")
	require.Equal(t, 2, code)
	code, _, _ = sstdump("-file=x", "-input_key_hex", "-from=zz")
	require.Equal(t, 2, code)
	code, _, errOut = sstdump("-file=" + filepath.Join(t.TempDir(), "missing.sst"))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "sstdump: ")
}

// TestAgainstSSTDump runs RocksDB's sst_dump and this command on a table
// we wrote: scan (raw and hex) and properties must print the same lines.
// Without sst_dump the test skips, except under CI=true.
func TestAgainstSSTDump(t *testing.T) {
	bin, err := exec.LookPath("sst_dump")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sst_dump not found (CI=true): %v", err)
		}
		t.Skipf("sst_dump not found: %v", err)
	}
	es := testEntries(200)
	es = append(es, entry{base.MakeInternalKey([]byte("z\x00bin\xff"), 7, base.KindMerge), []byte("v\x00w")})
	path := writeTable(t, t.TempDir(), es, []base.Tombstone{{Start: []byte("key1"), End: []byte("key2"), Seq: 9}},
		table.WriterOptions{Compression: table.ZSTDCompression, BloomBitsPerKey: 10,
			PrefixExtractor: prefix.Fixed(4), BlockSize: 256, FileNumber: 3})
	theirs := func(args ...string) string {
		out, err := exec.Command(bin, append([]string{"--file=" + path}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		_, rest, _ := strings.Cut(string(out), "\n") // drop "options.env is 0x..."
		return rest
	}
	for _, hexOut := range []bool{false, true} {
		args := []string{"--command=scan"}
		if hexOut {
			args = append(args, "--output_hex")
		}
		code, ours, errOut := sstdump(append([]string{"-file=" + path}, args...)...)
		require.Equal(t, 0, code, errOut)
		require.Equal(t, theirs(args...), ours, "hex=%t", hexOut)
	}
	code, ours, errOut := sstdump("-file="+path, "-command=properties")
	require.Equal(t, 0, code, errOut)
	want := dropUniqueID(sectionFrom(theirs("--show_properties"), "Table Properties:"))
	require.Equal(t, want, sectionUntil(sectionFrom(ours, "Table Properties:"), "Footer\n"))
}

// TestBlobIndexAgainstSSTDump scans a table RocksDB wrote with blob files:
// its kTypeBlobIndex entries print as RocksDB 7.8.3's sst_dump prints them
// (the index's bytes).
func TestBlobIndexAgainstSSTDump(t *testing.T) {
	bin, err := exec.LookPath("sst_dump")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sst_dump not found (CI=true): %v", err)
		}
		t.Skipf("sst_dump not found: %v", err)
	}
	path := filepath.Join("..", "..", "db", "testdata", "rocksdb-blob", "mixed", "db", "000092.sst")
	args := []string{"--command=scan", "--output_hex"}
	out, err := exec.Command(bin, append([]string{"--file=" + path}, args...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	_, theirs, _ := strings.Cut(string(out), "\n")
	code, ours, errOut := sstdump(append([]string{"-file=" + path}, args...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, theirs, ours)
	require.Contains(t, ours, ", type:17 => ")
}
