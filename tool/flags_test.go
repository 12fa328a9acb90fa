package tool

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// Every verb takes exactly the flags its usage line shows: the listed ones
// parse, any other is a usage error (exit status 2) naming it, so that a
// flag never looks as if it had done something.
func TestFlags_VerbTakesOnlyItsOwn(t *testing.T) {
	all := []string{"hex", "from", "to", "prefix", "limit", "merge-operator", "print-value", "header", "create-if-missing"}
	values := map[string]string{"from": "--from=a", "to": "--to=b", "prefix": "--prefix=a", "limit": "--limit=1", "merge-operator": "--merge-operator=x"}
	for _, v := range verbs {
		own := usageFlags(v.usage)
		for _, f := range all {
			arg := "--" + f
			if a, ok := values[f]; ok {
				arg = a
			}
			c := newCmdline(v.group+" "+v.name, &bytes.Buffer{})
			c.parse([]string{"x", arg})
			require.NoError(t, c.err, "%s %s %s", v.group, v.name, arg)
			err := c.checkFlags(v)
			if own[f] {
				require.NoError(t, err, "%s %s %s: listed in its usage", v.group, v.name, arg)
			} else {
				require.ErrorIs(t, err, ErrUsage, "%s %s %s", v.group, v.name, arg)
				require.Contains(t, err.Error(), "does not take --"+f)
			}
		}
	}
	// Through Run: refused before anything is opened.
	dir := makeDB(t)
	for _, args := range [][]string{
		{"db", "lsm", dir, "--hex"},
		{"db", "space", dir, "--prefix=key"},
		{"db", "get", dir, "key001", "--limit=3"},
		{"sstable", "properties", dir, "--limit=3"},
		{"manifest", "check", dir, "--from=a"},
		{"wal", "dump", dir, "--hex"},
	} {
		out, errOut, rc := runTool(t, args...)
		require.Equal(t, 2, rc, "%v", args)
		require.Empty(t, out, "%v", args)
		require.Contains(t, errOut, "does not take --", "%v", args)
	}
	// The flags each verb shows do what they say somewhere in these tests;
	// here only that --merge-operator opens on every db verb that opens.
	for _, args := range [][]string{
		{"db", "lsm", dir},
		{"db", "properties", dir},
		{"db", "space", dir},
		{"db", "check", dir},
		{"db", "get", dir, "zeta"},
	} {
		mustTool(t, append(args, "--merge-operator=StringAppendOperator")...)
	}
}

// sstable scan --prefix prints the entries whose key has the prefix, in
// the table's order, with --hex, --limit and --from too.
func TestFlags_SSTableScanPrefix(t *testing.T) {
	dir := makeDB(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	out := mustTool(t, "sstable", "scan", files[0], "--prefix=key04")
	var want strings.Builder
	for i := 40; i < 50; i++ {
		fmt.Fprintf(&want, "'key%03d' seq:%d, type:1 => value %d\n", i, i+1, i)
	}
	require.Equal(t, want.String(), out)
	hexOut := mustTool(t, "sstable", "scan", files[0], "--hex", "--prefix=0x6B65793034")
	require.Equal(t, 10, strings.Count(hexOut, "\n"))
	require.True(t, strings.HasPrefix(hexOut, "'0x6B6579303430' seq:41"), hexOut)
	lines := strings.SplitAfter(out, "\n")
	require.Equal(t, strings.Join(lines[:3], ""), mustTool(t, "sstable", "scan", files[0], "--prefix=key04", "--limit=3"))
	require.Equal(t, strings.Join(lines[5:], ""), mustTool(t, "sstable", "scan", files[0], "--prefix=key04", "--from=key045"))
	require.Equal(t, "", mustTool(t, "sstable", "scan", files[0], "--prefix=nokey"))

	// In reverse order the keys with the prefix are filtered, largest first.
	rdir := t.TempDir()
	d, err := db.Open(rdir, &db.Options{CreateIfMissing: true, Comparer: db.ReverseBytewiseComparer()})
	require.NoError(t, err)
	for i := 0; i < 30; i++ {
		require.NoError(t, d.Put([]byte("k"+strconv.Itoa(i)), []byte("v"), nil))
	}
	require.NoError(t, d.Close())
	rfiles, err := filepath.Glob(filepath.Join(rdir, "*.sst"))
	require.NoError(t, err)
	require.Len(t, rfiles, 1)
	var keys []string
	for _, l := range strings.Split(strings.TrimSpace(mustTool(t, "sstable", "scan", rfiles[0], "--prefix=k2")), "\n") {
		keys = append(keys, l[1:strings.Index(l[1:], "'")+1])
	}
	require.Equal(t, []string{"k29", "k28", "k27", "k26", "k25", "k24", "k23", "k22", "k21", "k20", "k2"}, keys)
}

// treeDigest is every file under dir with a digest of its bytes and its
// mode and modification time.
func treeDigest(t *testing.T, dir string) map[string]string {
	m := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if e.IsDir() {
			m[rel] = "dir " + info.ModTime().String()
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		m[rel] = fmt.Sprintf("%x %v %s", sha256.Sum256(data), info.Mode(), info.ModTime())
		return nil
	}))
	return m
}

// Every verb that does not write leaves the database as it found it: no
// file created, removed or changed (LOG and LOCK included), even when the
// database has a WAL to replay and column families.
func TestFlags_ReadVerbsChangeNothing(t *testing.T) {
	dir := cfDB(t)
	// A WAL tail the read-only opens must replay, not flush.
	d, err := db.Open(dir, &db.Options{})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("wal-only"), []byte("1"), nil))
	// Leave it as a crash would: copy the directory while it is open.
	crashed := copyDir(t, dir)
	require.NoError(t, d.Close())
	require.NotEmpty(t, dbFiles(t, crashed, "*.log"))
	manifests := dbFiles(t, crashed, "MANIFEST-*")

	before := treeDigest(t, crashed)
	require.Equal(t, "1\n", mustTool(t, "db", "get", crashed, "wal-only"), "the WAL tail is read")
	for _, args := range [][]string{
		{"db", "scan", crashed},
		{"db", "scan", crashed, "--column-family=users"},
		{"db", "get", crashed, "a"},
		{"db", "lsm", crashed},
		{"db", "properties", crashed},
		{"db", "space", crashed},
		{"db", "check", crashed},
		{"db", "checkpoint", crashed, filepath.Join(t.TempDir(), "cp")},
		{"db", "list-column-families", crashed},
		{"manifest", "dump", manifests[len(manifests)-1]},
		{"manifest", "check", crashed},
		{"wal", "dump", dbFiles(t, crashed, "*.log")[0]},
		{"sstable", "scan", crashed},
		{"sstable", "properties", crashed},
		{"sstable", "layout", crashed},
		{"sstable", "check", crashed},
	} {
		mustTool(t, args...)
		require.Equal(t, before, treeDigest(t, crashed), "%v changed the database", args)
	}
	// The writing verbs do write (so the digest can see a change).
	mustTool(t, "db", "put", crashed, "k", "v")
	require.NotEqual(t, before, treeDigest(t, crashed))
}

// concatOp is a user merge operator, unknown to db.MergeOperatorByName.
type concatOp struct{}

func (concatOp) Name() string { return "strata.test.Concat" }
func (concatOp) FullMerge(key, existing []byte, operands [][]byte) ([]byte, error) {
	out := append([]byte{}, existing...)
	for _, o := range operands {
		out = append(append(out, '+'), o...)
	}
	return out, nil
}
func (concatOp) PartialMerge(key []byte, operands [][]byte) ([]byte, bool) { return nil, false }

// A program embedding the tool passes its own merge operator with
// WithMergeOperator; --merge-operator then names it. Without it the name is
// refused.
func TestFlags_EmbeddedMergeOperator(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, MergeOperator: concatOp{}})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("k"), []byte("base"), nil))
	require.NoError(t, d.Flush())
	require.NoError(t, d.Merge([]byte("k"), []byte("a"), nil))
	require.NoError(t, d.Merge([]byte("k"), []byte("b"), nil))
	require.NoError(t, d.Close())

	tl := New(WithMergeOperator(concatOp{}))
	for _, args := range [][]string{
		{"db", "scan", dir, "--merge-operator=strata.test.Concat"},
		{"db", "get", dir, "k", "--merge-operator=strata.test.Concat"},
	} {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, tl.Run(args, &out, &errOut), "%v: %s", args, errOut.String())
		require.Contains(t, out.String(), "base+a+b\n", "%v", args)
	}
	_, errOut, rc := runTool(t, "db", "scan", dir, "--merge-operator=strata.test.Concat")
	require.Equal(t, 1, rc)
	require.Contains(t, errOut, `unknown merge operator "strata.test.Concat"`)
}
