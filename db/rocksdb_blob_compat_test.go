package db

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// blobCompatShapes are the shapes of testdata/rocksdb-blob.
var blobCompatShapes = []string{"fill", "mixed"}

// blobDigest is how testdata/rocksdb-blob keeps a value: its length and
// SHA-256.
func blobDigest(v []byte) string {
	h := sha256.Sum256(v)
	return strconv.Itoa(len(v)) + " " + hex.EncodeToString(h[:])
}

// blobCompatExpected reads a shape's expected/scan.txt: the keys in order
// and each key's value digest.
func blobCompatExpected(t *testing.T, shape string) ([]string, map[string]string) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "rocksdb-blob", shape, "expected", "scan.txt"))
	require.NoError(t, err)
	defer f.Close()
	var keys []string
	want := make(map[string]string)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), " ", 2)
		require.Len(t, parts, 2)
		k, err := hex.DecodeString(strings.TrimPrefix(parts[0], "0x"))
		require.NoError(t, err)
		keys = append(keys, string(k))
		want[string(k)] = parts[1]
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, keys)
	return keys, want
}

// blobCompatCheck reads every key with Get and the whole DB forward and
// backward, each value against its digest.
func blobCompatCheck(t *testing.T, d *DB, keys []string, want map[string]string) {
	t.Helper()
	for _, k := range keys {
		v, err := d.Get([]byte(k), nil)
		require.NoError(t, err, "key %x", k)
		require.Equal(t, want[k], blobDigest(v), "Get %x", k)
	}
	it := d.NewIterator(nil)
	var got []string
	for it.SeekToFirst(); it.Valid(); it.Next() {
		got = append(got, string(it.Key()))
		require.Equal(t, want[string(it.Key())], blobDigest(it.Value()), "iterator at %x", it.Key())
	}
	require.NoError(t, it.Err())
	require.Equal(t, keys, got)
	n := len(keys)
	for it.SeekToLast(); it.Valid(); it.Prev() {
		n--
		require.Equal(t, keys[n], string(it.Key()))
		require.Equal(t, want[keys[n]], blobDigest(it.Value()), "reverse at %x", it.Key())
	}
	require.NoError(t, it.Err())
	require.Equal(t, 0, n)
	require.NoError(t, it.Close())
}

// TestCompatBlobOpenRocksDBFixtures opens the directories RocksDB 7.8.3's
// db_bench wrote with -enable_blob_files=1 -min_blob_size=1024, read-only
// and then writable (which replays the WAL and compacts), and reads every
// key as ldb scan does.
func TestCompatBlobOpenRocksDBFixtures(t *testing.T) {
	for _, shape := range blobCompatShapes {
		t.Run(shape, func(t *testing.T) {
			keys, want := blobCompatExpected(t, shape)
			src := filepath.Join("testdata", "rocksdb-blob", shape, "db")
			dir := compatCopyDir(t, src)

			d, err := Open(dir, &Options{ReadOnly: true})
			require.NoError(t, err)
			blobCompatCheck(t, d, keys, want)
			require.NoError(t, d.Close())

			d, err = Open(dir, nil)
			require.NoError(t, err)
			blobCompatCheck(t, d, keys, want)
			require.NoError(t, d.CompactRange(nil, nil))
			blobCompatCheck(t, d, keys, want)
			require.NoError(t, d.Close())

			d, err = Open(dir, nil)
			require.NoError(t, err)
			blobCompatCheck(t, d, keys, want)
			require.NoError(t, d.Close())
			blobCompatCheckLDB(t, dir, keys, want)
		})
	}
}

// blobCompatCheckLDB runs ldb checkconsistency and scan on a copy of dir
// (skipped without rocksdb-tools, required under CI): RocksDB must read
// every value as wanted.
func blobCompatCheckLDB(t *testing.T, dir string, keys []string, want map[string]string) {
	t.Helper()
	cp := compatCopyDir(t, dir)
	require.Contains(t, runLDB(t, "--db="+cp, "checkconsistency"), "OK")
	out := runLDB(t, "--db="+cp, "scan", "--hex")
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, ok := strings.Cut(line, " : ")
		require.True(t, ok, "ldb scan line %q", line)
		kb, err := hex.DecodeString(strings.TrimPrefix(k, "0x"))
		require.NoError(t, err)
		vb, err := hex.DecodeString(strings.TrimPrefix(v, "0x"))
		require.NoError(t, err)
		got = append(got, string(kb))
		require.Equal(t, want[string(kb)], blobDigest(vb), "ldb scan %x", kb)
	}
	require.Equal(t, keys, got)
}
