package version

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/vfs"
)

func ikey(s string, seq base.SeqNum) base.InternalKey {
	return base.MakeInternalKey([]byte(s), seq, base.KindSet)
}

func meta(num uint64, smallest, largest string, seq base.SeqNum) *FileMetadata {
	return &FileMetadata{FileNum: num, Size: num * 100, Smallest: ikey(smallest, seq),
		Largest: ikey(largest, seq), SmallestSeq: seq, LargestSeq: seq, CreationTime: 17}
}

func state(vs *VersionSet) string {
	return fmt.Sprintf("log=%d prev=%d next=%d last=%d minlog=%d\n%s", vs.LogNumber(), vs.PrevLogNumber(),
		vs.PeekNextFileNum(), vs.LastSeq(), vs.MinLogNumberToKeep(), dumpVersion(vs.Current()))
}

const dir = "/db"

func newMemFS(t *testing.T) *vfs.MemFS {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll(dir, 0o755))
	require.NoError(t, vfs.SyncDir(fs, "/"))
	return fs
}

// flush simulates a flush to L0 of keys [a, b] at seq.
func flush(t *testing.T, vs *VersionSet, a, b string, seq base.SeqNum) uint64 {
	num := vs.NextFileNum()
	vs.SetLastSeq(seq)
	e := &Edit{NewFiles: []NewFileEntry{{Level: 0, Meta: meta(num, a, b, seq)}}}
	require.NoError(t, vs.LogAndApply(e))
	return num
}

func TestEdit_RoundTripAllFields(t *testing.T) {
	f := meta(12, "a", "z", 5)
	f.FileChecksum = []byte{1, 2, 3}
	f.FileChecksumFuncName = "crc"
	f.MarkedForCompaction = true
	f.OldestAncesterTime = 99
	e := &Edit{
		ComparatorName: base.ComparatorName, HasComparator: true,
		LogNumber: 1, HasLogNumber: true, PrevLogNumber: 2, HasPrevLogNumber: true,
		NextFileNumber: 3, HasNextFileNumber: true, LastSequence: 4, HasLastSequence: true,
		MinLogNumberToKeep: 5, HasMinLogNumberToKeep: true, MaxColumnFamily: 6, HasMaxColumnFamily: true,
		ColumnFamily: 7, ColumnFamilyAdd: "x", HasColumnFamilyAdd: true, ColumnFamilyDrop: true,
		InAtomicGroup: true, RemainingEntries: 8, DBID: "id",
		CompactCursors: []CompactCursor{{Level: 2, Key: ikey("c", 3)}},
		DeletedFiles:   []DeletedFileEntry{{Level: 3, FileNum: 9}},
		NewFiles:       []NewFileEntry{{Level: 4, Meta: f}},
		WalAdditions:   []WalAddition{{Number: 10, SyncedSize: 11, HasSyncedSize: true}, {Number: 12}},
		WalDeletions:   []uint64{13},
	}
	var got Edit
	require.NoError(t, got.Decode(e.Encode(nil)))
	require.Equal(t, e, &got)
}

func TestEdit_DecodeDamage(t *testing.T) {
	e := &Edit{LogNumber: 1, HasLogNumber: true,
		NewFiles: []NewFileEntry{{Level: 1, Meta: meta(5, "a", "b", 1)}}}
	enc := e.Encode(nil)
	for n := 0; n < len(enc); n++ {
		var d Edit
		err := d.Decode(enc[:n])
		if err != nil {
			require.True(t, errors.Is(err, base.ErrCorruption), "truncated at %d: %v", n, err)
		}
	}
	bad := map[string][]byte{
		"unknown tag":           {0x0b, 0x01},
		"unknown required cust": append(enc[:len(enc)-1:len(enc)-1], 0x41, 0x00, 0x01),
		"level out of range":    {tagDeletedFile, 9, 1},
		"short key":             {tagCompactCursor, 1, 2, 'a', 'b'},
	}
	for name, b := range bad {
		var d Edit
		err := d.Decode(b)
		require.True(t, errors.Is(err, base.ErrCorruption), "%s: %v", name, err)
	}
	// Ignorable fields are skipped.
	var d Edit
	require.NoError(t, d.Decode(append([]byte{0xc6, 0x40 /* 8262 */, 2, 'x', 'y'}, enc...)))
	require.Equal(t, e.LogNumber, d.LogNumber)
	// An unknown custom tag without bit 64 is ignored.
	withCustom := append(enc[:len(enc)-1:len(enc)-1], 0x1e, 0x01, 0x07, 0x01)
	require.NoError(t, d.Decode(withCustom))
	require.Len(t, d.NewFiles, 1)
}

func TestVersionSet_CreateApplyLoad(t *testing.T) {
	fs := newMemFS(t)
	vs, err := Create(fs, dir, Options{})
	require.NoError(t, err)
	require.Equal(t, uint64(1), vs.ManifestFileNum())
	require.Equal(t, uint64(2), vs.PeekNextFileNum())

	rng := rand.New(rand.NewSource(1))
	var seq base.SeqNum
	for i := 0; i < 50; i++ {
		seq += base.SeqNum(1 + rng.Intn(10))
		a := fmt.Sprintf("k%03d", rng.Intn(500))
		flush(t, vs, a, a+"z", seq)
		if vs.Current().NumFiles(0) >= 4 {
			// "Compact" L0 into L1 by moving files whose range is free.
			e := &Edit{}
			for _, f := range vs.Current().Levels[0] {
				if len(vs.Current().Overlaps(1, f.Smallest.UserKey, f.Largest.UserKey)) == 0 &&
					!overlapsAny(e, f) {
					e.DeletedFiles = append(e.DeletedFiles, DeletedFileEntry{0, f.FileNum})
					e.NewFiles = append(e.NewFiles, NewFileEntry{1, f})
				}
			}
			require.NoError(t, vs.LogAndApply(e))
		}
	}
	logNum := vs.NextFileNum()
	require.NoError(t, vs.LogAndApply(&Edit{LogNumber: logNum, HasLogNumber: true}))
	require.NoError(t, vs.Current().CheckOrdering())
	want := state(vs)
	require.NoError(t, vs.Close())

	vs2, err := Load(fs, dir, Options{})
	require.NoError(t, err)
	require.Equal(t, want, state(vs2))
	require.Equal(t, logNum, vs2.LogNumber())

	// The loaded set continues in a new MANIFEST.
	flush(t, vs2, "zz", "zzz", vs2.LastSeq()+1)
	require.NotEqual(t, uint64(1), vs2.ManifestFileNum())
	want = state(vs2)
	_, err = fs.Stat(dir + "/MANIFEST-000001")
	require.Error(t, err, "old MANIFEST removed")
	vs3, err := Load(fs.CrashClone(), dir, Options{})
	require.NoError(t, err)
	require.Equal(t, want, state(vs3))
}

func overlapsAny(e *Edit, f *FileMetadata) bool {
	for _, nf := range e.NewFiles {
		if overlaps(base.DefaultComparer, nf.Meta, f.Smallest.UserKey, f.Largest.UserKey) {
			return true
		}
	}
	return false
}

func TestVersionSet_Rotation(t *testing.T) {
	fs := newMemFS(t)
	vs, err := Create(fs, dir, Options{MaxManifestFileSize: 1024})
	require.NoError(t, err)
	nums := map[uint64]bool{}
	for i := 0; i < 40; i++ {
		flush(t, vs, fmt.Sprintf("a%02d", i), fmt.Sprintf("b%02d", i), base.SeqNum(i+1))
		nums[vs.ManifestFileNum()] = true
		// Every acknowledged state survives a crash.
		crashed, err := Load(fs.CrashClone(), dir, Options{})
		require.NoError(t, err)
		require.Equal(t, dumpVersion(vs.Current()), dumpVersion(crashed.Current()))
	}
	require.Greater(t, len(nums), 3)
	names, err := fs.List(dir)
	require.NoError(t, err)
	manifests := 0
	for _, n := range names {
		if k, _, ok := base.ParseFilename(n); ok && k == base.FileKindManifest {
			manifests++
		}
	}
	require.Equal(t, 1, manifests, "%v", names)
}

// smallManifest builds a MANIFEST with a few edits and returns its bytes and
// the state after each record count (records -> state).
func smallManifest(t *testing.T) (*vfs.MemFS, []byte, map[int]string) {
	fs := newMemFS(t)
	vs, err := Create(fs, dir, Options{})
	require.NoError(t, err)
	states := map[int]string{2: state(vs)}
	for i := 0; i < 4; i++ {
		flush(t, vs, fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i), base.SeqNum(i+1))
		states[3+i] = state(vs)
	}
	require.NoError(t, vs.Close())
	data := readFile(t, fs, dir+"/MANIFEST-000001")
	return fs, data, states
}

func readFile(t *testing.T, fs vfs.FS, name string) []byte {
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	b := make([]byte, st.Size())
	_, err = f.ReadAt(b, 0)
	require.NoError(t, err)
	return b
}

func writeDB(t *testing.T, manifest []byte, current string) *vfs.MemFS {
	fs := newMemFS(t)
	for name, data := range map[string][]byte{"MANIFEST-000001": manifest, "CURRENT": []byte(current)} {
		f, err := fs.Create(dir + "/" + name)
		require.NoError(t, err)
		_, err = f.Write(data)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	return fs
}

func TestLoad_TornTail(t *testing.T) {
	_, data, states := smallManifest(t)
	ok := 0
	for n := 0; n <= len(data); n++ {
		vs, err := Load(writeDB(t, data[:n], "MANIFEST-000001\n"), dir, Options{})
		if err != nil {
			// Only a MANIFEST too short to hold the required fields fails.
			require.True(t, errors.Is(err, base.ErrCorruption), "truncated at %d: %v", n, err)
			require.Contains(t, err.Error(), "no ")
			continue
		}
		ok++
		got := state(vs)
		found := false
		for _, s := range states {
			found = found || s == got
		}
		require.True(t, found, "truncated at %d: state\n%s", n, got)
	}
	require.Greater(t, ok, len(data)/2)
}

func TestLoad_CorruptionAtEveryByte(t *testing.T) {
	_, data, states := smallManifest(t)
	damaged := make([]byte, len(data))
	for i := range data {
		copy(damaged, data)
		damaged[i] ^= 0x20
		vs, err := Load(writeDB(t, damaged, "MANIFEST-000001\n"), dir, Options{})
		if err != nil {
			require.True(t, errors.Is(err, base.ErrCorruption), "byte %d: %v", i, err)
			require.Contains(t, err.Error(), "MANIFEST-000001")
			continue
		}
		got := state(vs)
		found := false
		for _, s := range states {
			found = found || s == got
		}
		require.True(t, found, "byte %d: state\n%s", i, got)
	}
}

func TestLoad_BadCurrent(t *testing.T) {
	_, data, _ := smallManifest(t)
	for _, cur := range []string{"MANIFEST-000001", "", "garbage\n", "MANIFEST-x\n"} {
		_, err := Load(writeDB(t, data, cur), dir, Options{})
		require.True(t, errors.Is(err, base.ErrCorruption), "%q: %v", cur, err)
	}
	_, err := Load(newMemFS(t), dir, Options{})
	require.Error(t, err)
}

func TestLoad_WrongComparator(t *testing.T) {
	e := Edit{ComparatorName: "rocksdb.ReverseBytewiseComparator", HasComparator: true}
	fs := newMemFS(t)
	vs, err := Create(fs, dir, Options{})
	require.NoError(t, err)
	require.Error(t, vs.LogAndApply(&e))
	_, err = vs.manifest.WriteRecord(e.Encode(nil))
	require.NoError(t, err)
	require.NoError(t, vs.manifest.Flush())
	_, err = Load(fs, dir, Options{})
	require.True(t, errors.Is(err, base.ErrInvalidArgument), "%v", err)
}

func TestLogAndApply_Errors(t *testing.T) {
	fs := newMemFS(t)
	vs, err := Create(fs, dir, Options{})
	require.NoError(t, err)
	num := vs.NextFileNum()
	require.NoError(t, vs.LogAndApply(&Edit{NewFiles: []NewFileEntry{{1, meta(num, "b", "d", 1)}}}))
	n1, n2 := vs.NextFileNum(), vs.NextFileNum()
	before := state(vs)
	size := vs.manifest.Size()

	bad := []*Edit{
		{NewFiles: []NewFileEntry{{1, meta(n1, "c", "e", 2)}}},
		{NewFiles: []NewFileEntry{{1, meta(n2, "a", "c", 2)}}},
		// b#0 sorts after the existing file's smallest b#1: the
		// internal-key ranges overlap at the shared user key.
		{NewFiles: []NewFileEntry{{1, meta(n2, "a", "b", 0)}}},
		{NewFiles: []NewFileEntry{{2, meta(num, "x", "y", 2)}}},
		{DeletedFiles: []DeletedFileEntry{{2, num}}},
		{DeletedFiles: []DeletedFileEntry{{1, 999}}},
		{ColumnFamily: 3},
		{LogNumber: 1 << 40, HasLogNumber: true},
	}
	for i, e := range bad {
		require.Error(t, vs.LogAndApply(e), "edit %d", i)
		require.Equal(t, before, state(vs), "edit %d", i)
		require.Equal(t, size, vs.manifest.Size(), "edit %d", i)
	}
	require.True(t, errors.HasAssertionFailure(vs.LogAndApply(&Edit{ColumnFamily: 3})))

	// Adjacent files are fine; so is a sentinel bound shared with the next file.
	f := meta(vs.NextFileNum(), "e", "g", 3)
	f.Largest = base.MakeInternalKey([]byte("g"), base.MaxSeqNum, base.KindRangeDelete)
	g := meta(vs.NextFileNum(), "g", "h", 3)
	require.NoError(t, vs.LogAndApply(&Edit{NewFiles: []NewFileEntry{{1, f}, {1, g}}}))
	require.Equal(t, 3, vs.Current().NumFiles(1))
}

func TestVersion_RefsAndLiveFiles(t *testing.T) {
	fs := newMemFS(t)
	vs, err := Create(fs, dir, Options{})
	require.NoError(t, err)
	a := flush(t, vs, "a", "b", 1)
	pinned := vs.Current()
	pinned.Ref()
	require.NoError(t, vs.LogAndApply(&Edit{DeletedFiles: []DeletedFileEntry{{0, a}}}))
	_, ok := vs.LiveFileNums()[a]
	require.True(t, ok, "pinned version keeps its files live")
	require.Equal(t, int32(1), pinned.Refs())
	pinned.Unref()
	_, ok = vs.LiveFileNums()[a]
	require.False(t, ok)
	require.Empty(t, vs.LiveFileNums())
}

func TestVersion_OverlapsAndFindFile(t *testing.T) {
	v := &Version{}
	v.Levels[1] = []*FileMetadata{meta(1, "b", "d", 0), meta(2, "f", "h", 0), meta(3, "j", "l", 0)}
	v.Levels[0] = []*FileMetadata{meta(5, "a", "z", 9), meta(4, "m", "n", 8)}
	require.NoError(t, v.CheckOrdering())
	nums := func(fs []*FileMetadata) []uint64 {
		var out []uint64
		for _, f := range fs {
			out = append(out, f.FileNum)
		}
		return out
	}
	require.Equal(t, []uint64{1, 2}, nums(v.Overlaps(1, []byte("d"), []byte("f"))))
	require.Equal(t, []uint64(nil), nums(v.Overlaps(1, []byte("e"), []byte("e"))))
	require.Equal(t, []uint64{1, 2, 3}, nums(v.Overlaps(1, []byte("a"), []byte("z"))))
	require.Equal(t, []uint64{3}, nums(v.Overlaps(1, []byte("k"), []byte("k"))))
	require.Equal(t, []uint64{5}, nums(v.Overlaps(0, []byte("b"), []byte("c"))))
	require.Equal(t, 0, v.FindFile(1, []byte("a")))
	require.Equal(t, 0, v.FindFile(1, []byte("d")))
	require.Equal(t, 1, v.FindFile(1, []byte("e")))
	require.Equal(t, 3, v.FindFile(1, []byte("m")))
	require.Equal(t, uint64(600), v.LevelSize(1))

	v.Levels[0][0], v.Levels[0][1] = v.Levels[0][1], v.Levels[0][0]
	require.Error(t, v.CheckOrdering())
}

// boundaryMeta is a file of keys smallest#sseq .. largest#lseq.
func boundaryMeta(num uint64, smallest string, sseq base.SeqNum, largest string, lseq base.SeqNum) *FileMetadata {
	return &FileMetadata{FileNum: num, Size: 100, Smallest: ikey(smallest, sseq), Largest: ikey(largest, lseq),
		SmallestSeq: min(sseq, lseq), LargestSeq: max(sseq, lseq)}
}

func fileNums(fs []*FileMetadata) []uint64 {
	var out []uint64
	for _, f := range fs {
		out = append(out, f.FileNum)
	}
	return out
}

// TestVersion_SharedBoundaryUserKey: adjacent files of a level may share a
// boundary user key when their internal-key ranges do not overlap (RocksDB
// writes such levels); they may not when they do.
func TestVersion_SharedBoundaryUserKey(t *testing.T) {
	v := &Version{}
	v.Levels[1] = []*FileMetadata{
		boundaryMeta(1, "a", 5, "c", 9),
		boundaryMeta(2, "c", 8, "c", 7),
		boundaryMeta(3, "c", 3, "e", 3),
		boundaryMeta(4, "f", 3, "g", 3),
	}
	require.NoError(t, v.CheckOrdering())
	require.Equal(t, 0, v.FindFile(1, []byte("c")))
	require.Equal(t, []uint64{1, 2, 3}, fileNums(v.Overlaps(1, []byte("c"), []byte("c"))))

	// Same user key, but file 3 now holds a newer version than file 2's
	// last: the internal-key ranges overlap.
	bad := &Version{}
	bad.Levels[1] = []*FileMetadata{boundaryMeta(1, "a", 5, "c", 7), boundaryMeta(2, "c", 8, "e", 3)}
	require.Error(t, bad.CheckOrdering())
	// Same internal key at the boundary.
	bad.Levels[1] = []*FileMetadata{boundaryMeta(1, "a", 5, "c", 7), boundaryMeta(2, "c", 7, "e", 3)}
	require.Error(t, bad.CheckOrdering())

	// Each of the three files holding "c" brings the other two into a
	// compaction; file 4 stays out.
	for _, i := range []int{0, 1, 2} {
		require.Equal(t, []uint64{1, 2, 3}, fileNums(v.AddBoundaryInputs(1, v.Levels[1][i:i+1])), "file %d", i+1)
	}
	require.Equal(t, []uint64{4}, fileNums(v.AddBoundaryInputs(1, v.Levels[1][3:4])))
	p := v.PickRange(1, 2, []byte("a"), []byte("b"))
	require.NotNil(t, p)
	require.Equal(t, []uint64{1, 2, 3}, fileNums(p.Inputs[0]))
	require.Equal(t, []byte("e"), p.Largest)

	// The automatic picker, whichever file it chooses, takes all three;
	// with one of them compacting it takes none of them.
	o := PickerOptions{L0Trigger: 4, BaseBytes: 1, Multiplier: 10}
	for _, f := range v.Levels[1] {
		f.Compacting = f.FileNum != 1 && f.FileNum != 2 && f.FileNum != 3
	}
	p = v.PickLeveled(o, nil, &[NumLevels][]byte{})
	require.NotNil(t, p)
	require.Equal(t, []uint64{1, 2, 3}, fileNums(p.Inputs[0]))
	v.Levels[1][1].Compacting, v.Levels[1][3].Compacting = true, false
	p = v.PickLeveled(o, nil, &[NumLevels][]byte{})
	require.NotNil(t, p)
	require.Equal(t, []uint64{4}, fileNums(p.Inputs[0]))

	// In the output level too: an L0 file touching only file 3 brings in
	// files 1 and 2.
	for _, f := range v.Levels[1] {
		f.Compacting = false
	}
	v.Levels[0] = []*FileMetadata{boundaryMeta(9, "d", 20, "d", 20)}
	p = v.PickRange(0, 1, nil, nil)
	require.NotNil(t, p)
	require.Equal(t, []uint64{1, 2, 3}, fileNums(p.Inputs[1]))
	require.Equal(t, []byte("a"), p.Smallest)
}

// TestVersion_SentinelBoundaryIsNotShared: a file ending in a range-deletion
// sentinel at the next file's smallest user key holds no version of it, so
// a compaction of one does not need the other.
func TestVersion_SentinelBoundaryIsNotShared(t *testing.T) {
	v := &Version{}
	a := boundaryMeta(1, "a", 5, "c", 0)
	a.Largest = base.MakeInternalKey([]byte("c"), base.MaxSeqNum, base.KindRangeDelete)
	v.Levels[1] = []*FileMetadata{a, boundaryMeta(2, "c", 8, "e", 3)}
	require.NoError(t, v.CheckOrdering())
	require.Equal(t, []uint64{1}, fileNums(v.AddBoundaryInputs(1, v.Levels[1][:1])))
	require.Equal(t, []uint64{2}, fileNums(v.AddBoundaryInputs(1, v.Levels[1][1:])))
}
