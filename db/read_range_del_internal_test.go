package db

import (
	"fmt"
	"testing"

	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// A file whose range-deletion count the MANIFEST does not give (as in one
// RocksDB wrote) is opened for its tombstones once; a later read view skips
// it if it had none, and reads the same tombstones either way.
func TestTableTombstonesUnknownCountLearned(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/db", 0o755))
	d, err := Open("/db", &Options{CreateIfMissing: true, FS: fs, DisableAutoCompactions: true})
	require.NoError(t, err)
	defer d.Close()
	const files = 5
	for f := 0; f < files; f++ {
		for i := 0; i < 20; i++ {
			require.NoError(t, d.Put([]byte(fmt.Sprintf("k%02d-%02d", f, i)), []byte("v"), nil))
		}
		if f%2 == 1 { // files 1 and 3 hold a range deletion
			require.NoError(t, d.DeleteRange([]byte(fmt.Sprintf("k%02d-05", f)), []byte(fmt.Sprintf("k%02d-09", f)), nil))
		}
		require.NoError(t, d.Flush())
	}
	rs := d.loadReadState()
	defer rs.unref()
	require.Len(t, rs.version.Levels[0], files)

	// The same files with the counts unknown.
	unknown := &version.Version{}
	for level, lf := range rs.version.Levels {
		for _, f := range lf {
			require.True(t, f.RangeDelsKnown)
			c := *f
			c.RangeDelsKnown, c.NumRangeDeletions = false, 0
			unknown.Levels[level] = append(unknown.Levels[level], &c)
		}
	}
	evictAll := func() {
		for _, f := range rs.version.Levels[0] {
			d.tables.evict(f.FileNum)
		}
	}
	opened := func(v *version.Version) (int, int) {
		evictAll()
		before := d.stats.tablesOpened.Load()
		view := &readState{db: d, version: v}
		tt, err := view.tableTombstones()
		require.NoError(t, err)
		return int(d.stats.tablesOpened.Load() - before), len(tt)
	}

	n, tombs := opened(rs.version)
	require.Equal(t, 2, n, "known counts: only the tables with range deletions")
	require.Equal(t, 2, tombs)
	n, tombs = opened(unknown)
	require.Equal(t, files, n, "unknown counts: every table, once")
	require.Equal(t, 2, tombs)
	n, tombs = opened(unknown)
	require.Equal(t, 2, n, "learned counts: only the tables with range deletions")
	require.Equal(t, 2, tombs)
}
