package db_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/internal/vfs/errorfs"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

// smallLeveled are options that make a few thousand writes build several
// levels.
func smallLeveled(fs vfs.FS) *db.Options {
	return &db.Options{
		CreateIfMissing:                true,
		FS:                             fs,
		WriteBufferSize:                16 << 10,
		TargetFileSizeBase:             8 << 10,
		MaxBytesForLevelBase:           32 << 10,
		MaxBytesForLevelMultiplier:     4,
		Level0FileNumCompactionTrigger: 2,
		Level0SlowdownWritesTrigger:    4,
		Level0StopWritesTrigger:        8,
		MaxBackgroundJobs:              4,
		BlockSize:                      512,
	}
}

type snapModel struct {
	snap  *db.Snapshot
	model *testutil.Model
}

// checkView compares Get and iteration in both directions at ro with m.
func checkView(t *testing.T, d *db.DB, ro *db.ReadOptions, m *testutil.Model, keys [][]byte) {
	t.Helper()
	for _, k := range keys {
		want, ok := m.Get(k)
		got, err := d.Get(k, ro)
		if !ok {
			require.ErrorIs(t, err, db.ErrNotFound, "key %q", k)
			continue
		}
		require.NoError(t, err, "key %q", k)
		require.Equal(t, string(want), string(got), "key %q", k)
	}
	kvs := m.Range(nil, nil)
	it := d.NewIterator(ro)
	i := 0
	for it.SeekToFirst(); it.Valid(); it.Next() {
		require.Less(t, i, len(kvs), "extra key %q", it.Key())
		require.Equal(t, kvs[i].Key, string(it.Key()))
		require.Equal(t, kvs[i].Value, string(it.Value()))
		i++
	}
	require.NoError(t, it.Err())
	require.Equal(t, len(kvs), i)
	for it.SeekToLast(); it.Valid(); it.Prev() {
		i--
		require.Equal(t, kvs[i].Key, string(it.Key()))
	}
	require.Equal(t, 0, i)
	require.NoError(t, it.Close())
}

func TestCompactionRandomizedModel(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewSource(seed))
	fs := vfs.NewMem()
	d, err := db.Open("/db", smallLeveled(fs))
	require.NoError(t, err)
	defer d.Close()
	keys := make([][]byte, 400)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("k%05d", rng.Intn(100000)))
	}
	m := testutil.NewModel()
	var snaps []snapModel
	for step := 0; step < 12000; step++ {
		k := keys[rng.Intn(len(keys))]
		switch r := rng.Intn(100); {
		case r < 70:
			v := []byte(fmt.Sprintf("v%d-%s", step, strings.Repeat("x", rng.Intn(60))))
			require.NoError(t, d.Put(k, v, nil))
			m.Put(k, v)
		case r < 85:
			require.NoError(t, d.Delete(k, nil))
			m.Delete(k)
		case r < 88:
			k2 := keys[rng.Intn(len(keys))]
			if string(k2) < string(k) {
				k, k2 = k2, k
			}
			require.NoError(t, d.DeleteRange(k, k2, nil))
			m.DeleteRange(k, k2)
		case r < 89:
			snaps = append(snaps, snapModel{d.NewSnapshot(), m.Clone()})
		case r < 90 && len(snaps) > 0:
			i := rng.Intn(len(snaps))
			checkView(t, d, &db.ReadOptions{Snapshot: snaps[i].snap}, snaps[i].model, keys)
			snaps[i].snap.Release()
			snaps = append(snaps[:i], snaps[i+1:]...)
		case r < 91 && step%7 == 0:
			a, b := keys[rng.Intn(len(keys))], keys[rng.Intn(len(keys))]
			if string(b) < string(a) {
				a, b = b, a
			}
			if rng.Intn(3) == 0 {
				a, b = nil, nil
			}
			require.NoError(t, d.CompactRange(a, b))
		}
		if step%3000 == 2999 {
			checkView(t, d, nil, m, keys)
		}
	}
	require.NoError(t, db.WaitForCompactions(d))
	checkView(t, d, nil, m, keys)
	for _, s := range snaps {
		checkView(t, d, &db.ReadOptions{Snapshot: s.snap}, s.model, keys)
	}
	stats, _ := d.GetProperty(db.PropStats)
	t.Log(stats)
	require.Contains(t, stats, "compactions: ")
	require.NotContains(t, stats, "compactions: 0 ")
	for _, s := range snaps {
		s.snap.Release()
	}
	// Everything survives a reopen.
	require.NoError(t, d.Close())
	d, err = db.Open("/db", smallLeveled(fs))
	require.NoError(t, err)
	checkView(t, d, nil, m, keys)
}

func mustProp(t *testing.T, d *db.DB, name string) string {
	v, ok := d.GetProperty(name)
	require.True(t, ok, name)
	return v
}

// tableCounts sums the point entries, point deletions and range deletions
// of every table in dir.
func tableCounts(t *testing.T, fs vfs.FS, dir string) (entries, dels, rangeDels uint64) {
	names, err := fs.List(dir)
	require.NoError(t, err)
	for _, name := range names {
		kind, _, ok := base.ParseFilename(name)
		if !ok || kind != base.FileKindTable {
			continue
		}
		f, err := fs.Open(dir + "/" + name)
		require.NoError(t, err)
		st, err := f.Stat()
		require.NoError(t, err)
		r, err := table.Open(f, st.Size(), table.ReaderOptions{FileName: name})
		require.NoError(t, err)
		p := r.Properties()
		entries += p.NumEntries - p.NumRangeDeletions
		dels += p.NumDeletions - p.NumRangeDeletions
		rangeDels += uint64(len(r.Tombstones()))
		require.NoError(t, r.Close())
	}
	return entries, dels, rangeDels
}

// fillGarbage writes 1000 keys three times, deletes every tenth and a range
// of 100, flushing in between so the garbage reaches tables.
func fillGarbage(t *testing.T, d *db.DB) (live int) {
	for round := 0; round < 3; round++ {
		for i := 0; i < 1000; i++ {
			require.NoError(t, d.Put([]byte(fmt.Sprintf("key%04d", i)), []byte(fmt.Sprintf("v%d", round)), nil))
		}
		require.NoError(t, d.Flush())
	}
	for i := 0; i < 1000; i += 10 {
		require.NoError(t, d.Delete([]byte(fmt.Sprintf("key%04d", i)), nil))
	}
	require.NoError(t, d.DeleteRange([]byte("key0500"), []byte("key0600"), nil))
	require.NoError(t, d.Flush())
	return 1000 - 100 - 90
}

func TestCompactionGarbageCollection(t *testing.T) {
	for _, withSnap := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%v", withSnap), func(t *testing.T) {
			fs := vfs.NewMem()
			o := smallLeveled(fs)
			o.DisableAutoCompactions = true
			d, err := db.Open("/db", o)
			require.NoError(t, err)
			var snap *db.Snapshot
			for i := 0; i < 1000; i++ {
				require.NoError(t, d.Put([]byte(fmt.Sprintf("key%04d", i)), []byte("old"), nil))
			}
			if withSnap {
				snap = d.NewSnapshot()
			}
			live := fillGarbage(t, d)
			require.NoError(t, d.CompactRange(nil, nil))
			require.NoError(t, d.Close()) // deletes obsolete tables
			entries, dels, rdels := tableCounts(t, fs, "/db")
			if !withSnap {
				require.Equal(t, uint64(live), entries)
				require.Zero(t, dels)
				require.Zero(t, rdels)
			} else {
				// The snapshot still sees "old" for every key: those
				// versions, and the deletions hiding them from newer
				// readers, must stay.
				require.Equal(t, uint64(live+1000+90), entries)
				require.Equal(t, uint64(90), dels)
				require.NotZero(t, rdels)
			}
			d, err = db.Open("/db", o)
			require.NoError(t, err)
			defer d.Close()
			n := 0
			it := d.NewIterator(nil)
			for it.SeekToFirst(); it.Valid(); it.Next() {
				n++
			}
			require.NoError(t, it.Close())
			require.Equal(t, live, n)
			_ = snap
		})
	}
}

func TestCompactionSnapshotSeesOldVersions(t *testing.T) {
	fs := vfs.NewMem()
	d, err := db.Open("/db", smallLeveled(fs))
	require.NoError(t, err)
	defer d.Close()
	for i := 0; i < 1000; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("key%04d", i)), []byte("old"), nil))
	}
	snap := d.NewSnapshot()
	defer snap.Release()
	fillGarbage(t, d)
	require.NoError(t, d.CompactRange(nil, nil))
	require.NoError(t, db.WaitForCompactions(d))
	for _, k := range []string{"key0000", "key0550", "key0999"} {
		v, err := d.Get([]byte(k), &db.ReadOptions{Snapshot: snap})
		require.NoError(t, err)
		require.Equal(t, "old", string(v))
	}
	_, err = d.Get([]byte("key0550"), nil)
	require.ErrorIs(t, err, db.ErrNotFound)
}

func TestCompactionOverwriteBoundedSpace(t *testing.T) {
	fs := vfs.NewMem()
	o := smallLeveled(fs)
	d, err := db.Open("/db", o)
	require.NoError(t, err)
	defer d.Close()
	val := strings.Repeat("v", 100)
	const n = 2000
	maxL0 := 0
	for round := 0; round < 8; round++ {
		for i := 0; i < n; i++ {
			k := []byte(fmt.Sprintf("key%06d", (i*7919)%n))
			require.NoError(t, d.Put(k, []byte(val), nil))
		}
		var l0 int
		fmt.Sscan(mustProp(t, d, db.PropNumFilesAtLevelPrefix+"0"), &l0)
		maxL0 = max(maxL0, l0)
	}
	require.NoError(t, db.WaitForCompactions(d))
	var size int
	fmt.Sscan(mustProp(t, d, db.PropTotalSSTFilesSize), &size)
	liveBytes := n * (len(val) + 10)
	t.Logf("sst bytes %d, live bytes %d, max L0 files %d", size, liveBytes, maxL0)
	require.Less(t, size, 4*liveBytes)
	require.LessOrEqual(t, maxL0, o.Level0StopWritesTrigger+1)
	stats := mustProp(t, d, db.PropStats)
	require.Contains(t, stats, "W-Amp")
	t.Log(stats)
}

func TestCompactionFIFO(t *testing.T) {
	fs := vfs.NewMem()
	const limit = 64 << 10
	d, err := db.Open("/db", &db.Options{CreateIfMissing: true, FS: fs, CompactionStyle: db.FIFOCompaction,
		FIFOMaxTableFilesSize: limit, WriteBufferSize: 16 << 10, Level0StopWritesTrigger: 2,
		Level0SlowdownWritesTrigger: 1, Level0FileNumCompactionTrigger: 1})
	require.NoError(t, err)
	defer d.Close()
	val := strings.Repeat("f", 200)
	for batch := 0; batch < 30; batch++ {
		for i := 0; i < 50; i++ {
			require.NoError(t, d.Put([]byte(fmt.Sprintf("b%03d-%03d", batch, i)), []byte(val), nil))
		}
		require.NoError(t, d.Flush())
		require.NoError(t, db.WaitForCompactions(d))
		var size int
		fmt.Sscan(mustProp(t, d, db.PropTotalSSTFilesSize), &size)
		require.LessOrEqual(t, size, limit)
		// The newest batch is always there.
		_, err := d.Get([]byte(fmt.Sprintf("b%03d-%03d", batch, 49)), nil)
		require.NoError(t, err)
	}
	_, err = d.Get([]byte("b000-000"), nil)
	require.ErrorIs(t, err, db.ErrNotFound, "the oldest file is dropped")
	for lvl := 1; lvl < 7; lvl++ {
		require.Equal(t, "0", mustProp(t, d, fmt.Sprintf("%s%d", db.PropNumFilesAtLevelPrefix, lvl)))
	}
	require.NoError(t, d.CompactRange(nil, nil))
}

func TestCompactionFIFOAllowCompaction(t *testing.T) {
	fs := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{CreateIfMissing: true, FS: fs, CompactionStyle: db.FIFOCompaction,
		FIFOMaxTableFilesSize: 1 << 30, FIFOAllowCompaction: true, WriteBufferSize: 64 << 10,
		Level0FileNumCompactionTrigger: 4})
	require.NoError(t, err)
	defer d.Close()
	for batch := 0; batch < 12; batch++ {
		for i := 0; i < 20; i++ {
			require.NoError(t, d.Put([]byte(fmt.Sprintf("k%03d", i)), []byte(fmt.Sprint(batch)), nil))
		}
		require.NoError(t, d.Flush())
	}
	require.NoError(t, db.WaitForCompactions(d))
	var l0 int
	fmt.Sscan(mustProp(t, d, db.PropNumFilesAtLevelPrefix+"0"), &l0)
	require.Less(t, l0, 12, "small L0 files were merged")
	v, err := d.Get([]byte("k005"), nil)
	require.NoError(t, err)
	require.Equal(t, "11", string(v))
}

func TestCompactionWriteErrorStopsWrites(t *testing.T) {
	mem := vfs.NewMem()
	toggle := errorfs.NewToggle(errorfs.OpWrite).PathContains(".sst")
	fs := errorfs.Wrap(mem, toggle)
	o := smallLeveled(fs)
	o.DisableAutoCompactions = true
	d, err := db.Open("/db", o)
	require.NoError(t, err)
	for i := 0; i < 2000; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("key%05d", i)), []byte(fmt.Sprint(i)), nil))
	}
	require.NoError(t, d.Flush())
	// Acknowledged, only in the WAL and memtable.
	require.NoError(t, d.Put([]byte("late"), []byte("write"), nil))
	toggle.Enable()
	err = d.CompactRange(nil, nil)
	require.ErrorIs(t, err, errorfs.ErrInjected)
	require.ErrorIs(t, d.Put([]byte("x"), []byte("y"), nil), errorfs.ErrInjected)
	v, err := d.Get([]byte("key01234"), nil)
	require.NoError(t, err)
	require.Equal(t, "1234", string(v))
	require.Contains(t, mustProp(t, d, db.PropBackgroundError), "injected")
	_ = d.Close()

	o.FS = mem
	d, err = db.Open("/db", o)
	require.NoError(t, err)
	defer d.Close()
	for _, i := range []int{0, 999, 1999} {
		v, err := d.Get([]byte(fmt.Sprintf("key%05d", i)), nil)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint(i), string(v))
	}
	v, err = d.Get([]byte("late"), nil)
	require.NoError(t, err)
	require.Equal(t, "write", string(v))
	require.NoError(t, d.CompactRange(nil, nil))
}

func TestCompactionSetOptions(t *testing.T) {
	fs := vfs.NewMem()
	o := smallLeveled(fs)
	o.DisableAutoCompactions = true
	d, err := db.Open("/db", o)
	require.NoError(t, err)
	defer d.Close()
	for _, bad := range []map[string]string{
		{"level0_file_num_compaction_trigger": "0"},
		{"max_bytes_for_level_multiplier": "0.5"},
		{"target_file_size_base": "x"},
	} {
		require.ErrorIs(t, d.SetOptions(bad), db.ErrInvalidArgument)
	}
	for i := 0; i < 6; i++ {
		for j := 0; j < 100; j++ {
			require.NoError(t, d.Put([]byte(fmt.Sprintf("k%03d", j)), []byte(fmt.Sprint(i)), nil))
		}
		require.NoError(t, d.Flush())
	}
	require.Equal(t, "6", mustProp(t, d, db.PropNumFilesAtLevelPrefix+"0"))
	require.NoError(t, d.SetOptions(map[string]string{
		"level0_file_num_compaction_trigger": "3", "level0_slowdown_writes_trigger": "10",
		"level0_stop_writes_trigger": "20", "target_file_size_base": "4096",
		"max_bytes_for_level_base": "65536", "max_bytes_for_level_multiplier": "8",
		"max_background_jobs": "3", "disable_auto_compactions": "false",
	}))
	require.NoError(t, db.WaitForCompactions(d))
	require.Equal(t, "0", mustProp(t, d, db.PropNumFilesAtLevelPrefix+"0"))
	v, err := d.Get([]byte("k042"), nil)
	require.NoError(t, err)
	require.Equal(t, "5", string(v))
}

// TestCompactionReadsDoNotFillBlockCache: a compaction reads its inputs
// through the block cache without adding to it (RocksDB's fill_cache=false
// for compaction inputs), so compacting a database that no one has read
// leaves the cache empty however much room it has, and a block a reader
// had cached is still served from it.
func TestCompactionReadsDoNotFillBlockCache(t *testing.T) {
	for _, comp := range []db.Compression{db.NoCompression, db.SnappyCompression} {
		t.Run(comp.String(), func(t *testing.T) {
			o := smallLeveled(vfs.NewMem())
			o.BlockCacheSize = 64 << 20
			o.Compression = comp
			d, err := db.Open("db", o)
			require.NoError(t, err)
			defer d.Close()
			val := strings.Repeat("v", 200)
			for i := 0; i < 4000; i++ {
				require.NoError(t, d.Put([]byte(fmt.Sprintf("k%06d", i)), []byte(val), nil))
			}
			require.NoError(t, d.Flush())
			require.NoError(t, d.CompactRange(nil, nil))
			require.Zero(t, d.Metrics().BlockCache.Size, "a compaction added its input blocks to the block cache")

			// A block a reader cached is read from the cache by the next
			// compaction and stays cached.
			_, err = d.Get([]byte("k000010"), nil)
			require.NoError(t, err)
			cached := d.Metrics().BlockCache.Size
			require.Positive(t, cached)
			for i := 0; i < 4000; i += 2 {
				require.NoError(t, d.Put([]byte(fmt.Sprintf("k%06d", i)), []byte(val+"2"), nil))
			}
			require.NoError(t, d.Flush())
			hits := d.Metrics().BlockCache.Hits
			require.NoError(t, d.CompactRange(nil, nil))
			require.Equal(t, cached, d.Metrics().BlockCache.Size)
			require.Greater(t, d.Metrics().BlockCache.Hits, hits, "the compaction did not read the cached block from the cache")
			v, err := d.Get([]byte("k000011"), nil)
			require.NoError(t, err)
			require.Equal(t, val, string(v))
		})
	}
}
