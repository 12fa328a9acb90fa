package db_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

func filesWithPrefix(t *testing.T, fs vfs.FS, dir, prefix string) []string {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// TestFlushOfSeveralFamiliesStartsOneWAL: the OPTIONS files that family
// creations rewrite go as they are replaced (all but the newest two), not
// only at the next Open. And when several families are
// flushed together (Close), the first rotation starts a new WAL and the
// others, finding it still empty, reuse it. Before, each started its own
// and Close left one empty WAL per family behind, the older ones kept alive
// by families that had moved onto them. Writes after the flushes and a
// crash image still recover.
func TestFlushOfSeveralFamiliesStartsOneWAL(t *testing.T) {
	fs := vfs.NewMem()
	d, err := db.Open(cfDir, &db.Options{FS: fs, CreateIfMissing: true})
	require.NoError(t, err)
	var cfs []*db.ColumnFamily
	for i := 0; i < 3; i++ {
		cf, err := d.CreateColumnFamily(fmt.Sprintf("cf%d", i), nil)
		require.NoError(t, err)
		cfs = append(cfs, cf)
		require.NoError(t, cf.Put([]byte("k"), []byte(cf.Name()), nil))
	}
	require.NoError(t, d.Put([]byte("k"), []byte("default"), nil))
	require.Len(t, filesWithPrefix(t, fs, cfDir, "OPTIONS-"), 2,
		"each CreateColumnFamily rewrites OPTIONS; all but the newest two go")
	require.NoError(t, d.Close())
	require.Len(t, listFiles(t, fs, ".log"), 1, "Close left empty WALs behind")

	d, err = db.Open(cfDir, &db.Options{FS: fs})
	require.NoError(t, err)
	cfs = d.ColumnFamilies()[1:]
	// A flush of each family in turn with writes between them: every
	// rotation finds a written WAL, so WALs are made, and go once flushed.
	for i, cf := range cfs {
		require.NoError(t, cf.Put([]byte("k2"), []byte{byte('a' + i)}, &db.WriteOptions{Sync: true}))
		require.NoError(t, cf.Flush())
	}
	require.NoError(t, d.Put([]byte("k2"), []byte("z"), &db.WriteOptions{Sync: true}))
	img := fs.CrashClone()
	require.NoError(t, d.Close())

	r, err := db.Open(cfDir, &db.Options{FS: img})
	require.NoError(t, err)
	for i, cf := range r.ColumnFamilies() {
		want := "default"
		want2 := "z"
		if i > 0 {
			want, want2 = cf.Name(), string([]byte{byte('a' + i - 1)})
		}
		v, err := cf.Get([]byte("k"), nil)
		require.NoError(t, err)
		require.Equal(t, want, string(v))
		v, err = cf.Get([]byte("k2"), nil)
		require.NoError(t, err)
		require.Equal(t, want2, string(v))
	}
	require.NoError(t, r.Close())
}
