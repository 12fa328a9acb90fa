package table

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/prefix"
	"github.com/stretchr/testify/require"
)

func TestExternalWriterRefusesUnorderedKeys(t *testing.T) {
	var buf bytes.Buffer
	w := NewExternalWriter(&buf, ExternalWriterOptions{})
	require.NoError(t, w.Put([]byte("b"), []byte("1")))
	err := w.Put([]byte("a"), []byte("2"))
	require.True(t, errors.Is(err, ErrInvalidArgument), "%v", err)
	require.Contains(t, err.Error(), `"a"`)
	require.Contains(t, err.Error(), "out of order")
	err = w.Delete([]byte("b"))
	require.True(t, errors.Is(err, ErrInvalidArgument), "%v", err)
	require.Contains(t, err.Error(), "duplicate")
	// The writer stays usable after an out-of-order key.
	require.NoError(t, w.Put([]byte("c"), nil))
	err = w.DeleteRange([]byte("z"), []byte("y"))
	require.True(t, errors.Is(err, ErrInvalidArgument), "%v", err)
	require.NoError(t, w.DeleteRange([]byte("k"), []byte("k"))) // empty: nothing added
	info, err := w.Finish()
	require.NoError(t, err)
	require.Equal(t, uint64(2), info.NumEntries)
	require.Zero(t, info.NumRangeDeletions)
	_, err = w.Finish()
	require.True(t, errors.Is(err, ErrInvalidArgument), "%v", err)

	_, err = NewExternalWriter(&buf, ExternalWriterOptions{}).Finish()
	require.True(t, errors.Is(err, ErrInvalidArgument), "empty file: %v", err)
}

type extEntry struct {
	key, value string
	kind       base.Kind
}

// writeExternal writes n puts (every 7th a delete) and two range deletions.
func writeExternal(t *testing.T, opts ExternalWriterOptions, n int) ([]byte, ExternalFileInfo, []extEntry) {
	t.Helper()
	var buf bytes.Buffer
	w := NewExternalWriter(&buf, opts)
	var want []extEntry
	require.NoError(t, w.DeleteRange([]byte("k0500"), []byte("k0510")))
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("k%04d", i)
		if i%7 == 3 {
			require.NoError(t, w.Delete([]byte(k)))
			want = append(want, extEntry{k, "", base.KindDelete})
			continue
		}
		v := fmt.Sprintf("value-%d", i)
		require.NoError(t, w.Put([]byte(k), []byte(v)))
		want = append(want, extEntry{k, v, base.KindSet})
	}
	require.NoError(t, w.DeleteRange([]byte("a"), []byte("b")))
	info, err := w.Finish()
	require.NoError(t, err)
	return buf.Bytes(), info, want
}

type bytesFile struct{ *bytes.Reader }

func (bytesFile) Close() error { return nil }

func TestExternalWriterReadBack(t *testing.T) {
	data, info, want := writeExternal(t, ExternalWriterOptions{BlockSize: 256, BloomBitsPerKey: 10,
		PrefixExtractor: prefix.Fixed(3), Compression: SnappyCompression}, 1000)
	require.Equal(t, uint64(len(data)), info.Size)
	require.Equal(t, "k0000", string(info.Smallest))
	require.Equal(t, "k0999", string(info.Largest))
	require.Equal(t, uint64(1000), info.NumEntries)
	require.Equal(t, "a", string(info.SmallestRangeDel))
	require.Equal(t, "k0510", string(info.LargestRangeDel))
	require.Equal(t, uint64(2), info.NumRangeDeletions)

	for _, global := range []uint64{0, 42} {
		r, err := Open(bytesFile{bytes.NewReader(data)}, int64(len(data)), ReaderOptions{FileName: "ext.sst", LargestSeqNum: global})
		require.NoError(t, err)
		p := r.Properties()
		require.Equal(t, uint32(ExternalFileVersion), p.ExternalSSTVersion)
		require.True(t, p.HasGlobalSeqNo)
		require.Zero(t, p.GlobalSeqNo)
		g, ok := r.GlobalSeqNum()
		require.True(t, ok)
		require.Equal(t, global, g)
		it := r.NewIter()
		i := 0
		for ok := it.First(); ok; ok = it.Next() {
			k := it.Key()
			require.Less(t, i, len(want))
			require.Equal(t, want[i].key, string(k.UserKey))
			require.Equal(t, want[i].kind, k.Kind())
			require.Equal(t, base.SeqNum(global), k.SeqNum())
			require.Equal(t, want[i].value, string(it.Value()))
			i++
		}
		require.NoError(t, it.Close())
		require.Equal(t, len(want), i)
		for _, ts := range r.Tombstones() {
			require.Equal(t, base.SeqNum(global), ts.Seq)
		}
		// Get sees the table at snapshots above its global sequence number
		// only.
		v, kind, seq, found, err := r.Get([]byte("k0001"), base.SeqNum(global)+1)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, base.KindSet, kind)
		require.Equal(t, base.SeqNum(global), seq)
		require.Equal(t, "value-1", string(v))
		if global > 0 {
			_, _, _, found, err = r.Get([]byte("k0001"), base.SeqNum(global))
			require.NoError(t, err)
			require.False(t, found)
		}
		require.NoError(t, r.Close())
	}
}

// The external-file properties are checked as RocksDB checks them.
func TestExternalGlobalSeqnoRules(t *testing.T) {
	ext := []Property{{Name: propExternalVersion}}
	for _, tc := range []struct {
		name     string
		props    Properties
		largest  uint64
		want     uint64
		has, bad bool
	}{
		{name: "ordinary", props: Properties{}},
		{name: "ordinary-with-seqno", props: Properties{HasGlobalSeqNo: true, GlobalSeqNo: 3}, bad: true},
		{name: "v1", props: Properties{Raw: ext, ExternalSSTVersion: 1}},
		{name: "v3", props: Properties{Raw: ext, ExternalSSTVersion: 3}, bad: true},
		{name: "v2-from-manifest", props: Properties{Raw: ext, ExternalSSTVersion: 2, HasGlobalSeqNo: true},
			largest: 7, want: 7, has: true},
		{name: "v2-in-file", props: Properties{Raw: ext, ExternalSSTVersion: 2, HasGlobalSeqNo: true, GlobalSeqNo: 7},
			largest: 7, want: 7, has: true},
		{name: "v2-standalone", props: Properties{Raw: ext, ExternalSSTVersion: 2, HasGlobalSeqNo: true, GlobalSeqNo: 7},
			want: 7, has: true},
		{name: "v2-mismatch", props: Properties{Raw: ext, ExternalSSTVersion: 2, HasGlobalSeqNo: true, GlobalSeqNo: 9},
			largest: 5, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.props
			r := &Reader{cmp: base.DefaultComparer, props: &p, opts: ReaderOptions{FileName: "x.sst", LargestSeqNum: tc.largest}}
			err := r.setGlobalSeq()
			if tc.bad {
				require.True(t, errors.Is(err, ErrCorruption), "%v", err)
				require.Contains(t, err.Error(), "x.sst")
				return
			}
			require.NoError(t, err)
			g, has := r.GlobalSeqNum()
			require.Equal(t, tc.has, has)
			require.Equal(t, tc.want, g)
		})
	}
}

func ldbPath(t *testing.T) string {
	p, err := exec.LookPath("ldb")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("ldb not found (CI=true; install rocksdb-tools 7.8.3): %v", err)
	}
	t.Skipf("ldb not found (install rocksdb-tools 7.8.3 to run): %v", err)
	return ""
}

func runTool(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	require.NoError(t, err, "%s %v: %s%s", bin, args, out.String(), errOut.String())
	return out.String() + errOut.String()
}

// RocksDB judges the files: sst_dump verifies them and ldb ingests them
// into a RocksDB database whose scan shows exactly the live keys.
func TestExternalWriterRocksDBIngests(t *testing.T) {
	ldb := ldbPath(t)
	sstDump := sstDumpPath(t)
	for _, tc := range []struct {
		name string
		opts ExternalWriterOptions
	}{
		{"plain", ExternalWriterOptions{}},
		{"snappy-bloom-prefix", ExternalWriterOptions{BlockSize: 512, Compression: SnappyCompression,
			BloomBitsPerKey: 10, PrefixExtractor: prefix.Fixed(2)}},
		{"zstd", ExternalWriterOptions{Compression: ZSTDCompression}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, _, want := writeExternal(t, tc.opts, 600)
			dir := t.TempDir()
			path := filepath.Join(dir, "ext.sst")
			require.NoError(t, os.WriteFile(path, data, 0o644))
			out, _ := runSSTDump(sstDump, "--file="+path, "--command=verify")
			require.Contains(t, out, "The file is ok", out)
			require.NotContains(t, out, "Corruption", out)

			dbDir := filepath.Join(dir, "rocks")
			runTool(t, ldb, "--db="+dbDir, "--create_if_missing", "put", "a5", "old")
			runTool(t, ldb, "--db="+dbDir, "put", "zzz", "kept")
			out = runTool(t, ldb, "--db="+dbDir, "ingest_extern_sst", path)
			require.NotContains(t, out, "Failed", out)
			scan := runTool(t, ldb, "--db="+dbDir, "scan")
			var exp strings.Builder
			for _, e := range want {
				// [k0500, k0510) is deleted by the file's own range
				// deletion, which at the same sequence number does not
				// hide the file's own entries; "a5" is hidden by [a, b).
				if e.kind == base.KindSet {
					fmt.Fprintf(&exp, "%s : %s\n", e.key, e.value)
				}
			}
			exp.WriteString("zzz : kept\n")
			require.Equal(t, exp.String(), scan)
		})
	}
}

// RocksDB writes the global sequence number into the properties block in
// place, leaving the block checksum as it was: such a file reads at that
// sequence number, and any other damage to the block is still caught.
func TestExternalGlobalSeqnoWrittenInPlace(t *testing.T) {
	data, _, _ := writeExternal(t, ExternalWriterOptions{}, 50)
	r, err := Open(bytesFile{bytes.NewReader(data)}, int64(len(data)), ReaderOptions{FileName: "ext.sst"})
	require.NoError(t, err)
	h := r.metaHandles[metaProperties]
	require.NoError(t, r.Close())
	block := data[h.offset : h.offset+h.size]
	var it blockIter
	require.True(t, it.init(block, bytes.Compare))
	off := -1
	for ok := it.first(); ok; ok = it.next() {
		if string(it.key) == propGlobalSeqNo {
			off = int(h.offset) + cap(block) - cap(it.value())
		}
	}
	require.Positive(t, off)
	patched := bytes.Clone(data)
	patched[off] = 77
	r, err = Open(bytesFile{bytes.NewReader(patched)}, int64(len(patched)), ReaderOptions{FileName: "ext.sst", LargestSeqNum: 77})
	require.NoError(t, err)
	g, ok := r.GlobalSeqNum()
	require.True(t, ok)
	require.Equal(t, uint64(77), g)
	it2 := r.NewIter()
	require.True(t, it2.First())
	require.Equal(t, base.SeqNum(77), it2.Key().SeqNum())
	require.NoError(t, it2.Close())
	require.NoError(t, r.Close())

	patched[off-1] ^= 0x40 // damage outside the value: refused
	_, err = Open(bytesFile{bytes.NewReader(patched)}, int64(len(patched)), ReaderOptions{FileName: "ext.sst", LargestSeqNum: 77})
	require.True(t, errors.Is(err, ErrCorruption), "%v", err)
}
