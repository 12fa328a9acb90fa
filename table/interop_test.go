package table

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/checksum"
	"github.com/stratadb/strata/prefix"
	"github.com/stretchr/testify/require"
)

// sstDumpPath finds RocksDB's sst_dump. Without it the interop tests skip,
// except under CI (CI=true), where the tools are installed and a missing
// binary is a failure.
func sstDumpPath(t *testing.T) string {
	p, err := exec.LookPath("sst_dump")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("sst_dump not found (CI=true; install rocksdb-tools 7.8.3): %v", err)
	}
	t.Skipf("sst_dump not found (install rocksdb-tools 7.8.3 to run): %v", err)
	return ""
}

// runSSTDump runs sst_dump and returns stdout and stderr; the exit status
// is not a verdict (sst_dump exits 0 on checksum mismatches).
func runSSTDump(bin string, args ...string) (string, string) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(&errOut, "[exit: %v]", err)
	}
	return out.String(), errOut.String()
}

// interopModel returns ~n point entries over binary user keys (NUL and
// 0xff bytes included) with every point kind; some user keys have several
// versions, so that with small blocks user keys straddle block boundaries
// (internal-key index at format_version >= 3).
func interopModel(rng *rand.Rand, n int) []kv {
	var out []kv
	seq := base.SeqNum(100)
	for i := 0; len(out) < n; i++ {
		uk := []byte(fmt.Sprintf("p%03d", i/7))
		uk = append(uk, byte(i), 0x00, 0xff, byte(rng.Intn(256)))
		versions := 1
		if i%5 == 0 {
			versions = 4
		}
		for v := 0; v < versions; v++ {
			kind := []base.Kind{base.KindSet, base.KindSet, base.KindSet, base.KindDelete,
				base.KindSingleDelete, base.KindMerge}[rng.Intn(6)]
			var val []byte
			if kind == base.KindSet || kind == base.KindMerge {
				val = make([]byte, rng.Intn(120))
				rng.Read(val[:len(val)/2]) // half random, half zeros: compressible
			}
			out = append(out, kv{base.MakeInternalKey(uk, seq, kind), val})
			seq++
		}
	}
	sort.Slice(out, func(i, j int) bool { return base.InternalCompare(out[i].key, out[j].key) < 0 })
	return out
}

// interopCase is one table configuration.
type interopCase struct {
	name  string
	opts  WriterOptions
	tombs bool
}

// interopCases covers format_version 2..5 x every writable compression x
// every checksum type, plus format_version 1 once per compression; filter, prefix extractor, whole-key filtering and
// range tombstones cycle with the index so that each format version sees
// every combination of them.
func interopCases() []interopCase {
	comps := []Compression{NoCompression, SnappyCompression, ZlibCompression, LZ4Compression, ZSTDCompression}
	sums := []checksum.Type{checksum.None, checksum.CRC32C, checksum.XXHash, checksum.XXHash64, checksum.XXH3}
	var out []interopCase
	i := 0
	for fv := uint32(1); fv <= 5; fv++ {
		for _, c := range comps {
			for j, cs := range sums {
				if fv == 1 && j != int(c)%len(sums) {
					continue // fv 1 (legacy size prefixes): one checksum per compression
				}
				filter, pfx, tombs := i&1 != 0, i&2 != 0, i&4 != 0
				o := WriterOptions{FormatVersion: fv, Compression: c, Checksum: cs,
					NoChecksum: cs == checksum.None, BlockSize: 512, WholeKeyFiltering: true,
					FileNumber: uint64(i + 1), CreationTime: 1700000000, DBIdentity: "interop",
					DBSessionID: "ABCDEFGHIJKLMNOPQRST", HostIdentity: "test"}
				if filter {
					o.BloomBitsPerKey = 10
					o.WholeKeyFiltering = !pfx || i&8 != 0
				}
				if pfx {
					o.PrefixExtractor = prefix.Fixed(4)
				}
				name := fmt.Sprintf("fv%d-%s-%s-filter%t-prefix%t-whole%t-tombs%t",
					fv, c, cs, filter, pfx, o.WholeKeyFiltering, tombs)
				out = append(out, interopCase{name: name, opts: o, tombs: tombs})
				i++
			}
		}
	}
	return out
}

var interopTombs = []base.Tombstone{
	{Start: []byte("p010"), End: []byte("p020"), Seq: 5000},
	{Start: []byte("p015"), End: []byte("p030\x00"), Seq: 5001},
	{Start: []byte("p040"), End: []byte("p041"), Seq: 50},
}

// sstDumpScan is what `sst_dump --command=scan --output_hex` prints for a
// table holding model: one line per entry.
func sstDumpScan(model []kv) string {
	var b strings.Builder
	for _, e := range model {
		fmt.Fprintf(&b, "'%X' seq:%d, type:%d => %X\n", e.key.UserKey, e.key.SeqNum(), e.key.Kind(), e.val)
	}
	return b.String()
}

// TestInterop_SSTDump writes tables in every supported configuration and
// has RocksDB 7.8.3's sst_dump verify, iterate and list them.
func TestInterop_SSTDump(t *testing.T) {
	bin := sstDumpPath(t)
	dir := t.TempDir()
	model := interopModel(rand.New(rand.NewSource(1)), 300)
	wantScan := sstDumpScan(model)

	// The cases run in parallel (-parallel, default GOMAXPROCS).
	for _, tc := range interopCases() {
		t.Run(tc.name, func(t *testing.T) {
			var tombs []base.Tombstone
			if tc.tombs {
				tombs = interopTombs
			}
			f, _ := buildTable(t, model, tombs, tc.opts)
			path := filepath.Join(dir, tc.name+".sst")
			require.NoError(t, os.WriteFile(path, f.b, 0o644))
			r := openMem(t, f, nil)
			props := *r.Properties()
			require.NoError(t, r.Close())
			t.Parallel()
			checkWithSSTDump(t, bin, path, wantScan)
			checkSSTDumpProperties(t, bin, path, &props, tc, len(model), len(tombs))
		})
	}
}

// checkWithSSTDump runs verify, check and scan on path.
func checkWithSSTDump(t *testing.T, bin, path, wantScan string) {
	out, errOut := runSSTDump(bin, "--file="+path, "--command=verify", "--verify_checksum")
	require.Empty(t, errOut, "verify stderr")
	require.Contains(t, out, "The file is ok\n")

	_, errOut = runSSTDump(bin, "--file="+path, "--command=check", "--verify_checksum")
	require.Empty(t, errOut, "check stderr")

	out, errOut = runSSTDump(bin, "--file="+path, "--command=scan", "--output_hex", "--verify_checksum")
	require.Empty(t, errOut, "scan stderr")
	_, body, ok := strings.Cut(out, "from [] to []\n")
	require.True(t, ok, "scan header missing: %.300s", out)
	gotLines := strings.SplitAfter(body, "\n")
	wantLines := strings.SplitAfter(wantScan, "\n")
	require.Equal(t, len(wantLines), len(gotLines), "scan line count")
	for i := range wantLines {
		require.Equal(t, wantLines[i], gotLines[i], "scan line %d", i)
	}
}

var propLine = regexp.MustCompile(`(?m)^  (#? ?[^:\n]+): (.*)$`)

// checkSSTDumpProperties compares sst_dump --show_properties with what we
// wrote and read back.
func checkSSTDumpProperties(t *testing.T, bin, path string, p *Properties, tc interopCase, points, tombs int) {
	out, errOut := runSSTDump(bin, "--file="+path, "--show_properties")
	require.Empty(t, errOut)
	got := map[string]string{}
	for _, m := range propLine.FindAllStringSubmatch(out, -1) {
		got[m[1]] = m[2]
	}
	o := tc.opts
	policy, pe, whole, prefixFlag := "N/A", "nullptr", "0x30", "0x30"
	if o.BloomBitsPerKey > 0 {
		policy = "bloomfilter"
	}
	if o.PrefixExtractor != nil {
		pe, prefixFlag = o.PrefixExtractor.Name(), "0x31"
	}
	if o.WholeKeyFiltering {
		whole = "0x31"
	}
	fvAtLeast4 := 0
	if o.FormatVersion >= 4 {
		fvAtLeast4 = 1
	}
	userKeyIndex := 0
	if p.IndexKeyIsUserKey {
		userKeyIndex = 1
	}
	for k, v := range map[string]string{
		"# entries":                 fmt.Sprint(points + tombs),
		"# range deletions":         fmt.Sprint(tombs),
		"# data blocks":             fmt.Sprint(p.NumDataBlocks),
		"data block size":           fmt.Sprint(p.DataSize),
		"filter block size":         fmt.Sprint(p.FilterSize),
		"# entries for filter":      fmt.Sprint(p.NumFilterEntries),
		"filter policy name":        policy,
		"prefix extractor name":     pe,
		"comparator name":           base.ComparatorName,
		"column family name":        "default",
		"merge operator name":       "nullptr",
		"SST file compression algo": o.Compression.String(),
		"original file number":      fmt.Sprint(o.FileNumber),
		"creation time":             "1700000000",
		"DB identity":               "interop",
		"DB session identity":       "ABCDEFGHIJKLMNOPQRST",
		"DB host id":                "test",
		"# rocksdb.block.based.table.whole.key.filtering":                                         whole,
		"# rocksdb.block.based.table.prefix.filtering":                                            prefixFlag,
		"# rocksdb.block.based.table.index.type":                                                  "0x00000000",
		fmt.Sprintf("index block size (user-key? %d, delta-value? %d)", userKeyIndex, fvAtLeast4): fmt.Sprint(p.IndexSize),
	} {
		require.Equal(t, v, got[k], "property %q in\n%s", k, out)
	}
	require.Greater(t, p.NumDataBlocks, uint64(3), "tables should span several blocks")
}

// TestInterop_SSTDumpDetectsDamage is the negative control: sst_dump must
// report a flipped byte in a data block of a table we wrote.
func TestInterop_SSTDumpDetectsDamage(t *testing.T) {
	bin := sstDumpPath(t)
	model := interopModel(rand.New(rand.NewSource(2)), 300)
	f, _ := buildTable(t, model, nil, WriterOptions{Compression: SnappyCompression, BlockSize: 512})
	f.b[20] ^= 0x01
	path := filepath.Join(t.TempDir(), "damaged.sst")
	require.NoError(t, os.WriteFile(path, f.b, 0o644))
	out, errOut := runSSTDump(bin, "--file="+path, "--command=verify", "--verify_checksum")
	require.NotContains(t, out, "The file is ok")
	require.Contains(t, errOut, "Corruption")
}

// indexEntries decodes r's index block: separator keys and handles.
func indexEntries(t *testing.T, r *Reader) (keys []string, handles []blockHandle) {
	var it blockIter
	require.True(t, r.initIndexIter(&it, r.index, false, false))
	for ok := it.first(); ok; ok = it.next() {
		keys = append(keys, string(it.key))
		handles = append(handles, it.handle)
	}
	require.False(t, it.corrupt)
	return keys, handles
}

// TestInterop_SameBytesAsRocksDB rewrites the entries of tables RocksDB
// wrote with the same options and compares the encodings that do not
// depend on the compression library: the filter block (legacy Bloom at
// fv 2 and 4, FastLocalBloom at fv 5, with and without prefixes), every
// index separator and handle but the last (db_bench shortens the last key
// to a successor, kShortenSeparatorsAndSuccessor; we keep it, the library
// default) and, without compression, every data block byte.
func TestInterop_SameBytesAsRocksDB(t *testing.T) {
	for _, c := range []struct {
		name  string
		comp  Compression
		bloom int
		pe    prefix.Extractor
	}{
		{"fv5-xxh3-none-nofilter-000009", NoCompression, 0, nil},
		{"fv5-xxh3-snappy-bloom10-000009", SnappyCompression, 10, nil},
		{"fv5-crc32c-zstd-bloom10-prefix12-000009", ZSTDCompression, 10, prefix.Fixed(12)},
		{"fv4-xxhash-zlib-bloom10-000009", ZlibCompression, 10, nil},
		{"fv2-crc32c-snappy-bloom10-000009", SnappyCompression, 10, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := "testdata/rocksdb/" + c.name + ".sst"
			theirs := openFixture(t, path)
			defer theirs.Close()
			p := theirs.Properties()
			ours, ourBytes := rewriteTable(t, theirs, WriterOptions{FormatVersion: p.FormatVersion, Checksum: p.ChecksumType,
				Compression: c.comp, BloomBitsPerKey: c.bloom, WholeKeyFiltering: p.WholeKeyFiltering,
				PrefixExtractor: c.pe})
			defer ours.Close()

			require.Equal(t, theirs.filter, ours.filter, "filter block")
			require.Equal(t, p.NumDataBlocks, ours.Properties().NumDataBlocks)
			tk, th := indexEntries(t, theirs)
			ok, oh := indexEntries(t, ours)
			require.Equal(t, len(tk), len(ok))
			require.Equal(t, tk[:len(tk)-1], ok[:len(ok)-1], "index separators")
			// The index size property counts the uncompressed block (and
			// one trailer), whose last key is theirs' successor.
			d := len(ok[len(ok)-1]) - len(tk[len(tk)-1])
			require.Equal(t, int(p.IndexSize)+d, int(ours.Properties().IndexSize), "index size")
			if c.comp == NoCompression {
				require.Equal(t, th, oh, "index handles")
				want, err := os.ReadFile(path)
				require.NoError(t, err)
				require.Equal(t, p.DataSize, ours.Properties().DataSize)
				require.True(t, bytes.Equal(want[:p.DataSize], ourBytes[:p.DataSize]), "data blocks differ")
			}
		})
	}
}

// TestInterop_CasesReadBack reads every interop configuration back with our
// own Reader (no sst_dump needed): fv 1 with zlib once wrote a size prefix
// that neither reader accepts.
func TestInterop_CasesReadBack(t *testing.T) {
	model := interopModel(rand.New(rand.NewSource(1)), 300)
	for _, tc := range interopCases() {
		var tombs []base.Tombstone
		if tc.tombs {
			tombs = interopTombs
		}
		f, _ := buildTable(t, model, tombs, tc.opts)
		r := openMem(t, f, nil)
		require.NoError(t, r.VerifyChecksums(), tc.name)
		it := r.NewIter()
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			require.Equal(t, model[n].key, it.Key(), tc.name)
			n++
		}
		require.NoError(t, it.Close())
		require.Equal(t, len(model), n, tc.name)
		require.Len(t, r.Tombstones(), len(tombs), tc.name)
		require.NoError(t, r.Close())
	}
}

// rewriteTable writes every entry of theirs into a new in-memory table with
// o, and returns it opened and its bytes.
func rewriteTable(t *testing.T, theirs *Reader, o WriterOptions) (*Reader, []byte) {
	t.Helper()
	f := &memFile{}
	w := NewWriter(f, o)
	it := theirs.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
		require.NoError(t, w.Add(it.Key().Clone(), bytes.Clone(it.Value())))
	}
	require.NoError(t, it.Close())
	_, err := w.Finish()
	require.NoError(t, err)
	return openMem(t, f, nil), f.b
}
