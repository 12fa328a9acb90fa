package db_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

// writeExternal writes an external file of keys (in the order given) with
// cmp, and a range deletion [delStart, delEnd) when delStart is set.
func writeExternalWith(t *testing.T, cmp db.Comparer, path string, keys []string, delStart, delEnd string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	w := table.NewExternalWriter(f, table.ExternalWriterOptions{Comparer: cmp, BlockSize: 256})
	for _, k := range keys {
		require.NoError(t, w.Put([]byte(k), []byte("x-"+k)))
	}
	if delStart != "" {
		require.NoError(t, w.DeleteRange([]byte(delStart), []byte(delEnd)))
	}
	_, err = w.Finish()
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// TestComparerIngestExternalWriter: files the external writer builds with
// the reverse comparer are ingested into reverse families (the default one
// and a named one) and read in that order, range deletion included; RocksDB's
// sst_dump reads such a file in the same order; a bytewise family refuses
// it, and a reverse family refuses a bytewise one.
func TestComparerIngestExternalWriter(t *testing.T) {
	dir := t.TempDir()
	rev := db.ReverseBytewiseComparer()
	d, err := db.Open(filepath.Join(dir, "db"), &db.Options{CreateIfMissing: true, CreateMissingColumnFamilies: true,
		Comparer:       rev,
		ColumnFamilies: map[string]*db.ColumnFamilyOptions{"rev": {Comparer: rev}, "fwd": {}}})
	require.NoError(t, err)
	defer d.Close()
	var keys []string
	for i := 99; i >= 0; i-- {
		keys = append(keys, fmt.Sprintf("k%03d", i))
	}
	for _, name := range []string{"default", "rev"} {
		cf := d.ColumnFamily(name)
		for _, k := range []string{"k050x", "k070x", "k200", "k030"} {
			require.NoError(t, cf.Put([]byte(k), []byte("old"), nil))
		}
		require.NoError(t, cf.Flush())
		p := filepath.Join(dir, name+".sst")
		// In reverse order [k060, k040) holds k060 down to above k040:
		// it deletes the older k050x (not the file's own keys), not k070x.
		writeExternalWith(t, rev, p, keys, "k060", "k040")
		require.NoError(t, cf.Ingest([]string{p}, nil))
		want := []string{"k200"}
		for _, k := range keys {
			if k == "k070" {
				want = append(want, "k070x") // reverse: k070x sorts before k070
			}
			want = append(want, k)
		}
		require.Equal(t, want, cfKeys(t, cf.NewIterator(nil)), name)
		v, err := cf.Get([]byte("k030"), nil)
		require.NoError(t, err)
		require.Equal(t, "x-k030", string(v), "the file's k030 is newer")
		_, err = cf.Get([]byte("k050x"), nil)
		require.ErrorIs(t, err, db.ErrNotFound, "the file's range deletion covers the older k050x")
	}

	// A reverse file into the bytewise family, and a bytewise file into a
	// reverse one, are refused naming both comparators.
	p := filepath.Join(dir, "mismatch.sst")
	writeExternalWith(t, rev, p, []string{"b", "a"}, "", "")
	err = d.ColumnFamily("fwd").Ingest([]string{p}, nil)
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.ErrorContains(t, err, "rocksdb.ReverseBytewiseComparator")
	p = filepath.Join(dir, "bytewise.sst")
	writeExternalWith(t, nil, p, []string{"a", "b"}, "", "")
	err = d.ColumnFamily("rev").Ingest([]string{p}, nil)
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.ErrorContains(t, err, "leveldb.BytewiseComparator")

	// sst_dump reads a reverse external file in its order.
	p = filepath.Join(dir, "dump.sst")
	writeExternalWith(t, rev, p, keys, "", "")
	out := rocksdbTool(t, "sst_dump", "--file="+p, "--command=scan")
	var got []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "'") {
			got = append(got, line[1:strings.Index(line[1:], "'")+1])
		}
	}
	require.Equal(t, keys, got)
	require.Contains(t, rocksdbTool(t, "sst_dump", "--file="+p, "--show_properties"),
		"comparator name: rocksdb.ReverseBytewiseComparator")
}

// TestComparerIngestUserComparer: a file built with a user comparer is
// ingested into the family ordered by it.
func TestComparerIngestUserComparer(t *testing.T) {
	cmp := lengthFirstComparer{}
	d, _ := openTest(t, &db.Options{Comparer: cmp})
	defer d.Close()
	p := filepath.Join(t.TempDir(), "u.sst")
	writeExternalWith(t, cmp, p, []string{"z", "aa", "bb", "aaa"}, "", "")
	require.NoError(t, d.Put([]byte("c"), []byte("c"), nil))
	require.NoError(t, d.Ingest([]string{p}, nil))
	require.Equal(t, []string{"c", "z", "aa", "bb", "aaa"}, scanKeys(t, d, nil))
}
