package db_test

import (
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/prefix"
	"github.com/stratadb/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestColumnFamilyPrefixFastPath: the tables of a family other than the
// default one learn that family's extractor handle at their first prefix
// check (one Name comparison each), then take the one-pointer fast path;
// an extractor change in another family leaves that alone, and a change
// in the family itself makes its old tables' filters unusable.
func TestColumnFamilyPrefixFastPath(t *testing.T) {
	const tables = 3
	fs := vfs.NewMem()
	o := &db.Options{PrefixExtractor: prefix.Fixed(1), DisableAutoCompactions: true,
		CreateMissingColumnFamilies: true, ColumnFamilies: map[string]*db.ColumnFamilyOptions{
			"a": {PrefixExtractor: prefix.Fixed(12), BloomBitsPerKey: 16, CompactionStyle: db.FIFOCompaction}}}
	d := openCF(t, fs, o)
	a := d.ColumnFamily("a")
	for tb := range tables {
		require.NoError(t, a.Put([]byte("a"), nil, nil)) // every table spans the key space
		require.NoError(t, a.Put([]byte("z"), nil, nil))
		for pfx := tb * 10; pfx < tb*10+10; pfx++ {
			for i := range 3 {
				require.NoError(t, a.Put(counterKey(pfx, i), []byte("v"), nil))
			}
		}
		require.NoError(t, a.Flush())
	}
	require.NoError(t, d.Close())
	// Reopened: the table cache opens every table afresh.
	d = openCF(t, fs, o)
	defer d.Close()
	a = d.ColumnFamily("a")
	const n = 30
	seeks := func(want int) counters {
		t.Helper()
		before := readCounters(t, d)
		for s := range n {
			pfx := s % (tables * 10)
			it := a.NewIterator(&db.ReadOptions{PrefixSameAsStart: true})
			got := 0
			for it.Seek(counterKey(pfx, 0)); it.Valid(); it.Next() {
				got++
			}
			require.NoError(t, it.Close())
			if want > 0 {
				require.Equal(t, want, got, "prefix %d", pfx)
			}
		}
		return readCounters(t, d).sub(before)
	}
	first := counters{checks: n * tables, useful: n * (tables - 1), fast: n*tables - tables, slow: tables}
	fast := counters{checks: n * tables, useful: n * (tables - 1), fast: n * tables}
	require.Equal(t, first, seeks(3), "first seeks: one Name comparison per table")
	require.Equal(t, fast, seeks(3), "then the fast path")
	// The default family's extractor changes: a's tables do not notice.
	require.NoError(t, d.SetOptions(map[string]string{"prefix_extractor": "fixed:2"}))
	require.Equal(t, fast, seeks(3), "after the default family's change")
	// a's own change to an incompatible extractor: no filter is used.
	require.NoError(t, a.SetOptions(map[string]string{"prefix_extractor": "fixed:8"}))
	c := seeks(0)
	require.Equal(t, counters{checks: n * tables, slow: n * tables, incompatible: n * tables}, c, "incompatible")
}
