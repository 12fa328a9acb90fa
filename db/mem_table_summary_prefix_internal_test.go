package db

import (
	"fmt"
	"testing"

	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// The memtable summary prefix follows the keys: the common prefix of the
// memtable a flush replaced, of the tables' key range after a reopen, or of
// the memtable a WAL replay filled; reads find every key whatever it is.
func TestSummaryPrefixFollowsKeys(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{CreateIfMissing: true, FS: fs}
	d, err := Open("db", opts)
	require.NoError(t, err)
	prefix := func() string {
		d.mu.Lock()
		defer d.mu.Unlock()
		return string(d.def.mu.summaryPrefix)
	}
	require.Equal(t, "", prefix(), "an empty database has no key range")
	// put writes keys format(0), format(step), ... n of them, each its
	// own value.
	put := func(format string, n, step int, wo *WriteOptions) {
		for i := 0; i < n; i++ {
			k := fmt.Sprintf(format, i*step)
			require.NoError(t, d.Put([]byte(k), []byte(k), wo))
		}
	}
	found := func(keys ...string) {
		for _, k := range keys {
			v, err := d.Get([]byte(k), nil)
			require.NoError(t, err)
			require.Equal(t, k, string(v))
		}
	}
	// reopen closes d, opens the database with o and checks the prefix
	// Open picked.
	reopen := func(o *Options, want string) {
		require.NoError(t, d.Close())
		var err error
		d, err = Open("db", o)
		require.NoError(t, err)
		require.Equal(t, want, prefix())
	}
	put("user%08d", 1000, 7, nil)
	require.NoError(t, d.Flush())
	require.Equal(t, "user0000", prefix())

	reopen(opts, "user0000")     // the tables hold the user keys
	put("item%06d", 500, 7, nil) // keys without the prefix: compared in full
	found("item000007", "user00006993")
	require.NoError(t, d.Flush())
	require.Equal(t, "item00", prefix())

	reopen(opts, "") // the tables hold both key sets, which share nothing

	// A crash with synced writes in the WAL: the replayed memtable's keys
	// decide.
	put("zone%05d", 300, 3, &WriteOptions{Sync: true})
	reopen(&Options{FS: fs.CrashClone()}, "zone00")
	found("zone00897", "item003493", "user00000000")
	require.NoError(t, d.Close())
}
