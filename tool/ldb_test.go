package tool

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// ldbPath returns the ldb binary, or skips the test (CI installs
// rocksdb-tools, so there it runs).
func ldbPath(t *testing.T) string {
	p, err := exec.LookPath("ldb")
	if err != nil {
		t.Skip("ldb not installed")
	}
	return p
}

func runLDB(t *testing.T, args ...string) string {
	out, err := exec.Command(ldbPath(t), args...).Output()
	require.NoError(t, err, "ldb %v", args)
	return string(out)
}

func runTool(t *testing.T, args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	rc := New().Run(args, &out, &errOut)
	return out.String(), errOut.String(), rc
}

func mustTool(t *testing.T, args ...string) string {
	out, errOut, rc := runTool(t, args...)
	require.Equal(t, 0, rc, "strata %v: %s", args, errOut)
	return out
}

// makeDB writes a database with tables, a WAL tail, deletions, binary and
// empty keys and values, and returns its directory.
func makeDB(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "db")
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("key%03d", i)), []byte(fmt.Sprintf("value %d", i)), nil))
	}
	require.NoError(t, d.Put([]byte{0x00, 0xff, 0x10}, []byte{0x01, 0x02}, nil))
	require.NoError(t, d.Put([]byte("empty"), nil, nil))
	require.NoError(t, d.Flush())
	require.NoError(t, d.Delete([]byte("key007"), nil))
	require.NoError(t, d.DeleteRange([]byte("key020"), []byte("key025"), nil))
	require.NoError(t, d.SingleDelete([]byte("key030"), nil))
	require.NoError(t, d.Flush())
	b := db.NewBatch()
	b.Put([]byte("zeta"), []byte("last"))
	b.Delete([]byte("key001"))
	b.Put([]byte("key002"), []byte("rewritten"))
	require.NoError(t, d.Write(b, nil))
	require.NoError(t, d.Close())
	return dir
}

// copyDir copies a database so that ldb, which opens it for writing, never
// changes the one strata reads.
func copyDir(t *testing.T, src string) string {
	dst := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	return dst
}

func TestLDB_ScanGetMatch(t *testing.T) {
	ldbPath(t)
	dir := makeDB(t)
	for _, flags := range [][]string{
		nil,
		{"--hex"},
		{"--from=key010", "--to=key040"},
		{"--hex", "--from=0x6B6579303130", "--to=0x6B6579303430"},
		{"--from=key045"},
		{"--to=key005"},
	} {
		want := runLDB(t, append([]string{"--db=" + copyDir(t, dir), "scan"}, flags...)...)
		got := mustTool(t, append([]string{"db", "scan", dir}, flags...)...)
		require.Equal(t, want, got, "scan %v", flags)
		require.NotEmpty(t, got)
	}
	// --limit is ldb's --max_keys.
	want := runLDB(t, "--db="+copyDir(t, dir), "scan", "--from=key010", "--max_keys=7")
	require.Equal(t, want, mustTool(t, "db", "scan", dir, "--from=key010", "--limit=7"))
	require.Equal(t, 7, strings.Count(want, "\n"))

	for _, k := range []string{"key000", "key002", "zeta", "empty", "key049"} {
		want := runLDB(t, "--db="+copyDir(t, dir), "get", k)
		require.Equal(t, want, mustTool(t, "db", "get", dir, k), "get %s", k)
	}
	want = runLDB(t, "--db="+copyDir(t, dir), "get", "--hex", "0x00FF10")
	require.Equal(t, want, mustTool(t, "db", "get", dir, "--hex", "0x00FF10"))
	require.Equal(t, "0x0102\n", want)
}

func TestDB_PrefixPutDelete(t *testing.T) {
	dir := makeDB(t)
	got := mustTool(t, "db", "scan", dir, "--prefix=key04")
	var want strings.Builder
	for i := 40; i < 50; i++ {
		fmt.Fprintf(&want, "key%03d : value %d\n", i, i)
	}
	require.Equal(t, want.String(), got)
	// A prefix of 0xff bytes has no upper bound; it still narrows.
	require.Equal(t, "", mustTool(t, "db", "scan", dir, "--hex", "--prefix=0xFFFF"))

	require.Equal(t, "OK\n", mustTool(t, "db", "put", dir, "new", "v"))
	require.Equal(t, "v\n", mustTool(t, "db", "get", dir, "new"))
	require.Equal(t, "OK\n", mustTool(t, "db", "delete", dir, "new"))
	_, errOut, rc := runTool(t, "db", "get", dir, "new")
	require.Equal(t, 1, rc)
	require.Equal(t, "Failed: Get failed: NotFound: \n", errOut)
}

func TestDB_Errors(t *testing.T) {
	empty := t.TempDir()
	_, errOut, rc := runTool(t, "db", "scan", empty)
	require.Equal(t, 1, rc)
	require.Contains(t, errOut, "is not a database (no CURRENT file)")
	_, err := os.Stat(filepath.Join(empty, "LOCK"))
	require.True(t, os.IsNotExist(err), "nothing created in a non-database")

	dir := makeDB(t)
	_, errOut, rc = runTool(t, "db", "scan", dir, "--column-family=users")
	require.Equal(t, 1, rc)
	require.Contains(t, errOut, `has no column family "users"`)
	_, errOut, rc = runTool(t, "db", "lsm", dir, "--column-family=users")
	require.Equal(t, 2, rc)
	require.Contains(t, errOut, "default column family only")
	require.Equal(t, 0, func() int { _, _, rc := runTool(t, "db", "scan", dir, "--column-family=default"); return rc }())

	_, errOut, rc = runTool(t, "db", "scan", dir, "--merge-operator=NoSuchOperator")
	require.Equal(t, 1, rc)
	require.Contains(t, errOut, "unknown merge operator")

	_, _, rc = runTool(t, "db", "frobnicate", dir)
	require.Equal(t, 2, rc)
	_, _, rc = runTool(t, "db", "get", dir)
	require.Equal(t, 2, rc)
}

func TestDB_ScanReadOnly(t *testing.T) {
	dir := makeDB(t)
	before, err := os.ReadDir(dir)
	require.NoError(t, err)
	mustTool(t, "db", "scan", dir)
	mustTool(t, "db", "get", dir, "zeta")
	after, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := func(es []os.DirEntry) (n []string) {
		for _, e := range es {
			n = append(n, e.Name())
		}
		return n
	}
	require.Equal(t, names(before), names(after))
}

func TestDB_MergeOperator(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, MergeOperator: db.NewStringAppendOperator(",")})
	require.NoError(t, err)
	require.NoError(t, d.Merge([]byte("k"), []byte("a"), nil))
	require.NoError(t, d.Merge([]byte("k"), []byte("b"), nil))
	require.NoError(t, d.Close())
	require.Equal(t, "k : a,b\n", mustTool(t, "db", "scan", dir, "--merge-operator=StringAppendOperator"))
}

// dbFiles returns the paths of dir's files with the given suffix or prefix.
func dbFiles(t *testing.T, dir, pattern string) []string {
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	require.NoError(t, err)
	require.NotEmpty(t, m, pattern)
	return m
}

func TestLDB_WALDumpMatch(t *testing.T) {
	ldbPath(t)
	dir := makeDB(t)
	// Reopen without flushing so that the WAL holds every record kind.
	d, err := db.Open(dir, &db.Options{MergeOperator: db.NewStringAppendOperator(",")})
	require.NoError(t, err)
	b := db.NewBatch()
	b.Put([]byte{}, []byte("empty key"))
	b.Delete([]byte("key010"))
	b.SingleDelete([]byte("key011"))
	b.DeleteRange([]byte("key012"), []byte("key014"))
	b.Merge([]byte("m"), []byte("x"))
	require.NoError(t, d.Write(b, nil))
	require.NoError(t, d.Put([]byte{0, 1}, bytes.Repeat([]byte("v"), 100000), nil))
	wals := dbFiles(t, dir, "*.log")
	saved := filepath.Join(t.TempDir(), filepath.Base(wals[len(wals)-1]))
	data, err := os.ReadFile(wals[len(wals)-1])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(saved, data, 0o644))
	require.NoError(t, d.Close())

	for _, flags := range [][2][]string{
		{nil, nil},
		{{"--print_value"}, {"--print-value"}},
		{{"--header"}, {"--header"}},
		{{"--header", "--print_value"}, {"--header", "--print-value"}},
	} {
		want := runLDB(t, append([]string{"dump_wal", "--walfile=" + saved}, flags[0]...)...)
		got := mustTool(t, append([]string{"wal", "dump", saved}, flags[1]...)...)
		require.Equal(t, want, got, "%v", flags)
		require.Contains(t, got, "DELETE_RANGE(0)")
	}
}

func TestLDB_ManifestDumpMatch(t *testing.T) {
	ldbPath(t)
	dir := makeDB(t)
	d, err := db.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, d.CompactRange(nil, nil))
	require.NoError(t, d.Put([]byte("after"), []byte("compaction"), nil))
	require.NoError(t, d.Flush())
	require.NoError(t, d.Close())
	m := dbFiles(t, dir, "MANIFEST-*")
	for _, flags := range [][]string{nil, {"--hex"}} {
		want := runLDB(t, append([]string{"manifest_dump", "--path=" + m[len(m)-1]}, flags...)...)
		got := mustTool(t, append([]string{"manifest", "dump", m[len(m)-1]}, flags...)...)
		require.Equal(t, want, got, "%v", flags)
		require.Contains(t, got, " seq:")
	}
}

func TestLDB_ListColumnFamiliesMatch(t *testing.T) {
	ldbPath(t)
	dir := copyDir(t, makeDB(t))
	runLDB(t, "--db="+dir, "create_column_family", "users")
	runLDB(t, "--db="+dir, "create_column_family", "zz")
	runLDB(t, "--db="+dir, "drop_column_family", "users")
	want := runLDB(t, "list_column_families", "--db="+dir)
	require.Equal(t, "Column families in "+dir+": \n{default, zz}\n", want)
	require.Equal(t, want, mustTool(t, "db", "list-column-families", dir))
}

func TestDB_PutCreateIfMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	_, errOut, rc := runTool(t, "db", "put", dir, "k", "v")
	require.Equal(t, 1, rc)
	require.Contains(t, errOut, "no CURRENT")
	require.Equal(t, "OK\n", mustTool(t, "db", "put", dir, "k", "v", "--create-if-missing"))
	require.Equal(t, "k : v\n", mustTool(t, "db", "scan", dir))
}

// runLDBAll runs ldb and returns its stdout, stderr and exit status, for the
// cases where ldb fails.
func runLDBAll(t *testing.T, args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(ldbPath(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	rc := 0
	if err != nil {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "ldb %v", args)
		rc = exit.ExitCode()
	}
	return out.String(), errOut.String(), rc
}

// strata db get and ldb get print the same stdout and stderr and exit with
// the same status, for a key present and a key missing, with and without
// --hex, in the default family and in another.
func TestLDB_GetMissingMatch(t *testing.T) {
	ldbPath(t)
	dir := cfDB(t)
	for _, tc := range []struct {
		args    []string
		present bool
	}{
		{[]string{"a"}, true},
		{[]string{"nope"}, false},
		{[]string{"--hex", "0x61"}, true},
		{[]string{"--hex", "0x6E6F7065"}, false},
		{[]string{"--column_family=users", "u2"}, true},
		{[]string{"--column_family=users", "a"}, false},
		{[]string{"--column_family=users", "--hex", "0x7533"}, true},
		{[]string{"--column_family=users", "--hex", "0x61"}, false},
	} {
		wantOut, wantErr, wantRC := runLDBAll(t, append([]string{"--db=" + copyDir(t, dir), "get"}, tc.args...)...)
		gotOut, gotErr, gotRC := runTool(t, append([]string{"db", "get", dir}, tc.args...)...)
		require.Equal(t, wantOut, gotOut, "get %v: stdout", tc.args)
		require.Equal(t, wantErr, gotErr, "get %v: stderr", tc.args)
		require.Equal(t, wantRC, gotRC, "get %v: exit status", tc.args)
		if tc.present {
			require.Equal(t, 0, gotRC, "get %v", tc.args)
			require.NotEmpty(t, gotOut, "get %v", tc.args)
		} else {
			require.Equal(t, 1, gotRC, "get %v", tc.args)
			require.Equal(t, "Failed: Get failed: NotFound: \n", gotErr, "get %v", tc.args)
		}
	}
}

// An embedding program still tells a missing key by db.ErrNotFound.
func TestDB_GetMissingIsErrNotFound(t *testing.T) {
	dir := cfDB(t)
	c := newCmdline("db get", &bytes.Buffer{})
	c.cfVerb = true
	err := dbGet(New(), c.parse([]string{dir, "nope"}))
	require.ErrorIs(t, err, db.ErrNotFound)
}
