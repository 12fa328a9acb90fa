package db_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/vfs"
	"github.com/stretchr/testify/require"
)

func cfPropUint(t *testing.T, cf *db.ColumnFamily, name string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(prop(t, cf, name), 10, 64)
	require.NoError(t, err, "%s of %q", name, cf.Name())
	return n
}

// TestColumnFamilyPropertiesPerFamily: RocksDB's per-family property names
// answer for the family asked (the DB's GetProperty for the default one),
// and Metrics has each family's share with totals that add them up.
func TestColumnFamilyPropertiesPerFamily(t *testing.T) {
	d := openCF(t, vfs.NewMem(), &db.Options{DisableAutoCompactions: true})
	defer d.Close()
	a := createCF(t, d, "a", nil)
	b := createCF(t, d, "b", nil)
	def := d.DefaultColumnFamily()
	// a: two tables (30 and 20 keys) and 5 keys in its memtable; b: one
	// table of 7 keys, an empty memtable; default: 3 keys, no table.
	for i := range 50 {
		require.NoError(t, a.Put(fmt.Appendf(nil, "a%03d", i), make([]byte, 100), nil))
		if i == 29 || i == 49 {
			require.NoError(t, a.Flush())
		}
	}
	for i := range 5 {
		require.NoError(t, a.Put(fmt.Appendf(nil, "m%03d", i), []byte("v"), nil))
	}
	for i := range 7 {
		require.NoError(t, b.Put(fmt.Appendf(nil, "b%03d", i), []byte("v"), nil))
	}
	require.NoError(t, b.Flush())
	for i := range 3 {
		require.NoError(t, d.Put(fmt.Appendf(nil, "d%03d", i), []byte("v"), nil))
	}

	m := d.Metrics()
	require.Len(t, m.Families, 3)
	byName := map[string]db.FamilyMetrics{}
	for _, fm := range m.Families {
		byName[fm.Name] = fm
	}
	l0 := db.PropNumFilesAtLevelPrefix + "0"
	for cf, want := range map[*db.ColumnFamily]struct{ files, keys uint64 }{a: {2, 55}, b: {1, 7}, def: {0, 3}} {
		fm := byName[cf.Name()]
		require.Equal(t, cf.ID(), fm.ID)
		require.Equal(t, want.files, cfPropUint(t, cf, l0), cf.Name())
		require.Equal(t, int(want.files), fm.Files[0], cf.Name())
		require.Equal(t, fm.Size[0], cfPropUint(t, cf, db.PropTotalSSTFilesSize), cf.Name())
		require.Equal(t, want.keys, cfPropUint(t, cf, db.PropEstimateNumKeys), cf.Name())
		require.Equal(t, uint64(fm.MemTables.Count-1), cfPropUint(t, cf, db.PropNumImmutableMemTable), cf.Name())
		require.Equal(t, want.files, fm.Flush.Count, cf.Name())
	}
	require.Greater(t, byName["a"].Size[0], byName["b"].Size[0])
	require.Greater(t, cfPropUint(t, a, db.PropCurSizeActiveMemTable), cfPropUint(t, b, db.PropCurSizeActiveMemTable))
	require.Greater(t, cfPropUint(t, def, db.PropCurSizeActiveMemTable), cfPropUint(t, b, db.PropCurSizeActiveMemTable))
	// The readers of each family's tables, opened by a read of each table.
	requireGet(t, a, "a000", string(make([]byte, 100)))
	requireGet(t, a, "a030", string(make([]byte, 100)))
	requireGet(t, b, "b000", "v")
	readersA, readersB := cfPropUint(t, a, db.PropTableReadersMem), cfPropUint(t, b, db.PropTableReadersMem)
	require.Positive(t, readersB)
	require.Greater(t, readersA, readersB)
	require.Zero(t, cfPropUint(t, def, db.PropTableReadersMem))
	require.Equal(t, uint64(d.Metrics().TableReadersMem), readersA+readersB)
	// The DB's own GetProperty is the default family's.
	for _, name := range []string{l0, db.PropTotalSSTFilesSize, db.PropEstimateNumKeys, db.PropCurSizeActiveMemTable,
		db.PropPrefixExtractor, db.PropTableReadersMem} {
		v, ok := d.GetProperty(name)
		require.True(t, ok, name)
		require.Equal(t, prop(t, def, name), v, name)
	}
	// Properties of the database, not of a family, read alike in every
	// family.
	snap := d.NewSnapshot()
	defer snap.Release()
	for _, name := range []string{db.PropNumSnapshots, db.PropBlockCacheCapacity} {
		require.Equal(t, prop(t, def, name), prop(t, a, name), name)
		require.Equal(t, prop(t, def, name), prop(t, b, name), name)
	}
	require.Equal(t, "1", prop(t, b, db.PropNumSnapshots))

	// The totals add the families up.
	var files, memCount int
	var size, memSize, flushes, pending uint64
	for _, fm := range m.Families {
		for level := range fm.Files {
			require.LessOrEqual(t, fm.Files[level], m.Levels[level].NumFiles)
			files += fm.Files[level]
			size += fm.Size[level]
		}
		memCount += fm.MemTables.Count
		memSize += fm.MemTables.Size
		flushes += fm.Flush.Count
		pending += fm.PendingCompactionBytes
	}
	var levelFiles int
	var levelSize uint64
	for _, l := range m.Levels {
		levelFiles += l.NumFiles
		levelSize += l.Size
	}
	require.Equal(t, 3, files)
	require.Equal(t, files, levelFiles)
	require.Equal(t, size, levelSize)
	require.Equal(t, memCount, m.MemTables.Count)
	require.Equal(t, memSize, m.MemTables.Size)
	require.Equal(t, flushes, m.Flush.Count)
	require.Equal(t, pending, m.Compact.PendingBytes)
}
