package db

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

// A level whose adjacent files share a boundary user key, as RocksDB and
// LevelDB write them: L1 file A ends with the newer versions of "banana",
// L1 file B starts with its older ones (and holds a range tombstone from
// "banana"), L2 file C holds the oldest. Reads at every sequence number
// must see what a single merged history gives.

type bEntry struct {
	key   string
	seq   base.SeqNum
	kind  base.Kind
	value string
}

type bFile struct {
	num   uint64
	level int
	ents  []bEntry // in internal-key order
	tombs []base.Tombstone
}

var boundaryFiles = []bFile{
	{num: 10, level: 1, ents: []bEntry{
		{"apple", 3, base.KindSet, "a3"},
		{"banana", 8, base.KindDelete, ""},
		{"banana", 6, base.KindSet, "b6"},
	}},
	{num: 11, level: 1, ents: []bEntry{
		{"banana", 4, base.KindSet, "b4"},
		{"banana", 2, base.KindSet, "b2"},
		{"grape", 7, base.KindSet, "g7"},
	}, tombs: []base.Tombstone{{Start: []byte("banana"), End: []byte("cherry"), Seq: 3}}},
	{num: 12, level: 2, ents: []bEntry{
		{"apple", 1, base.KindSet, "a1"},
		{"banana", 1, base.KindSet, "b1"},
		{"cherry", 1, base.KindSet, "c1"},
		{"kiwi", 1, base.KindSet, "k1"},
	}},
}

const boundaryLastSeq = 8

// makeBoundaryDB writes boundaryFiles with Strata's table writer and lists
// them in a MANIFEST written by its version set.
func makeBoundaryDB(t *testing.T) string {
	dir := t.TempDir()
	fs := vfs.Default
	vs, err := version.Create(fs, dir, version.Options{})
	require.NoError(t, err)
	ve := &version.Edit{}
	for _, bf := range boundaryFiles {
		for vs.NextFileNum() < bf.num {
		}
		name := filepath.Join(dir, base.MakeFilename(base.FileKindTable, bf.num))
		f, err := fs.Create(name)
		require.NoError(t, err)
		w := table.NewWriter(f, table.WriterOptions{BloomBitsPerKey: 10})
		m := &version.FileMetadata{FileNum: bf.num, SmallestSeq: base.MaxSeqNum,
			NumRangeDeletions: uint64(len(bf.tombs)), RangeDelsKnown: true}
		var keys []base.InternalKey
		for _, e := range bf.ents {
			k := base.MakeInternalKey([]byte(e.key), e.seq, e.kind)
			require.NoError(t, w.Add(k, []byte(e.value)))
			keys = append(keys, k)
			m.SmallestSeq, m.LargestSeq = min(m.SmallestSeq, e.seq), max(m.LargestSeq, e.seq)
		}
		for _, tb := range bf.tombs {
			require.NoError(t, w.AddTombstone(tb))
			keys = append(keys, base.MakeInternalKey(tb.Start, tb.Seq, base.KindRangeDelete),
				base.MakeInternalKey(tb.End, base.MaxSeqNum, base.KindRangeDelete))
			m.SmallestSeq, m.LargestSeq = min(m.SmallestSeq, tb.Seq), max(m.LargestSeq, tb.Seq)
		}
		sort.Slice(keys, func(i, j int) bool { return base.InternalCompare(keys[i], keys[j]) < 0 })
		m.Smallest, m.Largest = keys[0], keys[len(keys)-1]
		if version.IsSentinel(m.Largest) {
			// The tombstones end before the last point key here; keep
			// the fixture's bounds on real keys.
			m.Largest = base.MakeInternalKey([]byte(bf.ents[len(bf.ents)-1].key),
				bf.ents[len(bf.ents)-1].seq, bf.ents[len(bf.ents)-1].kind)
		}
		_, err = w.Finish()
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
		st, err := fs.Stat(name)
		require.NoError(t, err)
		m.Size = uint64(st.Size())
		ve.NewFiles = append(ve.NewFiles, version.NewFileEntry{Level: bf.level, Meta: m})
	}
	ve.LastSequence, ve.HasLastSequence = boundaryLastSeq, true
	require.NoError(t, vs.LogAndApply(ve))
	require.NoError(t, vs.Close())
	return dir
}

// boundaryModel returns the visible key/value pairs at exclusive read
// sequence snap, in key order, from the fixture's whole history.
func boundaryModel(snap base.SeqNum) [][2]string {
	type ver struct {
		seq   base.SeqNum
		kind  base.Kind
		value string
	}
	hist := map[string][]ver{}
	var tombs []base.Tombstone
	for _, bf := range boundaryFiles {
		for _, e := range bf.ents {
			hist[e.key] = append(hist[e.key], ver{e.seq, e.kind, e.value})
		}
		tombs = append(tombs, bf.tombs...)
	}
	var out [][2]string
	for k, vs := range hist {
		var best *ver
		for i := range vs {
			if vs[i].seq < snap && (best == nil || vs[i].seq > best.seq) {
				best = &vs[i]
			}
		}
		if best == nil || best.kind != base.KindSet {
			continue
		}
		covered := false
		for _, tb := range tombs {
			if tb.Seq < snap && tb.Seq > best.seq && string(tb.Start) <= k && k < string(tb.End) {
				covered = true
			}
		}
		if !covered {
			out = append(out, [2]string{k, best.value})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

func openBoundaryDB(t *testing.T) *DB {
	d, err := Open(makeBoundaryDB(t), &Options{DisableAutoCompactions: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func TestBoundaryKeyLevelGet(t *testing.T) {
	d := openBoundaryDB(t)
	keys := []string{"apple", "banana", "cherry", "grape", "kiwi", "zebra"}
	for snap := base.SeqNum(1); snap <= boundaryLastSeq+1; snap++ {
		want := map[string]string{}
		for _, kv := range boundaryModel(snap) {
			want[kv[0]] = kv[1]
		}
		ro := &ReadOptions{Snapshot: &Snapshot{db: d, seq: snap}}
		var bkeys [][]byte
		for _, k := range keys {
			bkeys = append(bkeys, []byte(k))
		}
		vals, errs := d.MultiGet(bkeys, ro)
		for i, k := range keys {
			v, err := d.Get([]byte(k), ro)
			w, ok := want[k]
			if !ok {
				require.True(t, errors.Is(err, ErrNotFound), "Get(%q) at %d: %v %q", k, snap, err, v)
				require.True(t, errors.Is(errs[i], ErrNotFound), "MultiGet(%q) at %d: %v", k, snap, errs[i])
				continue
			}
			require.NoError(t, err, "Get(%q) at %d", k, snap)
			require.Equal(t, w, string(v), "Get(%q) at %d", k, snap)
			require.NoError(t, errs[i], "MultiGet(%q) at %d", k, snap)
			require.Equal(t, w, string(vals[i]), "MultiGet(%q) at %d", k, snap)
		}
	}
}

func fmtPairs(kvs [][2]string) string {
	var sb strings.Builder
	for _, kv := range kvs {
		fmt.Fprintf(&sb, "%s=%s ", kv[0], kv[1])
	}
	return sb.String()
}

func TestBoundaryKeyLevelIterate(t *testing.T) {
	d := openBoundaryDB(t)
	for snap := base.SeqNum(1); snap <= boundaryLastSeq+1; snap++ {
		want := boundaryModel(snap)
		it := d.NewIterator(&ReadOptions{Snapshot: &Snapshot{db: d, seq: snap}})
		var fwd, bwd [][2]string
		for it.SeekToFirst(); it.Valid(); it.Next() {
			fwd = append(fwd, [2]string{string(it.Key()), string(it.Value())})
		}
		for it.SeekToLast(); it.Valid(); it.Prev() {
			bwd = append([][2]string{{string(it.Key()), string(it.Value())}}, bwd...)
		}
		require.Equal(t, fmtPairs(want), fmtPairs(fwd), "forward at %d", snap)
		require.Equal(t, fmtPairs(want), fmtPairs(bwd), "backward at %d", snap)
		// Seeks at and around the shared key, both ways.
		for _, target := range []string{"b", "banana", "banana\x00", "c", "cherry", "h"} {
			var ge, lt string
			for _, kv := range want {
				if ge == "" && kv[0] >= target {
					ge = kv[0] + "=" + kv[1]
				}
				if kv[0] <= target {
					lt = kv[0] + "=" + kv[1]
				}
			}
			got := ""
			if it.Seek([]byte(target)); it.Valid() {
				got = string(it.Key()) + "=" + string(it.Value())
			}
			require.Equal(t, ge, got, "Seek(%q) at %d", target, snap)
			got = ""
			if it.SeekForPrev([]byte(target)); it.Valid() {
				got = string(it.Key()) + "=" + string(it.Value())
			}
			require.Equal(t, lt, got, "SeekForPrev(%q) at %d", target, snap)
		}
		require.NoError(t, it.Err())
		require.NoError(t, it.Close())
	}
}

// TestBoundaryKeyLevelCompaction compacts a range that touches only one of
// the two L1 files sharing "banana": the picker must take both, or the
// newer versions (A's) would move below B's older ones.
func TestBoundaryKeyLevelCompaction(t *testing.T) {
	for _, r := range [][2]string{{"apple", "apple"}, {"grape", "grape"}} {
		t.Run(r[0], func(t *testing.T) {
			d := openBoundaryDB(t)
			v := d.loadReadState()
			p := v.version.PickRange(1, 2, []byte(r[0]), []byte(r[1]))
			v.unref()
			require.NotNil(t, p)
			var nums []uint64
			for _, f := range p.Inputs[0] {
				nums = append(nums, f.FileNum)
			}
			require.Equal(t, []uint64{10, 11}, nums)

			require.NoError(t, d.CompactRange([]byte(r[0]), []byte(r[1])))
			want := boundaryModel(boundaryLastSeq + 1)
			it := d.NewIterator(nil)
			var got [][2]string
			for it.SeekToFirst(); it.Valid(); it.Next() {
				got = append(got, [2]string{string(it.Key()), string(it.Value())})
			}
			require.NoError(t, it.Close())
			require.Equal(t, fmtPairs(want), fmtPairs(got))
			_, err := d.Get([]byte("banana"), nil)
			require.True(t, errors.Is(err, ErrNotFound), "%v", err)
			s, _ := d.GetProperty("rocksdb.num-files-at-level1")
			require.Equal(t, "0", s)
		})
	}
}

// TestBoundaryKeyRocksDBFixture opens a checkpoint that RocksDB's `ldb
// checkpoint` made after its background compaction had run (see the
// fixture's COMMAND.txt): its L1 files 000018 and 000013 share the boundary
// user key "banana". Before Strata accepted such levels, Open refused it,
// and TestCheckpointOfRocksDBCheckpoint failed whenever the compaction won
// the race.
func TestBoundaryKeyRocksDBFixture(t *testing.T) {
	const fixture = "ldb-tiny-shared-boundary"
	dir := compatCopyDir(t, filepath.Join(compatFixtures, fixture, "db"))
	d, err := Open(dir, &Options{DisableAutoCompactions: true})
	require.NoError(t, err)
	rs := d.loadReadState()
	l1 := rs.version.Levels[1]
	shared := false
	for i := 1; i < len(l1); i++ {
		if string(l1[i-1].Largest.UserKey) == "banana" && string(l1[i].Smallest.UserKey) == "banana" {
			shared = true
		}
	}
	rs.unref()
	require.True(t, shared, "the fixture no longer has two L1 files sharing \"banana\"")
	// The deletion (seq 8, in 000018) hides the value of seq 2 (in 000013).
	_, err = d.Get([]byte("banana"), nil)
	require.True(t, errors.Is(err, ErrNotFound), "%v", err)
	v, err := d.Get([]byte("banana"), &ReadOptions{Snapshot: &Snapshot{db: d, seq: 8}})
	require.NoError(t, err)
	require.Equal(t, "yellow", string(v))
	require.NoError(t, d.Close())

	entries, sum := compatExpected(t, fixture)
	got := ckptScan(t, vfs.Default, compatCopyDir(t, filepath.Join(compatFixtures, fixture, "db")))
	require.Equal(t, sum, compatSHA(got))
	require.Equal(t, entries, len(splitLines(got)))

	// A compaction of L1 takes both files and keeps the contents.
	d, err = Open(dir, &Options{DisableAutoCompactions: true})
	require.NoError(t, err)
	require.NoError(t, d.CompactRange([]byte("grape"), []byte("grape")))
	got, err = compatScan(t, d)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	require.Equal(t, sum, compatSHA(got))
}
