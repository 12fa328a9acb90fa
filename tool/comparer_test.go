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

// The db verbs open RocksDB's reverse-comparator fixture in its own order:
// scan prints what `ldb scan` printed when the fixture was made (and, with
// ldb installed, what ldb prints now), and the other verbs read and write
// it, after which ldb reads it as strata does.
func TestDB_ReverseFixture(t *testing.T) {
	fixture := filepath.Join("..", "db", "testdata", "rocksdb-reverse")
	want, err := os.ReadFile(filepath.Join(fixture, "ldb-scan-hex.expected"))
	require.NoError(t, err)
	dir := copyDir(t, filepath.Join(fixture, "db"))
	require.Equal(t, string(want), mustTool(t, "db", "scan", dir, "--hex"))
	require.Equal(t, "wal-value\n", mustTool(t, "db", "get", dir, "zz-last-in-wal"))
	require.Equal(t, "OK: 7 tables, 290 live keys\n", mustTool(t, "db", "check", dir))
	for _, v := range []string{"lsm", "properties", "space"} {
		mustTool(t, "db", v, dir)
	}
	cp := filepath.Join(t.TempDir(), "cp")
	mustTool(t, "db", "checkpoint", dir, cp)
	require.Equal(t, string(want), mustTool(t, "db", "scan", cp, "--hex"))

	require.Equal(t, "OK\n", mustTool(t, "db", "put", dir, "zzzz", "new"))
	require.Equal(t, "OK\n", mustTool(t, "db", "delete", dir, "key0298"))
	require.Equal(t, "OK\n", mustTool(t, "db", "compact", dir))
	got := mustTool(t, "db", "scan", dir, "--limit=3")
	require.Equal(t, "zzzz : new\nzz-last-in-wal : wal-value\nkey0500 : five-hundred\n", got)
	require.NotContains(t, mustTool(t, "db", "scan", dir), "key0298 :")
	if ldbAvailable() {
		require.Equal(t, mustTool(t, "db", "scan", dir), runLDB(t, "--db="+copyDir(t, dir), "--try_load_options", "scan"))
	}
}

func ldbAvailable() bool {
	_, err := exec.LookPath("ldb")
	return err == nil
}

// reverseDB writes a database whose default family and family "rev" are
// reverse bytewise and family "fwd" bytewise, with keys in tables and in the
// WAL.
func reverseDB(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "db")
	rev := &db.ColumnFamilyOptions{Comparer: db.ReverseBytewiseComparer()}
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, CreateMissingColumnFamilies: true,
		Comparer:       db.ReverseBytewiseComparer(),
		ColumnFamilies: map[string]*db.ColumnFamilyOptions{"rev": rev, "fwd": {}}})
	require.NoError(t, err)
	for _, name := range []string{"default", "rev", "fwd"} {
		cf := d.ColumnFamily(name)
		for i := 0; i < 60; i++ {
			require.NoError(t, cf.Put([]byte(fmt.Sprintf("%s-a%02d", name, i)), []byte(fmt.Sprint(i)), nil))
			require.NoError(t, cf.Put([]byte(fmt.Sprintf("%s-b%02d", name, i)), []byte(fmt.Sprint(-i)), nil))
			if i == 30 {
				require.NoError(t, cf.Flush())
			}
		}
		require.NoError(t, cf.Delete([]byte(name+"-a07"), nil))
	}
	require.NoError(t, d.Close())
	return dir
}

// A database Strata wrote with reverse families scans in each family's
// order, as `ldb --try_load_options scan` does, and --from, --to and
// --prefix select in that order.
func TestDB_ReverseStrataDB(t *testing.T) {
	dir := reverseDB(t)
	for _, name := range []string{"default", "rev", "fwd"} {
		out := mustTool(t, "db", "scan", dir, "--column-family="+name)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		require.Len(t, lines, 119, name)
		first, last := name+"-b59 : -59", name+"-a00 : 0"
		if name == "fwd" {
			first, last = last, first
		}
		require.Equal(t, first, lines[0], name)
		require.Equal(t, last, lines[len(lines)-1], name)
		if ldbAvailable() {
			require.Equal(t, out, runLDB(t, "--db="+copyDir(t, dir), "--try_load_options", "scan", "--column_family="+name), name)
		}
	}
	// Bounds in the family's order: from b05 down to (not including) a55.
	out := mustTool(t, "db", "scan", dir, "--column-family=rev", "--from=rev-b05", "--to=rev-a55")
	require.Equal(t, "rev-b05 : -5\nrev-b04 : -4\nrev-b03 : -3\nrev-b02 : -2\nrev-b01 : -1\nrev-b00 : 0\n"+
		"rev-a59 : 59\nrev-a58 : 58\nrev-a57 : 57\nrev-a56 : 56\n", out)
	require.Empty(t, mustTool(t, "db", "scan", dir, "--column-family=rev", "--from=rev-a55", "--to=rev-b05"))
	// --prefix keeps exactly the keys with it, in the family's order.
	out = mustTool(t, "db", "scan", dir, "--prefix=default-a0", "--limit=4")
	require.Equal(t, "default-a09 : 9\ndefault-a08 : 8\ndefault-a06 : 6\ndefault-a05 : 5\n", out)
	out = mustTool(t, "db", "scan", dir, "--prefix=default-a0")
	require.Equal(t, 9, strings.Count(out, "\n"), out)
	require.Equal(t, "OK: 2 tables, 119 live keys\n", mustTool(t, "db", "check", dir))
}

// lengthFirst orders keys by length, then bytewise: an order the tool
// cannot know by name.
type lengthFirst struct{}

func (lengthFirst) Name() string { return "strata.test.LengthFirst" }
func (lengthFirst) Compare(a, b []byte) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return bytes.Compare(a, b)
}

// A family ordered by a user comparator is refused with an error naming
// the comparator, unless the program embedding the tool passes it with
// WithComparer; then the verbs read and write the family in its order.
func TestDB_UserComparer(t *testing.T) {
	for _, family := range []string{"default", "users"} {
		t.Run(family, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			opts := &db.Options{CreateIfMissing: true, CreateMissingColumnFamilies: true}
			if family == "default" {
				opts.Comparer = lengthFirst{}
			} else {
				opts.ColumnFamilies = map[string]*db.ColumnFamilyOptions{family: {Comparer: lengthFirst{}}}
			}
			d, err := db.Open(dir, opts)
			require.NoError(t, err)
			cf := d.ColumnFamily(family)
			for _, k := range []string{"ccc", "a", "bb", "aaaa", "b"} {
				require.NoError(t, cf.Put([]byte(k), []byte("v"+k), nil))
			}
			require.NoError(t, cf.Flush())
			require.NoError(t, d.Close())

			for _, args := range [][]string{
				{"db", "scan", dir, "--column-family=" + family},
				{"db", "get", dir, "a", "--column-family=" + family},
				{"db", "check", dir},
				{"db", "lsm", dir},
			} {
				_, errOut, rc := runTool(t, args...)
				require.Equal(t, 1, rc, "%v", args)
				require.Contains(t, errOut, `orders its keys with comparator "strata.test.LengthFirst", which the tool does not know`, "%v", args)
				require.Contains(t, errOut, "tool.WithComparer")
			}

			tl := New(WithComparer(lengthFirst{}))
			run := func(args ...string) string {
				var out, errOut bytes.Buffer
				require.Equal(t, 0, tl.Run(args, &out, &errOut), "%v: %s", args, errOut.String())
				return out.String()
			}
			cfFlag := "--column-family=" + family
			require.Equal(t, "a : va\nb : vb\nbb : vbb\nccc : vccc\naaaa : vaaaa\n", run("db", "scan", dir, cfFlag))
			require.Equal(t, "b : vb\nbb : vbb\n", run("db", "scan", dir, cfFlag, "--from=b", "--to=ccc"))
			require.Equal(t, "b : vb\nbb : vbb\n", run("db", "scan", dir, cfFlag, "--prefix=b"))
			require.Equal(t, "OK\n", run("db", "put", dir, "zz", "vzz", cfFlag))
			require.Equal(t, "OK\n", run("db", "compact", dir, cfFlag))
			require.Equal(t, "a : va\nb : vb\nbb : vbb\nzz : vzz\nccc : vccc\naaaa : vaaaa\n", run("db", "scan", dir, cfFlag))
			require.Equal(t, "vzz\n", run("db", "get", dir, "zz", cfFlag))
			require.Contains(t, run("db", "check", dir), "OK: ")
			_, errOut, rc := runTool(t, "sstable", "scan", dir)
			require.Equal(t, 1, rc)
			require.Contains(t, errOut, `comparator "strata.test.LengthFirst" is not known`)
			require.Regexp(t, `(?s)'a' .*'b' .*'bb' .*'zz' .*'ccc' .*'aaaa' `, run("sstable", "scan", dir))
			require.Contains(t, run("sstable", "check", dir), ": OK, ")
		})
	}
}
