package tool

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// makeBlobDB writes a database whose large values are in blob files, with
// overwritten values left as garbage in them, and returns its directory and
// the values to expect.
func makeBlobDB(t *testing.T) (string, map[string]string) {
	dir := filepath.Join(t.TempDir(), "db")
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, EnableBlobFiles: true, MinBlobSize: 100,
		BlobFileSize: 8 << 10, DisableAutoCompactions: true})
	require.NoError(t, err)
	want := make(map[string]string)
	put := func(k, v string) {
		require.NoError(t, d.Put([]byte(k), []byte(v), nil))
		want[k] = v
	}
	for i := 0; i < 40; i++ {
		put(fmt.Sprintf("key%03d", i), strings.Repeat(fmt.Sprintf("first %d;", i), 30))
	}
	put("small", "inline")
	require.NoError(t, d.Flush())
	for i := 0; i < 40; i += 4 {
		put(fmt.Sprintf("key%03d", i), strings.Repeat(fmt.Sprintf("second %d;", i), 30))
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.Close())
	return dir, want
}

func blobScanLines(want map[string]string) string {
	var b strings.Builder
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s : %s\n", k, want[k])
	}
	return b.String()
}

// TestDB_BlobFiles: scan and get resolve values in blob files (as ldb
// does), check reads every blob file whole and finds damage in a blob no
// key reads any more and a missing blob file, and a checkpoint holds the
// blob files and checks and scans the same.
func TestDB_BlobFiles(t *testing.T) {
	dir, want := makeBlobDB(t)
	blobs, err := filepath.Glob(filepath.Join(dir, "*.blob"))
	require.NoError(t, err)
	require.Greater(t, len(blobs), 1)

	scan := mustTool(t, "db", "scan", dir)
	require.Equal(t, blobScanLines(want), scan)
	require.Equal(t, runLDB(t, "--db="+copyDir(t, dir), "scan"), scan)
	require.Equal(t, want["key004"]+"\n", mustTool(t, "db", "get", dir, "key004"))
	require.Equal(t, want["key005"]+"\n", mustTool(t, "db", "get", dir, "key005"))
	require.Equal(t, fmt.Sprintf("OK: 2 tables, %d blob files, %d live keys\n", len(blobs), len(want)),
		mustTool(t, "db", "check", dir))

	cp := filepath.Join(t.TempDir(), "cp")
	require.Equal(t, "OK\n", mustTool(t, "db", "checkpoint", dir, cp))
	cpBlobs, err := filepath.Glob(filepath.Join(cp, "*.blob"))
	require.NoError(t, err)
	require.Len(t, cpBlobs, len(blobs))
	require.Equal(t, scan, mustTool(t, "db", "scan", cp))
	require.Contains(t, mustTool(t, "db", "check", cp), "OK: 2 tables")

	// Damage the old value of key004, overwritten: no read reaches it,
	// only check.
	bad := copyDir(t, dir)
	old := []byte(strings.Repeat("first 4;", 30))
	found := false
	for _, b := range blobs {
		p := filepath.Join(bad, filepath.Base(b))
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		if i := bytes.Index(data, old); i >= 0 {
			data[i+10] ^= 0x01
			require.NoError(t, os.WriteFile(p, data, 0o644))
			found = true
		}
	}
	require.True(t, found)
	require.Equal(t, scan, mustTool(t, "db", "scan", bad))
	_, errOut, rc := runTool(t, "db", "check", bad)
	require.NotEqual(t, 0, rc)
	require.Contains(t, errOut, "record checksum mismatch")
	require.Contains(t, errOut, ".blob: offset ")

	// A missing blob file.
	gone := copyDir(t, dir)
	require.NoError(t, os.Remove(filepath.Join(gone, filepath.Base(blobs[0]))))
	_, errOut, rc = runTool(t, "db", "check", gone)
	require.NotEqual(t, 0, rc)
	require.Contains(t, errOut, filepath.Base(blobs[0]))
}
