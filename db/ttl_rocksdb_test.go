package db_test

// TTL databases across engines: RocksDB's DBWithTTL (through `ldb --ttl`)
// reads what Strata wrote with Options.TTL, and Strata reads what ldb wrote
// (and the db/testdata/rocksdb-ttl fixture).

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// ldbTTLQuirk is what ldb 7.8.3 prints, exiting 1, when it closes a TTL
// database, after the command itself succeeded.
const ldbTTLQuirk = "Failed: ldb doesn't support TTL DB with multiple column families"

// runLDBTTL runs ldb with args, allowing only ldbTTLQuirk on stderr.
func runLDBTTL(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(ttlLDB(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if msg := strings.TrimSpace(stderr.String()); msg != "" || err != nil {
		require.Equal(t, ldbTTLQuirk, msg, "ldb %v: %v", args, err)
	}
	return stdout.String()
}

// ttlLDB returns the path of RocksDB's ldb, skipping the test when it is
// not installed (failing under CI, which installs rocksdb-tools), as the
// package's other RocksDB checks do.
func ttlLDB(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("ldb")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ldb not found (CI installs it with apt-get install -y rocksdb-tools): %v", err)
		}
		t.Skip("ldb (RocksDB 7.8.3 rocksdb-tools) is not installed; skipping the check against RocksDB")
	}
	return p
}

// ttlCopyDir copies the plain files of src into a new temporary directory
// (opening a database modifies it).
func ttlCopyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
	}
	return dst
}

// fixtureTime is the write time of every value of the rocksdb-ttl fixture.
const fixtureTime = 1796173988

func TestTTL_RocksDBFixture(t *testing.T) {
	dir := ttlCopyDir(t, filepath.Join("testdata", "rocksdb-ttl", "db"))
	d, err := db.Open(dir, &db.Options{TTL: time.Hour})
	require.NoError(t, err)
	defer d.Close()
	clock := newTestClock(d, fixtureTime+10)
	require.Equal(t, []string{"a=1", "b=22", "c=333"}, scan(t, d, nil))
	v, err := getString(t, d, "c", nil)
	require.NoError(t, err)
	require.Equal(t, "333", v)
	clock.set(fixtureTime + 3601)
	require.Empty(t, scan(t, d, nil))
	require.Equal(t, []string{"a=1", "b=22", "c=333"}, scan(t, d, &db.ReadOptions{IncludeExpired: true}))
}

func TestTTL_RocksDBReadsStrataAndBack(t *testing.T) {
	ttlLDB(t)
	// Strata writes with TTL; ldb --ttl sees the values without the suffix.
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, TTL: time.Hour})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("s1"), []byte("flushed"), nil))
	require.NoError(t, d.Flush())
	require.NoError(t, d.Put([]byte("s2"), []byte("in-wal"), nil))
	require.NoError(t, d.Close())
	require.Equal(t, "s1 : flushed\ns2 : in-wal\n", runLDBTTL(t, "--db="+dir, "--ttl", "scan"))
	require.Equal(t, "in-wal\n", runLDBTTL(t, "--db="+dir, "--ttl", "get", "s2"))

	// ldb --ttl writes; Strata reads it with its TTL on.
	runLDBTTL(t, "--db="+dir, "--ttl", "put", "r1", "from-rocksdb")
	d, err = db.Open(dir, &db.Options{TTL: time.Hour})
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, []string{"r1=from-rocksdb", "s1=flushed", "s2=in-wal"}, scan(t, d, nil))
}
