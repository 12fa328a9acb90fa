package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// cfLines are the two property lines naming a table's column family.
var cfLines = regexp.MustCompile(`(?m)^  column family (ID|name): .*$`)

// A table a flush of a named family writes records the family's id and
// name (rocksdb.column.family.id/.name), and the properties command
// prints them with sst_dump's wording, and sst_dump's values when it is
// installed.
func TestColumnFamilyProperties(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	_, err = d.CreateColumnFamily("skip", nil)
	require.NoError(t, err)
	cf, err := d.CreateColumnFamily("users", nil)
	require.NoError(t, err)
	require.NoError(t, cf.Put([]byte("k"), []byte("v"), nil))
	require.NoError(t, cf.Flush())
	require.NoError(t, d.Close())
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.Len(t, ssts, 1)

	code, ours, errOut := sstdump("-file="+ssts[0], "-command=properties")
	require.Equal(t, 0, code, errOut)
	got := cfLines.FindAllString(ours, -1)
	require.Equal(t, []string{"  column family ID: 2", "  column family name: users"}, got, ours)

	bin, err := exec.LookPath("sst_dump")
	if err != nil {
		return // the values above are RocksDB's by the format
	}
	out, err := exec.Command(bin, "--file="+ssts[0], "--show_properties").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, got, cfLines.FindAllString(string(out), -1), "%s", out)
}
