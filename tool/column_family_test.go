package tool

import (
	"path/filepath"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// cfDB writes a database with a family "users" holding other keys than the
// default family, and returns its directory.
func cfDB(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "db")
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("a"), []byte("in default"), nil))
	cf, err := d.CreateColumnFamily("users", nil)
	require.NoError(t, err)
	require.NoError(t, cf.Put([]byte("u1"), []byte("alice"), nil))
	require.NoError(t, cf.Put([]byte("u2"), []byte("bob"), nil))
	require.NoError(t, cf.Flush())
	require.NoError(t, cf.Put([]byte("u3"), []byte("carol"), nil))
	require.NoError(t, d.Close())
	return dir
}

func TestDB_ColumnFamilyVerbs(t *testing.T) {
	dir := cfDB(t)
	require.Equal(t, "a : in default\n", mustTool(t, "db", "scan", dir))
	for _, flag := range []string{"--column-family=users", "--column_family=users"} {
		require.Equal(t, "u1 : alice\nu2 : bob\nu3 : carol\n", mustTool(t, "db", "scan", dir, flag))
	}
	require.Equal(t, "bob\n", mustTool(t, "db", "get", dir, "u2", "--column_family=users"))
	_, errOut, rc := runTool(t, "db", "get", dir, "a", "--column-family=users")
	require.Equal(t, 1, rc)
	require.Equal(t, "Failed: Get failed: NotFound: \n", errOut)

	require.Equal(t, "OK\n", mustTool(t, "db", "put", dir, "u4", "dave", "--column-family=users"))
	require.Equal(t, "OK\n", mustTool(t, "db", "delete", dir, "u1", "--column-family=users"))
	require.Equal(t, "OK\n", mustTool(t, "db", "compact", dir, "--column-family=users"))
	require.Equal(t, "u2 : bob\nu3 : carol\nu4 : dave\n", mustTool(t, "db", "scan", dir, "--column-family=users"))
	require.Equal(t, "a : in default\n", mustTool(t, "db", "scan", dir))

	_, errOut, rc = runTool(t, "db", "put", dir, "k", "v", "--column-family=nope")
	require.Equal(t, 1, rc)
	require.Contains(t, errOut, `has no column family "nope"`)
	require.Equal(t, "Column families in "+dir+": \n{default, users}\n", mustTool(t, "db", "list-column-families", dir))
}

// ldb and strata agree on every family's contents, each reading what the
// other wrote, and list the families alike.
func TestLDB_ColumnFamilyMatch(t *testing.T) {
	ldbPath(t)
	dir := copyDir(t, cfDB(t))
	runLDB(t, "--db="+dir, "create_column_family", "made_by_ldb")
	runLDB(t, "--db="+dir, "--column_family=made_by_ldb", "put", "x", "from ldb")
	runLDB(t, "--db="+dir, "--column_family=users", "put", "u9", "zed")
	mustTool(t, "db", "put", dir, "y", "from strata", "--column_family=made_by_ldb")
	for _, fam := range []string{"default", "users", "made_by_ldb"} {
		want := runLDB(t, "--db="+dir, "--column_family="+fam, "scan")
		require.Equal(t, want, mustTool(t, "db", "scan", dir, "--column_family="+fam), fam)
		for _, hex := range [][]string{nil, {"--hex"}} {
			want := runLDB(t, append([]string{"--db=" + dir, "--column_family=" + fam, "scan"}, hex...)...)
			require.Equal(t, want, mustTool(t, append([]string{"db", "scan", dir, "--column_family=" + fam}, hex...)...), fam)
		}
	}
	require.Equal(t, "u1 : alice\nu2 : bob\nu3 : carol\nu9 : zed\n", mustTool(t, "db", "scan", dir, "--column-family=users"))
	require.Equal(t, runLDB(t, "--db="+dir, "--column_family=made_by_ldb", "get", "y"),
		mustTool(t, "db", "get", dir, "y", "--column_family=made_by_ldb"))
	want := runLDB(t, "list_column_families", "--db="+dir)
	require.Equal(t, "Column families in "+dir+": \n{default, users, made_by_ldb}\n", want)
	require.Equal(t, want, mustTool(t, "db", "list-column-families", dir))
	names, err := db.ListColumnFamilies(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"default", "users", "made_by_ldb"}, names)
}
