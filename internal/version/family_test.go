package version

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/internal/vfs"
)

// addFamily creates a column family the way the db does: id
// MaxColumnFamily()+1.
func addFamily(t *testing.T, vs *VersionSet, name string) *Family {
	id := vs.MaxColumnFamily() + 1
	require.NoError(t, vs.LogAndApply(&Edit{ColumnFamily: id, ColumnFamilyAdd: name, HasColumnFamilyAdd: true}))
	f := vs.Family(id)
	require.NotNil(t, f)
	return f
}

// flushFamily simulates a flush of family id to L0 of keys [a, b] at seq,
// moving the family's log number to logNum.
func flushFamily(t *testing.T, vs *VersionSet, id uint32, a, b string, seq base.SeqNum, logNum uint64) uint64 {
	num := vs.NextFileNum()
	vs.SetLastSeq(seq)
	vs.MarkFileNumUsed(logNum)
	e := &Edit{ColumnFamily: id, LogNumber: logNum, HasLogNumber: true,
		NewFiles: []NewFileEntry{{Level: 0, Meta: meta(num, a, b, seq)}}}
	require.NoError(t, vs.LogAndApply(e))
	return num
}

// familiesState describes every live family: id, name, log number, files.
func familiesState(vs *VersionSet) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "max=%d minlog=%d next=%d last=%d\n", vs.MaxColumnFamily(), vs.MinLogNumber(),
		vs.PeekNextFileNum(), vs.LastSeq())
	for _, f := range vs.Families() {
		fmt.Fprintf(&sb, "cf %d %q log=%d\n%s", f.ID(), f.Name(), f.LogNumber(), dumpVersion(f.Current()))
	}
	return sb.String()
}

func TestFamilies_CreateDropReopen(t *testing.T) {
	fs := newMemFS(t)
	vs, err := Create(fs, dir, Options{})
	require.NoError(t, err)
	require.Len(t, vs.Families(), 1)
	require.Equal(t, "default", vs.Families()[0].Name())
	require.Same(t, vs.Current(), vs.Family(0).Current())

	a := addFamily(t, vs, "a")
	b := addFamily(t, vs, "b")
	c := addFamily(t, vs, "c")
	require.Equal(t, []uint32{1, 2, 3}, []uint32{a.ID(), b.ID(), c.ID()})
	require.Equal(t, uint32(3), vs.MaxColumnFamily())
	require.Same(t, b, vs.FamilyByName("b"))
	require.Nil(t, vs.FamilyByName("nope"))

	d0 := flushFamily(t, vs, 0, "a", "c", 1, 10)
	fa := flushFamily(t, vs, 1, "k", "m", 2, 12)
	fb := flushFamily(t, vs, 2, "x", "z", 3, 11)
	require.Equal(t, uint64(10), vs.LogNumber())
	require.Equal(t, uint64(12), a.LogNumber())
	require.Equal(t, uint64(0), vs.MinLogNumber(), "c, never flushed, still needs every WAL")
	require.Equal(t, 1, a.Current().NumFiles(0))
	require.Equal(t, 0, c.Current().NumFiles(0))

	require.NoError(t, vs.LogAndApply(&Edit{ColumnFamily: 2, ColumnFamilyDrop: true}))
	require.True(t, b.Dropped())
	require.Nil(t, vs.Family(2))
	require.Nil(t, vs.FamilyByName("b"))
	require.Len(t, vs.Families(), 3)
	require.NotContains(t, vs.LiveFileNums(), fb)
	require.Contains(t, vs.LiveFileNums(), fa)
	before := familiesState(vs)
	require.NoError(t, vs.Close())

	vs2, err := Load(fs, dir, Options{})
	require.NoError(t, err)
	require.Equal(t, before, familiesState(vs2))
	require.Equal(t, "default a c", names(vs2))
	require.Equal(t, uint64(12), vs2.Family(1).LogNumber())
	require.Equal(t, uint64(0), vs2.MinLogNumber())
	require.Equal(t, map[uint64]struct{}{d0: {}, fa: {}}, vs2.LiveFileNums())

	// Ids are not reused after a drop, across reopen: b's id 2 stays
	// retired, and the largest id (3) is remembered even once dropped.
	require.NoError(t, vs2.LogAndApply(&Edit{ColumnFamily: 3, ColumnFamilyDrop: true}))
	require.NoError(t, vs2.Close())
	vs3, err := Load(fs, dir, Options{})
	require.NoError(t, err)
	require.Equal(t, uint32(3), vs3.MaxColumnFamily())
	require.Equal(t, "default a", names(vs3))
	require.Equal(t, uint64(10), vs3.MinLogNumber())
	d := addFamily(t, vs3, "b")
	require.Equal(t, uint32(4), d.ID())
	require.Equal(t, vs3.LogNumber(), d.LogNumber(), "a new family starts at the default's log number")
}

func names(vs *VersionSet) string {
	var s []string
	for _, f := range vs.Families() {
		s = append(s, f.Name())
	}
	return strings.Join(s, " ")
}

func TestFamilies_EditErrors(t *testing.T) {
	fs := newMemFS(t)
	vs, err := Create(fs, dir, Options{})
	require.NoError(t, err)
	addFamily(t, vs, "a")
	n := vs.NextFileNum()
	before := familiesState(vs)
	size := vs.manifest.Size()

	for _, tc := range []struct {
		e         *Edit
		assertion bool // else InvalidArgument
	}{
		{&Edit{ColumnFamily: 1, ColumnFamilyAdd: "b", HasColumnFamilyAdd: true}, true}, // id in use
		{&Edit{ColumnFamily: 2, ColumnFamilyAdd: "a", HasColumnFamilyAdd: true}, false},
		{&Edit{ColumnFamily: 2, ColumnFamilyAdd: "default", HasColumnFamilyAdd: true}, false},
		{&Edit{ColumnFamily: 0, ColumnFamilyDrop: true}, false},
		{&Edit{ColumnFamily: 7, ColumnFamilyDrop: true}, true},
		{&Edit{ColumnFamily: 7, NewFiles: []NewFileEntry{{0, meta(n, "a", "b", 0)}}}, true},
		{&Edit{ColumnFamily: 1, LogNumber: 1 << 40, HasLogNumber: true}, true},
	} {
		err := vs.LogAndApply(tc.e)
		require.Error(t, err, "%+v", tc.e)
		if tc.assertion {
			require.True(t, errors.HasAssertionFailure(err), "%+v: %v", tc.e, err)
		} else {
			require.True(t, errors.Is(err, base.ErrInvalidArgument), "%+v: %v", tc.e, err)
		}
		require.Equal(t, size, vs.manifest.Size(), "%+v", tc.e)
	}
	require.Equal(t, before, familiesState(vs))

	// A family's log number may not go back.
	flushFamily(t, vs, 1, "a", "b", 1, 20)
	err = vs.LogAndApply(&Edit{ColumnFamily: 1, LogNumber: 19, HasLogNumber: true})
	require.True(t, errors.HasAssertionFailure(err), "%v", err)
	// The default family's log number is its own.
	require.NoError(t, vs.LogAndApply(&Edit{LogNumber: 5, HasLogNumber: true}))
	require.Equal(t, uint64(5), vs.MinLogNumber())
}

// Small MANIFESTs rotate on almost every edit; each new one holds every
// family with its files and log number.
func TestFamilies_Rotation(t *testing.T) {
	fs := newMemFS(t)
	vs, err := Create(fs, dir, Options{MaxManifestFileSize: 1})
	require.NoError(t, err)
	addFamily(t, vs, "a")
	addFamily(t, vs, "b")
	addFamily(t, vs, "c")
	require.NoError(t, vs.LogAndApply(&Edit{ColumnFamily: 2, ColumnFamilyDrop: true}))
	var seq base.SeqNum
	for i := 0; i < 5; i++ {
		for _, id := range []uint32{0, 1, 3} {
			seq++
			k := fmt.Sprintf("k%02d", seq)
			flushFamily(t, vs, id, k, k, seq, vs.PeekNextFileNum())
		}
	}
	m1 := vs.ManifestFileNum()
	flushFamily(t, vs, 1, "z", "z", seq+1, vs.PeekNextFileNum())
	require.NotEqual(t, m1, vs.ManifestFileNum(), "rotated")
	want := familiesState(vs)
	require.NoError(t, vs.Close())
	vs2, err := Load(fs, dir, Options{})
	require.NoError(t, err)
	require.Equal(t, want, familiesState(vs2))
	require.Equal(t, uint32(3), vs2.MaxColumnFamily())
	require.Equal(t, 6, vs2.Family(1).Current().NumFiles(0))
	// Rotating the loaded one keeps everything too.
	require.NoError(t, vs2.LogAndApply(&Edit{}))
	require.NoError(t, vs2.Close())
	vs3, err := Load(fs, dir, Options{})
	require.NoError(t, err)
	require.Equal(t, familiesState(vs2), familiesState(vs3))
}

func TestFamilies_LogAndApplyGroup(t *testing.T) {
	fs := newMemFS(t)
	vs, err := Create(fs, dir, Options{})
	require.NoError(t, err)
	addFamily(t, vs, "a")
	addFamily(t, vs, "b")
	vs.SetLastSeq(5)
	group := func(vs *VersionSet, fail bool) []*Edit {
		var es []*Edit
		for _, id := range []uint32{0, 1, 2} {
			num := vs.NextFileNum()
			vs.MarkFileNumUsed(num + 1)
			es = append(es, &Edit{ColumnFamily: id, LogNumber: num + 1, HasLogNumber: true,
				NewFiles: []NewFileEntry{{Level: 0, Meta: meta(num, "a", "b", 5)}}})
		}
		if fail {
			es = append(es, &Edit{ColumnFamily: 9})
		}
		return es
	}

	// All or nothing: one edit for an unknown family fails the group.
	bad := group(vs, true)
	before := familiesState(vs)
	size := vs.manifest.Size()
	err = vs.LogAndApplyGroup(bad)
	require.True(t, errors.HasAssertionFailure(err), "%v", err)
	require.Equal(t, size, vs.manifest.Size())
	require.Equal(t, before, familiesState(vs))

	es := group(vs, false)
	require.NoError(t, vs.LogAndApplyGroup(es))
	for i, e := range es {
		require.True(t, e.InAtomicGroup)
		require.Equal(t, uint32(len(es)-1-i), e.RemainingEntries)
	}
	for _, f := range vs.Families() {
		require.Equal(t, 1, f.Current().NumFiles(0), "family %d", f.ID())
	}
	// LogAndApply writes no group marks, even ones its caller left.
	stray := &Edit{InAtomicGroup: true, RemainingEntries: 3}
	require.NoError(t, vs.LogAndApply(stray))
	require.False(t, stray.InAtomicGroup)
	want := familiesState(vs)
	require.NoError(t, vs.Close())
	vs2, err := Load(fs, dir, Options{})
	require.NoError(t, err)
	require.Equal(t, want, familiesState(vs2))

	// The group as written: cut before its last record (a crash before
	// the sync completed), the MANIFEST loads without any of it.
	g2 := group(vs2, false)
	pre := familiesState(vs2)
	require.NoError(t, vs2.LogAndApplyGroup(g2))
	name := dir + "/" + base.MakeFilename(base.FileKindManifest, vs2.ManifestFileNum())
	data := readAll(t, fs, name)
	starts := recordStarts(t, data)
	cut := writeDB(t, data[:starts[len(starts)-1]], base.MakeFilename(base.FileKindManifest, 1)+"\n")
	vsCut, err := Load(cut, dir, Options{})
	require.NoError(t, err)
	// (Only the next file number differs: the rotation took one.)
	_, preFams, _ := strings.Cut(pre, "\n")
	_, cutFams, _ := strings.Cut(familiesState(vsCut), "\n")
	require.Equal(t, preFams, cutFams)
	require.Equal(t, 1, vsCut.Family(1).Current().NumFiles(0))

	// A group may add a family and fill it.
	require.NoError(t, vs2.LogAndApplyGroup([]*Edit{
		{ColumnFamily: 3, ColumnFamilyAdd: "c", HasColumnFamilyAdd: true},
		{ColumnFamily: 3, NewFiles: []NewFileEntry{{Level: 0, Meta: meta(vs2.NextFileNum(), "a", "b", 5)}}},
		{ColumnFamily: 1, ColumnFamilyDrop: true},
	}))
	require.Equal(t, "default b c", names(vs2))
	want = familiesState(vs2)
	require.NoError(t, vs2.Close())
	vs3, err := Load(fs, dir, Options{})
	require.NoError(t, err)
	require.Equal(t, want, familiesState(vs3))
}

// The files of a dropped family's last Version stay live while someone
// holds a reference to it.
func TestFamilies_DroppedVersionStaysLiveWhileReferenced(t *testing.T) {
	fs := newMemFS(t)
	vs, err := Create(fs, dir, Options{})
	require.NoError(t, err)
	a := addFamily(t, vs, "a")
	num := flushFamily(t, vs, a.ID(), "a", "b", 1, 0)
	v := a.Current()
	v.Ref()
	require.NoError(t, vs.LogAndApply(&Edit{ColumnFamily: a.ID(), ColumnFamilyDrop: true}))
	require.Nil(t, a.Current())
	require.Contains(t, vs.LiveFileNums(), num)
	v.Unref()
	require.NotContains(t, vs.LiveFileNums(), num)
	// Edits for it now fail.
	err = vs.LogAndApply(&Edit{ColumnFamily: a.ID()})
	require.True(t, errors.HasAssertionFailure(err), "%v", err)
}

func readAll(t *testing.T, fs vfs.FS, name string) []byte {
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(f)
	require.NoError(t, err)
	return buf.Bytes()
}

// manifestOf encodes edits as a MANIFEST image.
func manifestOf(t *testing.T, edits ...*Edit) []byte {
	var buf bytes.Buffer
	w := record.NewWriter(&buf, 1)
	for _, e := range edits {
		_, err := w.WriteRecord(e.Encode(nil))
		require.NoError(t, err)
	}
	require.NoError(t, w.Flush())
	return buf.Bytes()
}

func cfAdd(id uint32, name string) *Edit {
	return &Edit{ColumnFamily: id, ColumnFamilyAdd: name, HasColumnFamilyAdd: true,
		ComparatorName: base.ComparatorName, HasComparator: true}
}

func counters() *Edit {
	return &Edit{ComparatorName: base.ComparatorName, HasComparator: true, LogNumber: 3, HasLogNumber: true,
		NextFileNumber: 20, HasNextFileNumber: true, LastSequence: 9, HasLastSequence: true}
}

func filesOf(id uint32, nums ...uint64) *Edit {
	e := &Edit{ColumnFamily: id}
	for _, n := range nums {
		e.NewFiles = append(e.NewFiles, NewFileEntry{Level: 0, Meta: meta(n, "a", "b", 1)})
	}
	return e
}

func group(edits ...*Edit) []*Edit {
	for i, e := range edits {
		e.InAtomicGroup, e.RemainingEntries = true, uint32(len(edits)-1-i)
	}
	return edits
}

func liveNums(vs *VersionSet) []uint64 {
	var s []uint64
	for n := range vs.LiveFileNums() {
		s = append(s, n)
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}

func TestLoad_FamilyReplay(t *testing.T) {
	load := func(edits ...*Edit) (*VersionSet, error) {
		return Load(writeDB(t, manifestOf(t, edits...), "MANIFEST-000001\n"), dir, Options{})
	}
	corrupt := func(edits ...*Edit) {
		t.Helper()
		_, err := load(edits...)
		require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
		require.Contains(t, err.Error(), "MANIFEST-000001")
		require.Contains(t, err.Error(), "offset")
	}

	// A group spanning families, complete.
	vs, err := load(append([]*Edit{counters(), cfAdd(1, "a"), cfAdd(2, "b")},
		group(filesOf(0, 5), filesOf(1, 6), filesOf(2, 7))...)...)
	require.NoError(t, err)
	require.Equal(t, []uint64{5, 6, 7}, liveNums(vs))
	require.Equal(t, uint32(2), vs.MaxColumnFamily())

	// Its last record missing: the group is dropped.
	g := group(filesOf(0, 5), filesOf(1, 6), filesOf(2, 7))
	vs, err = load(counters(), cfAdd(1, "a"), cfAdd(2, "b"), g[0], g[1])
	require.NoError(t, err)
	require.Empty(t, liveNums(vs))
	require.Equal(t, "default a b", names(vs))

	// Interrupted by an edit outside it.
	g = group(filesOf(0, 5), filesOf(1, 6))
	corrupt(counters(), cfAdd(1, "a"), g[0], filesOf(1, 8), g[1])

	// An edit for a family never added.
	corrupt(counters(), filesOf(4, 5))
	// Adding a live id or name again.
	corrupt(counters(), cfAdd(1, "a"), cfAdd(1, "b"))
	corrupt(counters(), cfAdd(1, "a"), cfAdd(2, "a"))
	// Dropping the default family.
	corrupt(counters(), &Edit{ColumnFamilyDrop: true})

	// Edits for a family dropped earlier are ignored, but for their
	// counters; the dropped id still counts for MaxColumnFamily.
	late := filesOf(2, 7)
	late.LastSequence, late.HasLastSequence = 11, true
	vs, err = load(counters(), cfAdd(1, "a"), cfAdd(2, "b"), filesOf(2, 6),
		&Edit{ColumnFamily: 2, ColumnFamilyDrop: true}, late)
	require.NoError(t, err)
	require.Empty(t, liveNums(vs))
	require.Equal(t, "default a", names(vs))
	require.Equal(t, uint32(2), vs.MaxColumnFamily())
	require.Equal(t, base.SeqNum(11), vs.LastSeq())

	// MaxColumnFamily as recorded, above every id seen.
	mx := counters()
	mx.MaxColumnFamily, mx.HasMaxColumnFamily = 7, true
	vs, err = load(mx, cfAdd(1, "a"))
	require.NoError(t, err)
	require.Equal(t, uint32(7), vs.MaxColumnFamily())

	// A family with another comparator.
	other := cfAdd(1, "a")
	other.ComparatorName = "rev"
	_, err = load(counters(), other)
	require.True(t, errors.Is(err, base.ErrInvalidArgument), "%v", err)

	// Every family's files are checked against the last sequence and mark
	// their numbers used, as are the families' log numbers.
	high := filesOf(1, 30)
	high.NewFiles[0].Meta = meta(30, "a", "b", 10)
	_, err = load(counters(), cfAdd(1, "a"), high)
	require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
	require.Contains(t, err.Error(), "column family 1")
	logged := filesOf(1, 6)
	logged.LogNumber, logged.HasLogNumber = 40, true
	vs, err = load(counters(), cfAdd(1, "a"), logged)
	require.NoError(t, err)
	require.Equal(t, uint64(41), vs.PeekNextFileNum())
	require.Equal(t, uint64(3), vs.MinLogNumber())
}

func TestWriteSnapshotManifestFamilies(t *testing.T) {
	fs := newMemFS(t)
	v0 := &Version{}
	v0.Levels[0] = []*FileMetadata{meta(4, "a", "b", 2)}
	v1 := &Version{}
	v1.Levels[1] = []*FileMetadata{meta(5, "c", "d", 3)}
	st := SnapshotState{NextFileNumber: 10, LastSequence: 3, MaxColumnFamily: 6}
	fams := []SnapshotFamily{{ID: 0, Name: "default", Version: v0, LogNumber: 7},
		{ID: 2, Name: "two", Version: v1, LogNumber: 8}}
	require.NoError(t, WriteSnapshotManifestFamilies(fs, dir, 9, fams, st))
	vs, err := Load(fs, dir, Options{})
	require.NoError(t, err)
	require.Equal(t, "default two", names(vs))
	require.Equal(t, uint64(7), vs.LogNumber())
	require.Equal(t, uint64(8), vs.Family(2).LogNumber())
	require.Equal(t, uint32(6), vs.MaxColumnFamily())
	require.Equal(t, dumpVersion(v1), dumpVersion(vs.Family(2).Current()))
	require.Equal(t, []uint64{4, 5}, liveNums(vs))

	// Misordered or default-less lists are refused.
	for _, bad := range [][]SnapshotFamily{fams[1:], {fams[0], fams[1], fams[1]}, {fams[0], {ID: 3, Name: "default", Version: v1}}} {
		err := WriteSnapshotManifestFamilies(fs, dir, 9, bad, st)
		require.True(t, errors.HasAssertionFailure(err), "%v", err)
	}
}

// testdata/ldb-cf-drop: RocksDB's MANIFEST after creating cf1, cf2, cf3 and
// dropping cf2 (see its README).
func TestLoad_LdbFamiliesAfterDrop(t *testing.T) {
	vs, err := Load(vfs.Default, "testdata/ldb-cf-drop", Options{})
	require.NoError(t, err)
	require.Equal(t, "default cf1 cf3", names(vs))
	require.Equal(t, uint32(1), vs.FamilyByName("cf1").ID())
	require.Equal(t, uint32(3), vs.FamilyByName("cf3").ID())
	require.Nil(t, vs.Family(2))
	require.Equal(t, uint32(3), vs.MaxColumnFamily())
	for _, f := range vs.Families() {
		require.Equal(t, uint64(12), f.LogNumber(), f.Name())
	}
	require.Equal(t, uint64(12), vs.MinLogNumber())
	require.Equal(t, uint64(12), vs.MinLogNumberToKeep())
	require.Equal(t, uint64(24), vs.PeekNextFileNum())
	require.Equal(t, base.SeqNum(2), vs.LastSeq())
	require.Equal(t, []uint64{10, 19}, liveNums(vs))
	require.Equal(t, uint64(19), vs.Family(1).Current().Levels[0][0].FileNum)
	require.Equal(t, 0, vs.Family(3).Current().NumFiles(0))
}

// RocksDB's ldb reads a multi-family MANIFEST that Strata wrote, after a
// drop and a rotation.
func TestFamilies_LdbManifestDump(t *testing.T) {
	ldb, err := exec.LookPath("ldb")
	if err != nil {
		t.Skip("ldb not installed (apt-get install rocksdb-tools)")
	}
	d := t.TempDir()
	vs, err := Create(vfs.Default, d, Options{})
	require.NoError(t, err)
	addFamily(t, vs, "alpha")
	addFamily(t, vs, "beta")
	addFamily(t, vs, "gamma")
	flushFamily(t, vs, 1, "a", "b", 1, 5)
	flushFamily(t, vs, 3, "c", "d", 2, 6)
	require.NoError(t, vs.LogAndApply(&Edit{ColumnFamily: 2, ColumnFamilyDrop: true}))
	vs.SetLastSeq(3)
	n1, n3 := vs.NextFileNum(), vs.NextFileNum()
	require.NoError(t, vs.LogAndApplyGroup([]*Edit{
		{ColumnFamily: 1, NewFiles: []NewFileEntry{{Level: 0, Meta: meta(n1, "e", "f", 3)}}},
		{ColumnFamily: 3, NewFiles: []NewFileEntry{{Level: 0, Meta: meta(n3, "e", "f", 3)}}},
	}))
	require.NoError(t, vs.Close())

	dump := func() string {
		entries, err := os.ReadDir(d)
		require.NoError(t, err)
		var path string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "MANIFEST-") {
				path = filepath.Join(d, e.Name())
			}
		}
		out, err := exec.Command(ldb, "manifest_dump", "--path="+path).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	check := func(out string) {
		t.Helper()
		require.Contains(t, out, `Column family "default"  (ID 0)`)
		require.Contains(t, out, `Column family "alpha"  (ID 1)`)
		require.Contains(t, out, `Column family "gamma"  (ID 3)`)
		require.NotContains(t, out, `"beta"`)
		require.Contains(t, out, "max_column_family 3")
		require.Contains(t, out, fmt.Sprintf(" %d:%d[3 .. 3]", n1, n1*100))
		require.Contains(t, out, fmt.Sprintf(" %d:%d[3 .. 3]", n3, n3*100))
	}
	check(dump())

	// A loaded VersionSet rotates: the snapshot layout.
	vs2, err := Load(vfs.Default, d, Options{})
	require.NoError(t, err)
	require.NoError(t, vs2.LogAndApply(&Edit{}))
	require.NoError(t, vs2.Close())
	out := dump()
	check(out)
	require.Regexp(t, `(?s)"alpha"  \(ID 1\) -+\nlog number: 5\n`, out)
	require.Regexp(t, `(?s)"gamma"  \(ID 3\) -+\nlog number: 6\n`, out)
}
