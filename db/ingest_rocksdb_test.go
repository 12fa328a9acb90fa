package db

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

type rocksExtOp struct{ key, value, end string }

// rocksWriteExt writes an external file with table.ExternalWriter.
func rocksWriteExt(t *testing.T, path string, ops []rocksExtOp) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	w := table.NewExternalWriter(f, table.ExternalWriterOptions{})
	for _, op := range ops {
		if op.end != "" {
			require.NoError(t, w.DeleteRange([]byte(op.key), []byte(op.end)))
		} else {
			require.NoError(t, w.Put([]byte(op.key), []byte(op.value)))
		}
	}
	_, err = w.Finish()
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// ldbCmd runs ldb with stdin, failing the test on an error or a "Failed"
// message; it returns stdout and stderr together (ldb reports success of
// ingest_extern_sst and write_extern_sst on stderr).
func ldbCmd(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(compatLDB(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.NoError(t, err, "ldb %v: %s", args, out.String())
	require.NotContains(t, out.String(), "Failed", "ldb %v", args)
	return out.String()
}

// RocksDB writes an external file (ldb write_extern_sst, i.e.
// SstFileWriter), Strata ingests it over data of its own and reads it.
func TestIngestRocksDBWrittenFile(t *testing.T) {
	compatLDB(t)
	dir := t.TempDir()
	rocks := filepath.Join(dir, "rocks")
	ldbCmd(t, "", "--db="+rocks, "--create_if_missing", "put", "unused", "x")
	ext := filepath.Join(dir, "from-rocks.sst")
	ldbCmd(t, "k1 ==> rocks-1\nk3 ==> rocks-3\nk5 ==> rocks-5\n", "--db="+rocks, "write_extern_sst", ext)

	d, err := Open(filepath.Join(dir, "strata"), &Options{CreateIfMissing: true})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("k1"), []byte("old"), nil))
	require.NoError(t, d.Put([]byte("k2"), []byte("strata-2"), nil))
	snap := d.NewSnapshot()
	require.NoError(t, d.Ingest([]string{ext}, nil))
	want := "0x6B31 : 0x726F636B732D31\n0x6B32 : 0x7374726174612D32\n0x6B33 : 0x726F636B732D33\n0x6B35 : 0x726F636B732D35\n"
	got, err := compatScan(t, d)
	require.NoError(t, err)
	require.Equal(t, want, got)
	v, err := d.Get([]byte("k1"), &ReadOptions{Snapshot: snap})
	require.NoError(t, err)
	require.Equal(t, "old", string(v))
	snap.Release()
	require.NoError(t, d.Close())
	d, err = Open(filepath.Join(dir, "strata"), nil)
	require.NoError(t, err)
	got, err = compatScan(t, d)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NoError(t, d.Close())
}

// Strata ingests its own external file; RocksDB then opens the Strata
// directory and reads the file at the global sequence number recorded in
// the MANIFEST (not in the file), seeing it over older data.
func TestIngestRocksDBReadsStrataDirectory(t *testing.T) {
	compatLDB(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "strata")
	d, err := Open(path, &Options{CreateIfMissing: true})
	require.NoError(t, err)
	for i := 0; i < 20; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("k%02d", i)), []byte("old"), nil))
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.Put([]byte("k05"), []byte("mem"), nil))
	ext := filepath.Join(dir, "ext.sst")
	rocksWriteExt(t, ext, []rocksExtOp{{key: "k00", end: "k03"}, {key: "k01", value: "ext"}, {key: "k05", value: "ext"}, {key: "k99", value: "ext"}})
	require.NoError(t, d.Ingest([]string{ext}, nil))
	require.NoError(t, d.Put([]byte("k99"), []byte("after"), nil))
	want, err := compatScan(t, d)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	require.Contains(t, want, "0x6B3035 : 0x657874\n") // k05 : ext
	require.NotContains(t, want, "0x6B3030 ")          // k00 deleted by the file's range deletion

	got := ldbCmd(t, "", "--db="+path, "scan", "--hex")
	require.Equal(t, want, got)
	ldbCmd(t, "", "--db="+path, "checkconsistency")
}

// RocksDB ingests a file into its own database (ldb ingest_extern_sst):
// Strata opens that directory and reads the file at the global sequence
// number RocksDB recorded in its MANIFEST.
func TestIngestStrataReadsRocksDBIngestion(t *testing.T) {
	compatLDB(t)
	dir := t.TempDir()
	rocks := filepath.Join(dir, "rocks")
	ldbCmd(t, "", "--db="+rocks, "--create_if_missing", "put", "a", "old")
	ldbCmd(t, "", "--db="+rocks, "put", "c", "old")
	ext := filepath.Join(dir, "ext.sst")
	rocksWriteExt(t, ext, []rocksExtOp{{key: "a", value: "ext"}, {key: "b", value: "ext"}})
	ldbCmd(t, "", "--db="+rocks, "ingest_extern_sst", ext)
	want := strings.TrimSpace(ldbCmd(t, "", "--db="+rocks, "scan", "--hex")) + "\n"
	require.Contains(t, want, "0x61 : 0x657874") // a : ext
	d, err := Open(compatCopyDir(t, rocks), nil)
	require.NoError(t, err)
	got, err := compatScan(t, d)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NoError(t, d.Close())
	_ = os.Remove(ext)
}
