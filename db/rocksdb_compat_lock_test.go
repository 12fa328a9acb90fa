package db

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompatLockExcludesRocksDB: RocksDB locks LOCK with an fcntl record
// lock, which does not conflict with flock on Linux. While Strata has a
// directory open, RocksDB's ldb must not be able to write to it.
func TestCompatLockExcludesRocksDB(t *testing.T) {
	ldb := compatLDB(t)
	dir := t.TempDir()
	d, err := Open(dir, &Options{CreateIfMissing: true})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("a"), []byte("1"), &WriteOptions{Sync: true}))

	var out bytes.Buffer
	cmd := exec.Command(ldb, "--db="+dir, "put", "b", "2")
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	require.True(t, err != nil || bytes.Contains(out.Bytes(), []byte("Failed")),
		"ldb wrote to a directory Strata holds open: %s", out.String())
	require.Contains(t, out.String(), "lock")

	require.NoError(t, d.Close())
	// Once Strata closes, RocksDB can open it.
	runLDB(t, "--db="+dir, "put", "b", "2")
}
