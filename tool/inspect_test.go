package tool

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/internal/version"
	"github.com/stretchr/testify/require"
)

func TestInspect_DBVerbs(t *testing.T) {
	dir := makeDB(t)
	scan := mustTool(t, "db", "scan", dir)
	live := strings.Count(scan, "\n")

	require.Contains(t, mustTool(t, "db", "lsm", dir), "level")
	props := mustTool(t, "db", "properties", dir)
	require.Contains(t, props, "rocksdb.num-files-at-level0: 3\n")

	whole, err := strconv.ParseUint(strings.TrimSpace(mustTool(t, "db", "space", dir)), 10, 64)
	require.NoError(t, err)
	require.Greater(t, whole, uint64(1000))
	require.Equal(t, "0\n", mustTool(t, "db", "space", dir, "--from=key010", "--to=key010"))

	require.Equal(t, "OK: 3 tables, "+strconv.Itoa(live)+" live keys\n", mustTool(t, "db", "check", dir))
	require.Contains(t, mustTool(t, "manifest", "check", dir), ", 3 files\n")

	cp := filepath.Join(t.TempDir(), "cp")
	require.Equal(t, "OK\n", mustTool(t, "db", "checkpoint", dir, cp))
	require.Equal(t, scan, mustTool(t, "db", "scan", cp))

	require.Equal(t, "OK\n", mustTool(t, "db", "compact", dir))
	require.Equal(t, scan, mustTool(t, "db", "scan", dir))
	require.Contains(t, mustTool(t, "db", "properties", dir), "rocksdb.num-files-at-level0: 0\n")
}

func TestInspect_SSTableVerbs(t *testing.T) {
	dir := makeDB(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.Len(t, files, 3) // Close flushes the WAL tail

	out := mustTool(t, "sstable", "scan", files[0], "--from=key010", "--limit=3")
	require.Equal(t, "'key010' seq:11, type:1 => value 10\n'key011' seq:12, type:1 => value 11\n'key012' seq:13, type:1 => value 12\n", out)
	all := mustTool(t, "sstable", "scan", dir)
	require.Contains(t, all, files[1]+":\n")
	require.Contains(t, all, "range deletion [key020, key025) seq:")
	require.Contains(t, mustTool(t, "sstable", "properties", files[0]), "rocksdb.num.entries: 52\n")
	require.Contains(t, mustTool(t, "sstable", "layout", files[0]), "meta rocksdb.properties\n")
	require.Contains(t, mustTool(t, "sstable", "check", dir), files[0]+": OK, 52 entries\n")

	// A flipped byte in a data block is reported, by sstable check and db check.
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	data[10] ^= 0xff
	require.NoError(t, os.WriteFile(files[0], data, 0o644))
	_, errOut, rc := runTool(t, "sstable", "check", files[0])
	require.Equal(t, 1, rc)
	require.Contains(t, errOut, filepath.Base(files[0]))
	_, errOut, rc = runTool(t, "db", "check", dir)
	require.Equal(t, 1, rc)
	require.Contains(t, errOut, filepath.Base(files[0]))
}

// writeManifest writes edits as a MANIFEST file and returns its path.
func writeManifest(t *testing.T, edits ...*version.Edit) string {
	path := filepath.Join(t.TempDir(), "MANIFEST-000001")
	var buf bytes.Buffer
	w := record.NewWriter(&buf, 1)
	for _, e := range edits {
		_, err := w.WriteRecord(e.Encode(nil))
		require.NoError(t, err)
	}
	require.NoError(t, w.Flush())
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	return path
}

func fileMeta(num uint64, smallest, largest string, seq base.SeqNum) *version.FileMetadata {
	return &version.FileMetadata{FileNum: num, Size: 100,
		Smallest: base.MakeInternalKey([]byte(smallest), seq, base.KindSet),
		Largest:  base.MakeInternalKey([]byte(largest), seq, base.KindSet), SmallestSeq: seq, LargestSeq: seq}
}

func TestInspect_ManifestCheckFindsDamage(t *testing.T) {
	head := &version.Edit{ComparatorName: "leveldb.BytewiseComparator", HasComparator: true}
	counters := &version.Edit{LastSequence: 10, HasLastSequence: true, NextFileNumber: 9, HasNextFileNumber: true}
	good := writeManifest(t, head, counters, &version.Edit{NewFiles: []version.NewFileEntry{
		{Level: 1, Meta: fileMeta(5, "a", "c", 3)}, {Level: 1, Meta: fileMeta(6, "d", "f", 4)}}})
	require.Equal(t, "OK: 3 edits, 2 files\n", mustTool(t, "manifest", "check", good))

	for name, c := range map[string]struct {
		files []version.NewFileEntry
		want  string
	}{
		"overlap": {[]version.NewFileEntry{{Level: 1, Meta: fileMeta(5, "a", "d", 3)},
			{Level: 1, Meta: fileMeta(6, "d", "f", 4)}}, "level 1: file 5 overlaps file 6"},
		"two levels": {[]version.NewFileEntry{{Level: 1, Meta: fileMeta(5, "a", "c", 3)},
			{Level: 2, Meta: fileMeta(5, "a", "c", 3)}}, "file 5 at levels 1 and 2"},
		"seq": {[]version.NewFileEntry{{Level: 0, Meta: fileMeta(5, "a", "c", 11)}},
			"sequence number 11 above the last sequence 10"},
	} {
		path := writeManifest(t, head, counters, &version.Edit{NewFiles: c.files})
		_, errOut, rc := runTool(t, "manifest", "check", path)
		require.Equal(t, 1, rc, name)
		require.Contains(t, errOut, c.want, name)
	}
}

func TestInspect_WALDumpCorruption(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		require.NoError(t, d.Put([]byte{byte('a' + i)}, bytes.Repeat([]byte("v"), 100), nil))
	}
	wals, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	data, err := os.ReadFile(wals[len(wals)-1])
	require.NoError(t, err)
	require.NoError(t, d.Close())
	path := filepath.Join(t.TempDir(), filepath.Base(wals[len(wals)-1]))
	require.NoError(t, os.WriteFile(path, data, 0o644))
	require.Equal(t, 3, strings.Count(mustTool(t, "wal", "dump", path), "\n"))

	data[150] ^= 0xff // in the second record's payload
	require.NoError(t, os.WriteFile(path, data, 0o644))
	out, errOut, rc := runTool(t, "wal", "dump", path)
	require.Equal(t, 1, rc)
	require.Equal(t, 1, strings.Count(out, "\n"), "the first record is printed")
	require.Contains(t, errOut, filepath.Base(path))
	require.Contains(t, errOut, "corrupt")
}

// TestInspect_BlobIndexes: a table RocksDB wrote with blob files shows its
// blob references decoded, and the db verbs read the blob database.
func TestInspect_BlobIndexes(t *testing.T) {
	src := filepath.Join("..", "db", "testdata", "rocksdb-blob", "mixed", "db")
	out := mustTool(t, "sstable", "scan", filepath.Join(src, "000092.sst"), "--hex", "--limit=2")
	require.Equal(t, "'0x000000000000001E3030303030303030' seq:3612, type:17 => [blob ref] file:94 offset:78 size:1063 compression: Snappy\n"+
		"'0x000000000000002A3030303030303030' seq:3725, type:17 => [blob ref] file:94 offset:1189 size:1603 compression: Snappy\n", out)
	dir := t.TempDir()
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644))
	}
	require.Contains(t, mustTool(t, "db", "check", dir), "OK")
}

// The sstable and manifest verbs read a reverse-bytewise database in its
// own order: check finds its tables and levels in order, scan --to stops
// at the bound in that order.
func TestInspect_ReverseComparator(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, Comparer: db.ReverseBytewiseComparer(),
		TargetFileSizeBase: 2 << 10, BlockSize: 256})
	require.NoError(t, err)
	for i := 0; i < 400; i++ {
		require.NoError(t, d.Put([]byte("key"+strconv.Itoa(1000+i)), bytes.Repeat([]byte("v"), 20), nil))
	}
	require.NoError(t, d.CompactRange(nil, nil))
	require.NoError(t, d.Close())
	files, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.Greater(t, len(files), 1, "several L1 files for manifest check to order")
	out := mustTool(t, "sstable", "check", dir)
	require.Equal(t, len(files), strings.Count(out, ": OK, "), out)
	require.Contains(t, mustTool(t, "manifest", "check", dir), ", "+strconv.Itoa(len(files))+" files\n")
	scan := mustTool(t, "sstable", "scan", files[0], "--limit=2")
	lines := strings.Split(strings.TrimSpace(scan), "\n")
	require.Len(t, lines, 2)
	require.Greater(t, lines[0], lines[1], "largest key first")
	to := lines[1][1 : strings.Index(lines[1][1:], "'")+1]
	require.Equal(t, lines[0]+"\n", mustTool(t, "sstable", "scan", files[0], "--to="+to))
}

// manifest check orders a family's files with the comparer given with
// WithComparer under the name its MANIFEST records: two level-1 files that
// follow each other in length-first order pass, where the bytewise order
// the tool falls back to without it sees them overlap.
func TestInspect_ManifestCheckUserComparer(t *testing.T) {
	head := &version.Edit{ComparatorName: lengthFirst{}.Name(), HasComparator: true}
	counters := &version.Edit{LastSequence: 10, HasLastSequence: true, NextFileNumber: 9, HasNextFileNumber: true}
	path := writeManifest(t, head, counters, &version.Edit{NewFiles: []version.NewFileEntry{
		{Level: 1, Meta: fileMeta(5, "b", "z", 3)}, {Level: 1, Meta: fileMeta(6, "aa", "bb", 4)}}})
	_, errOut, rc := runTool(t, "manifest", "check", path)
	require.Equal(t, 1, rc)
	require.Contains(t, errOut, "overlaps")
	var out, errBuf bytes.Buffer
	require.Equal(t, 0, New(WithComparer(lengthFirst{})).Run([]string{"manifest", "check", path}, &out, &errBuf), errBuf.String())
	require.Equal(t, "OK: 3 edits, 2 files\n", out.String())
}
