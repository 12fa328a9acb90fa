package version

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/internal/vfs"
)

func fmtKey(k base.InternalKey) string {
	return fmt.Sprintf("'%X' seq:%d, type:%d", k.UserKey, k.SeqNum(), k.Kind())
}

// dumpEdit renders e as `ldb manifest_dump --verbose --hex` prints it,
// without the unique ids that this package does not keep.
func dumpEdit(e *Edit) string {
	var sb strings.Builder
	sb.WriteString("VersionEdit {\n")
	if e.HasComparator {
		fmt.Fprintf(&sb, "  Comparator: %s\n", e.ComparatorName)
	}
	line := func(has bool, name string, v uint64) {
		if has {
			fmt.Fprintf(&sb, "  %s: %d\n", name, v)
		}
	}
	line(e.HasLogNumber, "LogNumber", e.LogNumber)
	line(e.HasPrevLogNumber, "PrevLogNumber", e.PrevLogNumber)
	line(e.HasNextFileNumber, "NextFileNumber", e.NextFileNumber)
	line(e.HasMaxColumnFamily, "MaxColumnFamily", uint64(e.MaxColumnFamily))
	line(e.HasMinLogNumberToKeep, "MinLogNumberToKeep", e.MinLogNumberToKeep)
	line(e.HasLastSequence, "LastSeq", uint64(e.LastSequence))
	for _, d := range e.DeletedFiles {
		fmt.Fprintf(&sb, "  DeleteFile: %d %d\n", d.Level, d.FileNum)
	}
	for _, nf := range e.NewFiles {
		f := nf.Meta
		fmt.Fprintf(&sb, "  AddFile: %d %d %d %s .. %s oldest_ancester_time:%d file_creation_time:%d "+
			"file_checksum:%s file_checksum_func_name: %s\n", nf.Level, f.FileNum, f.Size,
			fmtKey(f.Smallest), fmtKey(f.Largest), f.OldestAncesterTime, f.CreationTime,
			f.FileChecksum, f.FileChecksumFuncName)
	}
	fmt.Fprintf(&sb, "  ColumnFamily: %d\n", e.ColumnFamily)
	if e.HasColumnFamilyAdd {
		fmt.Fprintf(&sb, "  ColumnFamilyAdd: %s\n", e.ColumnFamilyAdd)
	}
	if e.ColumnFamilyDrop {
		sb.WriteString("  ColumnFamilyDrop\n")
	}
	sb.WriteString("}\n")
	return sb.String()
}

var uniqueIDSuffix = regexp.MustCompile(` unique_id\(internal\).*`)

// parseDump splits a manifest_dump into its edits (unique ids stripped) and
// its final listing of the default column family's levels 0..NumLevels-1.
func parseDump(t *testing.T, path string) (edits []string, levels string, tail string) {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var cur strings.Builder
	inEdit, inDefault := false, false
	var lv strings.Builder
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case l == "VersionEdit {":
			inEdit = true
			cur.Reset()
			cur.WriteString(l + "\n")
		case inEdit:
			cur.WriteString(uniqueIDSuffix.ReplaceAllString(l, "") + "\n")
			if l == "}" {
				edits = append(edits, cur.String())
				inEdit = false
			}
		case strings.HasPrefix(l, "--------------- Column family"):
			inDefault = strings.Contains(l, "(ID 0)")
		case inDefault && strings.HasPrefix(l, "--- level "):
			n, _ := strconv.Atoi(strings.Fields(l)[2])
			if n < NumLevels {
				fmt.Fprintf(&lv, "--- level %d ---\n", n)
			}
		case inDefault && strings.HasPrefix(l, " "):
			lv.WriteString(l + "\n")
		case strings.HasPrefix(l, "next_file_number"):
			tail = l
		}
	}
	return edits, lv.String(), tail
}

// dumpVersion lists v as manifest_dump does.
func dumpVersion(v *Version) string {
	var sb strings.Builder
	for level, files := range v.Levels {
		fmt.Fprintf(&sb, "--- level %d ---\n", level)
		for _, f := range files {
			fmt.Fprintf(&sb, " %d:%d[%d .. %d][%s .. %s]\n", f.FileNum, f.Size, f.SmallestSeq,
				f.LargestSeq, fmtKey(f.Smallest), fmtKey(f.Largest))
		}
	}
	return sb.String()
}

func fixtureManifest(t *testing.T, dir string) (string, []byte) {
	names, err := filepath.Glob(filepath.Join(dir, "MANIFEST-??????"))
	require.NoError(t, err)
	require.Len(t, names, 1)
	data, err := os.ReadFile(names[0])
	require.NoError(t, err)
	return names[0], data
}

// fixtureDirs lists the RocksDB fixture directories under testdata (not
// testdata/fuzz, the fuzz corpus, nor the datadriven files such as
// testdata/compaction_picker).
func fixtureDirs(t *testing.T) []string {
	dirs, err := filepath.Glob("testdata/*")
	require.NoError(t, err)
	out := dirs[:0]
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() && filepath.Base(d) != "fuzz" {
			out = append(out, d)
		}
	}
	return out
}

func TestEdit_DecodeRocksDBManifests(t *testing.T) {
	dirs := fixtureDirs(t)
	require.GreaterOrEqual(t, len(dirs), 20)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			path, data := fixtureManifest(t, dir)
			want, _, _ := parseDump(t, path+".manifest_dump.txt")
			r := record.NewReader(bytes.NewReader(data), 0, path)
			for i := 0; ; i++ {
				rec, err := r.Next()
				if err == io.EOF {
					require.Equal(t, len(want), i)
					break
				}
				require.NoError(t, err)
				var e Edit
				require.NoError(t, e.Decode(rec), "edit %d", i)
				require.Less(t, i, len(want))
				require.Equal(t, want[i], dumpEdit(&e), "edit %d", i)

				// Re-encoding and decoding gives the same edit.
				var e2 Edit
				require.NoError(t, e2.Decode(e.Encode(nil)))
				require.Equal(t, dumpEdit(&e), dumpEdit(&e2))
			}
		})
	}
}

func TestLoad_RocksDBManifests(t *testing.T) {
	dirs := fixtureDirs(t)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			path, _ := fixtureManifest(t, dir)
			_, wantLevels, tail := parseDump(t, path+".manifest_dump.txt")
			vs, err := Load(vfs.Default, dir, Options{})
			require.NoError(t, err)
			defer vs.Close()
			require.Equal(t, wantLevels, dumpVersion(vs.Current()))
			// ldb reports next_file_number one past the recorded value: it
			// reserves the recorded one for the MANIFEST it would write.
			got := fmt.Sprintf("next_file_number %d last_sequence %d  prev_log_number %d max_column_family %d "+
				"min_log_number_to_keep %d", vs.PeekNextFileNum()+1, vs.LastSeq(), vs.PrevLogNumber(),
				vs.MaxColumnFamily(), vs.MinLogNumberToKeep())
			require.Equal(t, tail, got)
			require.NoError(t, vs.Current().CheckOrdering())
		})
	}
}

func TestLoad_LdbTinyFiles(t *testing.T) {
	vs, err := Load(vfs.Default, "testdata/ldb-tiny-before-compact", Options{})
	require.NoError(t, err)
	v := vs.Current()
	require.Equal(t, uint64(20), vs.LogNumber())
	require.Equal(t, base.SeqNum(9), vs.LastSeq())
	var l0 []uint64
	for _, f := range v.Levels[0] {
		l0 = append(l0, f.FileNum)
	}
	require.Equal(t, []uint64{23, 18, 13}, l0)
	require.Equal(t, 1, v.NumFiles(1))
	require.Equal(t, uint64(1013), v.LevelSize(1))
	require.Equal(t, map[uint64]struct{}{13: {}, 18: {}, 23: {}, 28: {}}, vs.LiveFileNums())
	f23 := v.Levels[0][0]
	require.True(t, IsSentinel(f23.Largest))
	require.Equal(t, "fig", string(f23.Largest.UserKey))
	require.Equal(t, int64(1795977716), f23.OldestAncesterTime)
	require.Equal(t, "Unknown", f23.FileChecksumFuncName)
}

// testdata/ldb-cf holds a RocksDB MANIFEST with family 1 ("cf2"), one file
// in the default family and log number 5 for both.
func TestLoad_ColumnFamilyFixture(t *testing.T) {
	vs, err := Load(vfs.Default, "testdata/ldb-cf", Options{})
	require.NoError(t, err)
	fams := vs.Families()
	require.Len(t, fams, 2)
	require.Equal(t, "default", fams[0].Name())
	require.Equal(t, uint32(1), fams[1].ID())
	require.Equal(t, "cf2", fams[1].Name())
	require.Equal(t, uint32(1), vs.MaxColumnFamily())
	require.Equal(t, uint64(5), fams[0].LogNumber())
	require.Equal(t, uint64(5), fams[1].LogNumber())
	require.Equal(t, uint64(5), vs.MinLogNumber())
	require.Equal(t, 1, fams[0].Current().NumFiles(0))
	require.Equal(t, 0, fams[1].Current().NumFiles(0))
	require.Equal(t, map[uint64]struct{}{10: {}}, vs.LiveFileNums())
}
