package db_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// TestKeepLogFileNum: with KeepLogFileNum n, Open keeps LOG and the n-1
// newest LOG.old.<timestamp> files (RocksDB's keep_log_file_num counts the
// live LOG), and leaves files that only look like old logs alone.
func TestKeepLogFileNum(t *testing.T) {
	const n = 3
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/db", 0o755))
	oldLogs := func() []string {
		names, err := fs.List("/db")
		require.NoError(t, err)
		var out []string
		for _, name := range names {
			if strings.HasPrefix(name, "LOG.old.") {
				out = append(out, name)
			}
		}
		sort.Strings(out)
		return out
	}
	f, err := fs.Create("/db/LOG.old.not-a-timestamp")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	var created []string // old logs in order of creation
	for i := 0; i < n+2; i++ {
		before := map[string]bool{}
		for _, name := range oldLogs() {
			before[name] = true
		}
		d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true, KeepLogFileNum: n})
		require.NoError(t, err)
		require.NoError(t, d.Put([]byte("k"), []byte("v"), nil))
		require.NoError(t, d.Close())
		for _, name := range oldLogs() {
			if !before[name] {
				created = append(created, name)
			}
		}
	}
	require.Len(t, created, n+1, "every Open but the first rotates LOG")
	want := append([]string{"LOG.old.not-a-timestamp"}, created[len(created)-(n-1):]...)
	sort.Strings(want)
	require.Equal(t, want, oldLogs())
	_, err = fs.Stat("/db/LOG")
	require.NoError(t, err)

	_, err = db.Open("/db", &db.Options{FS: fs, KeepLogFileNum: -1})
	require.ErrorIs(t, err, db.ErrInvalidArgument)
}
