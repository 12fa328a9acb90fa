package db

// RocksDB 7.8.3 column-family compatibility: Strata opens the multi-family
// directories RocksDB wrote (testdata/rocksdb-cf, see its README.md) and
// reads exactly what ldb reads; RocksDB's ldb and sst_dump read and write the
// families of directories Strata wrote. Tests that run a RocksDB tool skip
// when it is missing, except under CI=true (.ci/run installs rocksdb-tools).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stratadb/strata/internal/checksum"
	"github.com/stratadb/strata/prefix"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

const compatCFFixtures = "testdata/rocksdb-cf"

// compatCFShapes lists the fixture shapes of testdata/rocksdb-cf.
func compatCFShapes(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(compatCFFixtures, "*", "db"))
	require.NoError(t, err)
	var out []string
	for _, d := range dirs {
		out = append(out, filepath.Base(filepath.Dir(d)))
	}
	require.ElementsMatch(t, []string{"atomic_flush", "dbbench4", "ldb_created", "ldb_noflush", "wal_only"}, out)
	return out
}

// compatParseFamilies parses `ldb list_column_families` output:
// "Column families in DIR: \n{a, b, c}\n".
func compatParseFamilies(t *testing.T, out string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, "list_column_families output %q", out)
	require.True(t, strings.HasPrefix(lines[0], "Column families in "), out)
	inner, ok := strings.CutPrefix(lines[1], "{")
	require.True(t, ok, out)
	inner, ok = strings.CutSuffix(inner, "}")
	require.True(t, ok, out)
	return strings.Split(inner, ", ")
}

// compatCFExpected returns a shape's recorded families and, per family,
// its `ldb scan --hex` output.
func compatCFExpected(t *testing.T, shape string) ([]string, map[string]string) {
	t.Helper()
	exp := filepath.Join(compatCFFixtures, shape, "expected")
	b, err := os.ReadFile(filepath.Join(exp, "families.txt"))
	require.NoError(t, err)
	fams := compatParseFamilies(t, string(b))
	scans := map[string]string{}
	for _, f := range fams {
		s, err := os.ReadFile(filepath.Join(exp, f+".scan"))
		require.NoError(t, err)
		scans[f] = string(s)
	}
	return fams, scans
}

// compatCFScan renders every live key and value of cf as `ldb scan --hex`.
func compatCFScan(t *testing.T, cf *ColumnFamily) string {
	t.Helper()
	var b strings.Builder
	it := cf.NewIterator(nil)
	for it.SeekToFirst(); it.Valid(); it.Next() {
		fmt.Fprintf(&b, "0x%X : 0x%X\n", it.Key(), it.Value())
	}
	require.NoError(t, it.Err(), cf.Name())
	require.NoError(t, it.Close())
	return b.String()
}

func compatCFNames(d *DB) []string {
	var names []string
	for _, cf := range d.ColumnFamilies() {
		names = append(names, cf.Name())
	}
	return names
}

// compatCFCheck requires d to have exactly the families fams, each reading
// as scans records.
func compatCFCheck(t *testing.T, d *DB, fams []string, scans map[string]string) {
	t.Helper()
	require.Equal(t, fams, compatCFNames(d))
	for _, f := range fams {
		cf := d.ColumnFamily(f)
		require.NotNil(t, cf, f)
		require.Equal(t, scans[f], compatCFScan(t, cf), "family %s", f)
	}
}

// compatCFCheckLDB runs ldb checkconsistency, list_column_families and a
// per-family scan on a copy of dir; each scan must equal scans.
func compatCFCheckLDB(t *testing.T, dir string, fams []string, scans map[string]string) {
	t.Helper()
	require.Equal(t, fams, compatParseFamilies(t, runLDB(t, "--db="+dir, "list_column_families")))
	cp := compatCopyDir(t, dir)
	require.Contains(t, runLDB(t, "--db="+cp, "checkconsistency"), "OK")
	for _, f := range fams {
		require.Equal(t, scans[f], runLDB(t, "--db="+cp, "--column_family="+f, "scan", "--hex"), "family %s", f)
	}
}

// TestCompatCFOpenRocksDBFixtures opens every multi-family directory
// RocksDB wrote, read-only and writable, and reads each family exactly as
// ldb does; the writable open replays the WAL into the families' memtables
// and rewrites MANIFEST and OPTIONS, so the reopened directory must read
// the same, to Strata and to ldb.
func TestCompatCFOpenRocksDBFixtures(t *testing.T) {
	_, ldbErr := exec.LookPath("ldb")
	for _, shape := range compatCFShapes(t) {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			fams, scans := compatCFExpected(t, shape)
			src := filepath.Join(compatCFFixtures, shape, "db")
			got, err := ListColumnFamilies(src)
			require.NoError(t, err)
			require.Equal(t, fams, got)

			dir := compatCopyDir(t, src)
			pristine := compatDirContents(t, dir)
			d, err := Open(dir, &Options{ReadOnly: true})
			require.NoError(t, err)
			compatCFCheck(t, d, fams, scans)
			_, err = d.CreateColumnFamily("nope", nil)
			require.ErrorIs(t, err, ErrReadOnly)
			require.ErrorIs(t, d.DropColumnFamily(d.ColumnFamily(fams[1])), ErrReadOnly)
			require.NoError(t, d.Close())
			require.Equal(t, pristine, compatDirContents(t, dir), "a read-only open changed the directory")
			for _, ro := range []bool{true, false} {
				_, err = Open(dir, &Options{ReadOnly: ro, ColumnFamilies: map[string]*ColumnFamilyOptions{"missing": {}}})
				require.ErrorIs(t, err, ErrInvalidArgument, "ReadOnly=%v", ro)
			}
			// The writable one has recovered the WAL by the time it checks
			// the names (as RocksDB's DB::Open does: it replays and
			// flushes, then finds the family missing), so the directory
			// may have changed, but not what it holds.
			d, err = Open(dir, &Options{ReadOnly: true})
			require.NoError(t, err)
			compatCFCheck(t, d, fams, scans)
			require.NoError(t, d.Close())

			for round := 0; round < 2; round++ {
				d, err = Open(dir, &Options{})
				require.NoError(t, err, "round %d", round)
				compatCFCheck(t, d, fams, scans)
				got, err = ListColumnFamilies(dir) // while open
				require.NoError(t, err)
				require.Equal(t, fams, got)
				require.NoError(t, d.Close())
			}
			d, err = Open(dir, &Options{ReadOnly: true})
			require.NoError(t, err)
			compatCFCheck(t, d, fams, scans)
			require.NoError(t, d.Close())

			if ldbErr == nil || os.Getenv("CI") == "true" {
				compatCFCheckLDB(t, dir, fams, scans)
			}
		})
	}
}

// compatDirContents maps each plain file of dir (less LOCK and LOG files,
// which any open may write) to its contents.
func compatDirContents(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	m := map[string]string{}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == "LOCK" || strings.HasPrefix(e.Name(), "LOG") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		m[e.Name()] = string(b)
	}
	return m
}

// compatCFKey numbers keys of the tests below.
func compatCFKey(p string, i int) []byte { return []byte(fmt.Sprintf("%s%04d", p, i)) }

// compatCFMake creates in dir a DB with families "a" (id 1) and "b" (id 2)
// besides default, and fills them: flushed tables, a range deletion, a
// cross-family batch, deletes, and writes left only in the WAL. It returns
// the open DB.
func compatCFMake(t *testing.T, dir string) *DB {
	t.Helper()
	d, err := Open(dir, &Options{
		CreateIfMissing:             true,
		ColumnFamilies:              map[string]*ColumnFamilyOptions{"a": {}, "b": {Compression: SnappyCompression}},
		CreateMissingColumnFamilies: true,
	})
	require.NoError(t, err)
	a, b := d.ColumnFamily("a"), d.ColumnFamily("b")
	require.NotNil(t, a)
	require.NotNil(t, b)
	require.Equal(t, []string{"default", "a", "b"}, compatCFNames(d))
	require.Equal(t, uint32(1), a.ID())
	require.Equal(t, uint32(2), b.ID())

	for i := 0; i < 200; i++ {
		require.NoError(t, d.Put(compatCFKey("d", i), []byte(fmt.Sprintf("dv%d", i)), nil))
		require.NoError(t, a.Put(compatCFKey("k", i), []byte(fmt.Sprintf("av%d", i)), nil))
		require.NoError(t, b.Put(compatCFKey("k", i), []byte(fmt.Sprintf("bv%d", i)), nil))
	}
	require.NoError(t, a.Flush())
	require.NoError(t, b.Flush())
	require.NoError(t, a.DeleteRange(compatCFKey("k", 10), compatCFKey("k", 20), nil))
	require.NoError(t, b.Delete(compatCFKey("k", 5), nil))
	require.NoError(t, a.Flush())

	batch := NewBatch()
	batch.PutCF(a, []byte("batch"), []byte("in-a"))
	batch.PutCF(b, []byte("batch"), []byte("in-b"))
	batch.Put([]byte("batch"), []byte("in-default"))
	batch.DeleteCF(b, compatCFKey("k", 6))
	batch.DeleteRangeCF(b, compatCFKey("k", 100), compatCFKey("k", 110))
	require.NoError(t, d.Write(batch, nil))
	// Only in the WAL from here on.
	require.NoError(t, a.Put([]byte("wal-only"), []byte("a-wal"), nil))
	require.NoError(t, b.Put([]byte("wal-only"), []byte("b-wal"), nil))
	require.NoError(t, a.Delete(compatCFKey("k", 30), nil))
	require.NoError(t, d.Put([]byte("wal-only"), []byte("d-wal"), &WriteOptions{Sync: true}))
	return d
}

// compatCFScans scans every family of d.
func compatCFScans(t *testing.T, d *DB) ([]string, map[string]string) {
	t.Helper()
	scans := map[string]string{}
	for _, cf := range d.ColumnFamilies() {
		scans[cf.Name()] = compatCFScan(t, cf)
	}
	return compatCFNames(d), scans
}

// TestCompatCFLDBReadsStrataDirectory: ldb lists, scans, gets and checks
// the families of a directory Strata wrote, its manifest_dump shows them,
// and dump_wal decodes Strata's column-family WAL records.
func TestCompatCFLDBReadsStrataDirectory(t *testing.T) {
	compatLDB(t)
	dir := t.TempDir()
	d := compatCFMake(t, dir)
	fams, scans := compatCFScans(t, d)
	require.Contains(t, scans["a"], fmt.Sprintf("0x%X : 0x%X\n", "wal-only", "a-wal"))
	require.Contains(t, scans["b"], fmt.Sprintf("0x%X : 0x%X\n", "batch", "in-b"))
	require.NotContains(t, scans["a"], fmt.Sprintf("0x%X :", compatCFKey("k", 15)))
	require.NotContains(t, scans["b"], fmt.Sprintf("0x%X :", compatCFKey("k", 105)))

	// A plain copy of the open directory: its WAL holds the unflushed tail.
	open := compatCopyDir(t, dir)
	logs, err := filepath.Glob(filepath.Join(open, "*.log"))
	require.NoError(t, err)
	require.NotEmpty(t, logs)
	var wal strings.Builder
	for _, l := range logs {
		wal.WriteString(runLDB(t, "dump_wal", "--walfile="+l, "--header", "--print_value"))
	}
	require.Contains(t, wal.String(), fmt.Sprintf("PUT(1) : 0x%X : 0x%X", "wal-only", "a-wal"))
	require.Contains(t, wal.String(), fmt.Sprintf("PUT(2) : 0x%X : 0x%X", "wal-only", "b-wal"))
	require.Contains(t, wal.String(), fmt.Sprintf("DELETE(1) : 0x%X", compatCFKey("k", 30)))
	// The cross-family batch is one WAL record.
	require.Contains(t, wal.String(), fmt.Sprintf("PUT(1) : 0x%X : 0x%X PUT(2) : 0x%X : 0x%X PUT(0) : 0x%X : 0x%X",
		"batch", "in-a", "batch", "in-b", "batch", "in-default"))
	compatCFCheckLDB(t, open, fams, scans)

	require.NoError(t, d.Close())
	closed := compatCopyDir(t, dir)
	current, err := os.ReadFile(filepath.Join(closed, "CURRENT"))
	require.NoError(t, err)
	md := runLDB(t, "manifest_dump", "--path="+filepath.Join(closed, strings.TrimSpace(string(current))))
	for _, f := range []string{`Column family "default"  (ID 0)`, `Column family "a"  (ID 1)`, `Column family "b"  (ID 2)`} {
		require.Contains(t, md, f)
	}
	compatCFManifestAgrees(t, closed, md, map[string]uint32{"default": 0, "a": 1, "b": 2})
	require.Equal(t, fmt.Sprintf("%s\n", "bv7"), runLDB(t, "--db="+closed, "--column_family=b", "get", string(compatCFKey("k", 7))))
	compatCFCheckLDB(t, closed, fams, scans)
}

// compatCFManifestDump matches the header of a family's section of `ldb
// manifest_dump`, and a table line of it (" NUM:SIZE[...").
var (
	compatCFDumpFamily = regexp.MustCompile(`^-+ Column family "(.*)"  \(ID (\d+)\) -+$`)
	compatCFDumpTable  = regexp.MustCompile(`^ (\d+):(\d+)\[`)
)

// compatCFManifestDump runs ldb manifest_dump on the current MANIFEST of
// the closed directory dir.
func compatCFManifestDump(t *testing.T, dir string) string {
	t.Helper()
	current, err := os.ReadFile(filepath.Join(dir, "CURRENT"))
	require.NoError(t, err)
	return runLDB(t, "manifest_dump", "--path="+filepath.Join(dir, strings.TrimSpace(string(current))))
}

// compatCFManifestAgrees checks the manifest_dump md of the closed
// directory dir against its files: exactly the families fams (name to id),
// each listing exactly the tables on disk whose properties name it, with
// their sizes, and its log number; the largest id ever used; and no WAL
// left older than every family's log number.
func compatCFManifestAgrees(t *testing.T, dir, md string, fams map[string]uint32) {
	t.Helper()
	tables := map[string][]string{}
	logNums := map[string]uint64{}
	cur := ""
	for _, line := range strings.Split(md, "\n") {
		if m := compatCFDumpFamily.FindStringSubmatch(line); m != nil {
			cur = m[1]
			require.Contains(t, fams, cur, "manifest_dump lists a family Strata does not have")
			require.Equal(t, fmt.Sprint(fams[cur]), m[2], cur)
			tables[cur] = []string{}
			continue
		}
		if n, ok := strings.CutPrefix(line, "log number: "); ok && cur != "" {
			v, err := strconv.ParseUint(n, 10, 64)
			require.NoError(t, err, line)
			logNums[cur] = v
		}
		if m := compatCFDumpTable.FindStringSubmatch(line); m != nil {
			require.NotEmpty(t, cur, line)
			tables[cur] = append(tables[cur], m[1]+":"+m[2])
		}
	}
	require.Len(t, tables, len(fams), "families in manifest_dump:\n%s", md)
	maxID, minLog := uint32(0), uint64(math.MaxUint64)
	for name, id := range fams {
		maxID = max(maxID, id)
		var want []string
		for _, f := range compatFamilyTables(t, dir, id) {
			st, err := os.Stat(f)
			require.NoError(t, err)
			num, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(f), ".sst"), 10, 64)
			require.NoError(t, err)
			want = append(want, fmt.Sprintf("%d:%d", num, st.Size()))
		}
		require.ElementsMatch(t, want, tables[name], "tables of family %q", name)
		require.Contains(t, logNums, name, "no log number for family %q", name)
		minLog = min(minLog, logNums[name])
	}
	require.Contains(t, md, fmt.Sprintf(" max_column_family %d ", maxID))
	// A WAL below every family's log number holds nothing any family
	// needs: it must be gone.
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	for _, l := range logs {
		num, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(l), ".log"), 10, 64)
		require.NoError(t, err)
		require.GreaterOrEqual(t, num, minLog, "%s is older than every family's log number", l)
	}
}

// TestCompatCFLDBWritesStrataDirectory: ldb puts into a family of a
// directory Strata wrote, creates and drops families there; Strata then
// opens the families ldb left, with their data, and a family it creates
// gets an id never used before.
func TestCompatCFLDBWritesStrataDirectory(t *testing.T) {
	compatLDB(t)
	dir := t.TempDir()
	d := compatCFMake(t, dir)
	_, before := compatCFScans(t, d)
	require.NoError(t, d.Close())

	runLDB(t, "--db="+dir, "--column_family=a", "put", "x", "y")
	runLDB(t, "--db="+dir, "create_column_family", "c")
	runLDB(t, "--db="+dir, "--column_family=c", "put", "cx", "cy")
	runLDB(t, "--db="+dir, "drop_column_family", "b")

	got, err := ListColumnFamilies(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"default", "a", "c"}, got)
	d, err = Open(dir, &Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"default", "a", "c"}, compatCFNames(d))
	a, c := d.ColumnFamily("a"), d.ColumnFamily("c")
	require.Equal(t, uint32(1), a.ID())
	require.Equal(t, uint32(3), c.ID())
	v, err := a.Get([]byte("x"), nil)
	require.NoError(t, err)
	require.Equal(t, "y", string(v))
	v, err = c.Get([]byte("cx"), nil)
	require.NoError(t, err)
	require.Equal(t, "cy", string(v))
	_, err = d.Get([]byte("x"), nil)
	require.ErrorIs(t, err, ErrNotFound)
	// Everything Strata wrote to a and default is still there.
	require.Equal(t, before["default"], compatCFScan(t, d.DefaultColumnFamily()))
	wantA := before["a"] + fmt.Sprintf("0x%X : 0x%X\n", "x", "y")
	require.Equal(t, wantA, compatCFScan(t, a))

	// b (id 2) and c (id 3) were used: new families get 4, then 5, also
	// for the name of the dropped b.
	dd, err := d.CreateColumnFamily("d", nil)
	require.NoError(t, err)
	require.Equal(t, uint32(4), dd.ID())
	b2, err := d.CreateColumnFamily("b", nil)
	require.NoError(t, err)
	require.Equal(t, uint32(5), b2.ID())
	_, err = b2.Get(compatCFKey("k", 7), nil)
	require.ErrorIs(t, err, ErrNotFound, "the new b must not see the dropped b's data")
	require.NoError(t, dd.Put([]byte("dk"), []byte("dv"), nil))
	require.NoError(t, d.Close())

	require.Equal(t, []string{"default", "a", "c", "d", "b"}, compatParseFamilies(t, runLDB(t, "--db="+dir, "list_column_families")))
	require.Equal(t, "dv\n", runLDB(t, "--db="+dir, "--column_family=d", "get", "dk"))
	runLDB(t, "--db="+dir, "create_column_family", "e")
	d, err = Open(dir, &Options{})
	require.NoError(t, err)
	require.Equal(t, uint32(6), d.ColumnFamily("e").ID())
	f, err := d.CreateColumnFamily("f", nil)
	require.NoError(t, err)
	require.Equal(t, uint32(7), f.ID())
	require.NoError(t, d.Close())
}

// compatSSTDump runs sst_dump with args, skipping the test when it is not
// installed (failing under CI).
func compatSSTDump(t *testing.T, args ...string) string {
	t.Helper()
	p, err := exec.LookPath("sst_dump")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sst_dump not found (CI installs it with apt-get install -y rocksdb-tools): %v", err)
		}
		t.Skip("sst_dump (RocksDB 7.8.3 rocksdb-tools) is not installed")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(p, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "sst_dump %v: %s", args, stderr.String())
	return stdout.String()
}

// compatNewTables returns the table files in dir not in old.
func compatNewTables(t *testing.T, dir string, old []string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	var out []string
	for _, f := range all {
		if !slices.Contains(old, f) {
			out = append(out, f)
		}
	}
	return out
}

// TestCompatCFTableProperties: every table Strata writes for a family
// carries that family's id and name, as sst_dump shows them.
func TestCompatCFTableProperties(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{
		CreateIfMissing:             true,
		ColumnFamilies:              map[string]*ColumnFamilyOptions{"a": {}, "b": {}},
		CreateMissingColumnFamilies: true,
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	var seen []string
	for _, cf := range d.ColumnFamilies() {
		require.NoError(t, cf.Put([]byte("k-"+cf.Name()), []byte("v"), nil))
		require.NoError(t, cf.Flush())
		tables := compatNewTables(t, dir, seen)
		require.Len(t, tables, 1, cf.Name())
		seen = append(seen, tables...)
		p := compatTableProps(t, tables[0])
		require.Equal(t, uint64(cf.ID()), p.ColumnFamilyID, cf.Name())
		require.Equal(t, cf.Name(), p.ColumnFamilyName)
		out := compatSSTDump(t, "--file="+tables[0], "--show_properties")
		require.Contains(t, out, fmt.Sprintf("column family ID: %d\n", cf.ID()), cf.Name())
		require.Contains(t, out, fmt.Sprintf("column family name: %s\n", cf.Name()), cf.Name())
	}
}

// TestCompatCFIngest: an external file written for no family in
// particular ingests into any family; one RocksDB's SstFileWriter stamped
// with family b's id ingests into b and is refused by a; a table copied out
// of a family's directory is refused (it is no external file).
func TestCompatCFIngest(t *testing.T) {
	dir := t.TempDir()
	d := compatCFMake(t, dir)
	defer func() { require.NoError(t, d.Close()) }()
	a, b := d.ColumnFamily("a"), d.ColumnFamily("b")

	ext := filepath.Join(t.TempDir(), "ext.sst")
	fh, err := os.Create(ext)
	require.NoError(t, err)
	w := table.NewExternalWriter(fh, table.ExternalWriterOptions{})
	require.NoError(t, w.Put([]byte("ing1"), []byte("iv1")))
	require.NoError(t, w.Put([]byte("ing2"), []byte("iv2")))
	_, err = w.Finish()
	require.NoError(t, err)
	require.NoError(t, fh.Close())
	require.NoError(t, a.Ingest([]string{ext}, nil))
	v, err := a.Get([]byte("ing1"), nil)
	require.NoError(t, err)
	require.Equal(t, "iv1", string(v))
	for _, cf := range []*ColumnFamily{b, d.DefaultColumnFamily()} {
		_, err = cf.Get([]byte("ing1"), nil)
		require.ErrorIs(t, err, ErrNotFound, cf.Name())
	}

	// The same kind of file with its family id patched to b's (2).
	stampedGo := compatStampFamily(t, ext, 2)
	require.Equal(t, uint64(2), compatTableProps(t, stampedGo).ColumnFamilyID)
	err = a.Ingest([]string{stampedGo}, nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "written for column family 2")
	require.NoError(t, b.Ingest([]string{stampedGo}, nil))
	v, err = b.Get([]byte("ing2"), nil)
	require.NoError(t, err)
	require.Equal(t, "iv2", string(v))

	// A table of b, as b's flush wrote it (id 2 in its properties).
	old, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.NoError(t, b.Flush())
	bt := compatNewTables(t, dir, old)
	require.Len(t, bt, 1)
	cp := filepath.Join(t.TempDir(), "copied.sst")
	raw, err := os.ReadFile(bt[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cp, raw, 0o644))
	err = a.Ingest([]string{cp}, nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "not an external table file")

	// An external file RocksDB wrote for family b of (a copy of) this DB.
	if _, lerr := exec.LookPath("ldb"); lerr != nil && os.Getenv("CI") != "true" {
		t.Skip("ldb is not installed: the family-stamped external file is not checked")
	}
	// RocksDB reads the patched file as stamped for family 2.
	require.Contains(t, compatSSTDump(t, "--file="+stampedGo, "--show_properties"), "column family ID: 2\n")
	dcp := compatCopyDir(t, dir)
	stamped := filepath.Join(t.TempDir(), "stamped.sst")
	cmd := exec.Command(compatLDB(t), "--db="+dcp, "--column_family=b", "write_extern_sst", stamped)
	cmd.Stdin = strings.NewReader("st1 ==> sv1\nst2 ==> sv2\n")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	err = a.Ingest([]string{stamped}, nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), `written for column family 2 ("b"), not for 1 ("a")`)
	_, err = a.Get([]byte("st1"), nil)
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, b.Ingest([]string{stamped}, nil))
	v, err = b.Get([]byte("st2"), nil)
	require.NoError(t, err)
	require.Equal(t, "sv2", string(v))
}

// compatTableProps returns the properties of the table file at path.
func compatTableProps(t *testing.T, path string) table.Properties {
	t.Helper()
	fh, err := os.Open(path)
	require.NoError(t, err)
	st, err := fh.Stat()
	require.NoError(t, err)
	r, err := table.Open(fh, st.Size(), table.ReaderOptions{FileName: path})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	return *r.Properties()
}

// compatStampFamily copies the external file at src (family id
// kUnknownColumnFamily, the varint ff ff ff ff 07) into a new file whose
// rocksdb.column.family.id says id instead, and returns its path. The new
// value keeps the 5-byte length (a non-minimal varint, which RocksDB's and
// Go's varint decoders accept), so only the properties block and its
// checksum change: an ExternalWriter has no option for a family id.
func compatStampFamily(t *testing.T, src string, id byte) string {
	t.Helper()
	require.Less(t, id, byte(0x80))
	raw, err := os.ReadFile(src)
	require.NoError(t, err)
	fh, err := os.Open(src)
	require.NoError(t, err)
	r, err := table.Open(fh, int64(len(raw)), table.ReaderOptions{FileName: src})
	require.NoError(t, err)
	layout, err := r.Layout()
	require.NoError(t, err)
	require.NoError(t, r.Close())
	var props table.BlockInfo
	for _, b := range layout {
		if b.Kind == "meta" && b.Name == "rocksdb.properties" {
			props = b
		}
	}
	require.NotZero(t, props.Size, "no properties block in %s", src)
	block := raw[props.Offset : props.Offset+props.Size]
	// The key shares its "rocksdb." prefix with the one before it.
	old := append([]byte("column.family.id"), 0xff, 0xff, 0xff, 0xff, 0x07)
	require.Equal(t, 1, bytes.Count(block, old))
	i := bytes.Index(block, old) + len(old) - 5
	copy(block[i:], []byte{0x80 | id, 0x80, 0x80, 0x80, 0x00})
	trailer := raw[props.Offset+props.Size:]
	binary.LittleEndian.PutUint32(trailer[1:5], checksum.Block(checksum.XXH3, block, trailer[0]))
	dst := filepath.Join(t.TempDir(), fmt.Sprintf("stamped-%d.sst", id))
	require.NoError(t, os.WriteFile(dst, raw, 0o644))
	return dst
}

// TestCompatCFStrataChangesRocksDBFixtures: Strata writes into, flushes,
// compacts, drops and adds families of the directories RocksDB wrote; ldb
// then reads exactly what Strata reads, and a family Strata adds gets an id
// above every id the directory ever used (also ids of families dropped
// before Strata saw it: ldb_noflush's cf_tmp, 4).
func TestCompatCFStrataChangesRocksDBFixtures(t *testing.T) {
	compatLDB(t)
	maxID := map[string]uint32{"atomic_flush": 3, "dbbench4": 3, "ldb_created": 3, "ldb_noflush": 4, "wal_only": 3}
	for _, shape := range compatCFShapes(t) {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			dir := compatCopyDir(t, filepath.Join(compatCFFixtures, shape, "db"))
			d, err := Open(dir, &Options{})
			require.NoError(t, err)
			fams := d.ColumnFamilies()
			require.GreaterOrEqual(t, len(fams), 3)
			for i, cf := range fams {
				for j := 0; j < 50; j++ {
					require.NoError(t, cf.Put(compatCFKey("strata-"+cf.Name()+"-", j), []byte(fmt.Sprintf("v%d", j)), nil))
				}
				require.NoError(t, cf.Delete(compatCFKey("strata-"+cf.Name()+"-", 3), nil))
				switch i % 3 {
				case 0:
					require.NoError(t, cf.Flush())
				case 1:
					require.NoError(t, cf.CompactRange(nil, nil))
				}
			}
			// Drop the last family; its tables and WAL records stay behind
			// until nothing needs them.
			last := fams[len(fams)-1]
			require.NoError(t, d.DropColumnFamily(last))
			n, err := d.CreateColumnFamily("strata_new", nil)
			require.NoError(t, err)
			require.Equal(t, maxID[shape]+1, n.ID())
			require.NoError(t, n.Put([]byte("new"), []byte("family"), nil))
			names, scans := compatCFScans(t, d)
			require.NotContains(t, names, last.Name())
			require.Equal(t, "strata_new", names[len(names)-1])
			compatCFCheckLDB(t, dir, names, scans) // a copy, while open
			ids := map[string]uint32{}
			for _, cf := range d.ColumnFamilies() {
				ids[cf.Name()] = cf.ID()
			}
			require.NoError(t, d.Close())
			compatCFManifestAgrees(t, dir, compatCFManifestDump(t, dir), ids)
			tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
			require.NoError(t, err)
			for _, f := range tables {
				require.NotEqual(t, uint64(last.ID()), compatTableProps(t, f).ColumnFamilyID,
					"%s of dropped family %q is still there", f, last.Name())
			}
			compatCFCheckLDB(t, dir, names, scans)

			runLDB(t, "--db="+dir, "--column_family=strata_new", "put", "from", "ldb")
			d, err = Open(dir, &Options{})
			require.NoError(t, err)
			require.Equal(t, names, compatCFNames(d))
			v, err := d.ColumnFamily("strata_new").Get([]byte("from"), nil)
			require.NoError(t, err)
			require.Equal(t, "ldb", string(v))
			for _, name := range names {
				want := scans[name]
				if name == "strata_new" {
					want = fmt.Sprintf("0x%X : 0x%X\n", "from", "ldb") + want // "from" < "new"
				}
				require.Equal(t, want, compatCFScan(t, d.ColumnFamily(name)), name)
			}
			n2, err := d.CreateColumnFamily(last.Name(), nil)
			require.NoError(t, err)
			require.Equal(t, maxID[shape]+2, n2.ID())
			require.Empty(t, compatCFScan(t, n2))
			require.NoError(t, d.Close())
		})
	}
}

// compatFamilyTables lists the tables in dir whose properties name family id.
func compatFamilyTables(t *testing.T, dir string, id uint32) []string {
	t.Helper()
	tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	var out []string
	for _, f := range tables {
		if compatTableProps(t, f).ColumnFamilyID == uint64(id) {
			out = append(out, f)
		}
	}
	return out
}

// TestCompatCFDropDeletesTables: a dropped family's tables are deleted as
// soon as nothing reads them: at the drop, or once an iterator opened
// before it is closed; never left for RocksDB's next open to find.
func TestCompatCFDropDeletesTables(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{CreateIfMissing: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	for _, keepIter := range []bool{false, true} {
		cf, err := d.CreateColumnFamily(fmt.Sprintf("drop-%v", keepIter), nil)
		require.NoError(t, err)
		require.NoError(t, cf.Put([]byte("k"), []byte("v"), nil))
		require.NoError(t, cf.Flush())
		require.Len(t, compatFamilyTables(t, dir, cf.ID()), 1)
		var it *Iterator
		if keepIter {
			it = cf.NewIterator(nil)
		}
		require.NoError(t, d.DropColumnFamily(cf))
		if keepIter {
			require.Len(t, compatFamilyTables(t, dir, cf.ID()), 1, "an iterator still reads it")
			it.SeekToFirst()
			require.True(t, it.Valid())
			require.Equal(t, "v", string(it.Value()))
			require.NoError(t, it.Close())
			// The next deletion pass (any flush) removes it.
			require.NoError(t, d.Put([]byte("x"), []byte("y"), nil))
			require.NoError(t, d.Flush())
		}
		require.Empty(t, compatFamilyTables(t, dir, cf.ID()), "keepIter=%v", keepIter)
	}
}

// TestCompatCFLDBMaintainsStrataFamily: ldb range-deletes in, compacts and
// ingests a Strata ExternalWriter file into family a of a Strata
// directory; Strata reads every change, and b and default are untouched.
func TestCompatCFLDBMaintainsStrataFamily(t *testing.T) {
	compatLDB(t)
	dir := t.TempDir()
	d := compatCFMake(t, dir)
	_, before := compatCFScans(t, d)
	require.NoError(t, d.Close())

	ext := filepath.Join(t.TempDir(), "ext.sst")
	fh, err := os.Create(ext)
	require.NoError(t, err)
	w := table.NewExternalWriter(fh, table.ExternalWriterOptions{Compression: table.SnappyCompression})
	require.NoError(t, w.Put([]byte("zz-ingested"), []byte("by-ldb")))
	_, err = w.Finish()
	require.NoError(t, err)
	require.NoError(t, fh.Close())

	runLDB(t, "--db="+dir, "--column_family=a", "deleterange", string(compatCFKey("k", 50)), string(compatCFKey("k", 60)))
	runLDB(t, "--db="+dir, "--column_family=a", "compact")
	// ingest_extern_sst reports its success on stderr.
	out, err := exec.Command(compatLDB(t), "--db="+dir, "--column_family=a", "ingest_extern_sst", ext).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "external SST files ingested\n", string(out))

	d, err = Open(dir, &Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	a := d.ColumnFamily("a")
	for i := 45; i < 65; i++ {
		_, err := a.Get(compatCFKey("k", i), nil)
		if i >= 50 && i < 60 {
			require.ErrorIs(t, err, ErrNotFound, i)
		} else {
			require.NoError(t, err, i)
		}
	}
	v, err := a.Get([]byte("zz-ingested"), nil)
	require.NoError(t, err)
	require.Equal(t, "by-ldb", string(v))
	require.Equal(t, before["b"], compatCFScan(t, d.ColumnFamily("b")))
	require.Equal(t, before["default"], compatCFScan(t, d.DefaultColumnFamily()))
	// The compaction left family a's tables at a lower level than L0.
	require.Contains(t, compatSSTDump(t, "--file="+compatFamilyTables(t, dir, 1)[0], "--show_properties"), "column family name: a\n")
}

// TestCompatCFCrashCopyAndOptions: a plain copy of an open Strata
// directory (a cross-family batch and per-family writes only in its WAL)
// opens in Strata with every family as it was; a family not named at Open
// takes its options from the OPTIONS file RocksDB wrote (ldb_created's
// cf_b: Snappy), and so do the tables Strata flushes for it.
func TestCompatCFCrashCopyAndOptions(t *testing.T) {
	dir := t.TempDir()
	d := compatCFMake(t, dir)
	fams, scans := compatCFScans(t, d)
	cp := compatCopyDir(t, dir)
	require.NoError(t, d.Close())
	for _, ro := range []bool{true, false} {
		c, err := Open(compatCopyDir(t, cp), &Options{ReadOnly: ro})
		require.NoError(t, err)
		compatCFCheck(t, c, fams, scans)
		require.NoError(t, c.Close())
	}

	fdir := compatCopyDir(t, filepath.Join(compatCFFixtures, "ldb_created", "db"))
	f, err := Open(fdir, &Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	for name, want := range map[string]string{"default": "NoCompression", "cf_b": "Snappy", "cf_c": "Snappy"} {
		cf := f.ColumnFamily(name)
		// cf_b's fourth L0 table would start a compaction, whose output
		// the listing below would race with.
		require.NoError(t, cf.SetOptions(map[string]string{"disable_auto_compactions": "true"}))
		old := compatFamilyTables(t, fdir, cf.ID())
		require.NoError(t, cf.Put([]byte("compressed?"), bytes.Repeat([]byte("x"), 1000), nil))
		require.NoError(t, cf.Flush())
		tables := compatFamilyTables(t, fdir, cf.ID())
		var fresh []string
		for _, tb := range tables {
			if !slices.Contains(old, tb) {
				fresh = append(fresh, tb)
			}
		}
		require.Len(t, fresh, 1, name)
		require.Equal(t, want, compatTableProps(t, fresh[0]).CompressionName, name)
	}
}

// TestCompatCFPerFamilyOptionsWithLDB: families with their own prefix
// extractor, filter and compression, and a SetOptions on one of them, are
// recorded in their own OPTIONS sections: ldb opens and reads the
// directory with them, and Strata reopens each family with its options
// without being told them.
func TestCompatCFPerFamilyOptionsWithLDB(t *testing.T) {
	compatLDB(t)
	dir := t.TempDir()
	d, err := Open(dir, &Options{
		CreateIfMissing: true,
		ColumnFamilies: map[string]*ColumnFamilyOptions{
			"p": {PrefixExtractor: prefix.Fixed(4), BloomBitsPerKey: 10, Compression: ZstdCompression},
			"q": {Compression: SnappyCompression},
			"f": {CompactionStyle: FIFOCompaction},
		},
		CreateMissingColumnFamilies: true,
	})
	require.NoError(t, err)
	p, q := d.ColumnFamily("p"), d.ColumnFamily("q")
	for i := 0; i < 100; i++ {
		require.NoError(t, p.Put(compatCFKey("pp", i), []byte("pv"), nil))
		require.NoError(t, q.Put(compatCFKey("qq", i), []byte("qv"), nil))
	}
	require.NoError(t, p.Flush())
	require.NoError(t, q.Flush())
	require.NoError(t, q.SetOptions(map[string]string{"write_buffer_size": "1048576"}))
	f := d.ColumnFamily("f")
	for round := 0; round < 3; round++ {
		require.NoError(t, f.Put([]byte(fmt.Sprintf("f%d", round)), []byte("fv"), nil))
		require.NoError(t, f.Flush())
	}
	require.NoError(t, f.CompactRange(nil, nil))
	fams, scans := compatCFScans(t, d)
	require.NoError(t, d.Close())

	opts := compatOptionsFiles(t, dir)
	raw, err := os.ReadFile(filepath.Join(dir, opts[len(opts)-1]))
	require.NoError(t, err)
	sections := map[string]string{}
	var cur string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "[") {
			cur = line
		}
		sections[cur] += line + "\n"
	}
	require.Contains(t, sections[`[CFOptions "p"]`], "prefix_extractor=rocksdb.FixedPrefix.4\n")
	require.Contains(t, sections[`[CFOptions "p"]`], "compression=kZSTD\n")
	require.Contains(t, sections[`[CFOptions "q"]`], "compression=kSnappyCompression\n")
	require.Contains(t, sections[`[CFOptions "q"]`], "write_buffer_size=1048576\n")
	require.Contains(t, sections[`[CFOptions "f"]`], "compaction_style=kCompactionStyleFIFO\n")
	require.Contains(t, sections[`[CFOptions "p"]`], "compaction_style=kCompactionStyleLevel\n")
	require.NotContains(t, sections[`[CFOptions "default"]`], "write_buffer_size=1048576\n")
	require.Contains(t, sections[`[TableOptions/BlockBasedTable "p"]`], "filter_policy=bloomfilter")

	pt := compatFamilyTables(t, dir, p.ID())
	require.Len(t, pt, 1)
	sd := compatSSTDump(t, "--file="+pt[0], "--show_properties")
	require.Contains(t, sd, "prefix extractor name: rocksdb.FixedPrefix.4\n")
	require.Contains(t, sd, "SST file compression algo: ZSTD\n")

	compatCFCheckLDB(t, dir, fams, scans)
	require.Equal(t, "pv\n", runLDB(t, "--db="+dir, "--column_family=p", "get", string(compatCFKey("pp", 42))))

	d, err = Open(dir, &Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	compatCFCheck(t, d, fams, scans)
	p, q = d.ColumnFamily("p"), d.ColumnFamily("q")
	require.NotNil(t, p.opts.PrefixExtractor)
	require.Equal(t, "rocksdb.FixedPrefix.4", p.opts.PrefixExtractor.Name())
	require.Equal(t, 10, p.opts.BloomBitsPerKey)
	require.Equal(t, ZstdCompression, p.opts.Compression)
	require.Equal(t, SnappyCompression, q.opts.Compression)
	require.Equal(t, int64(1048576), q.writeBufferSize.Load())
	require.Nil(t, d.DefaultColumnFamily().opts.PrefixExtractor)
	require.Equal(t, FIFOCompaction, d.ColumnFamily("f").opts.CompactionStyle)
	require.Equal(t, LevelCompaction, p.opts.CompactionStyle)
	it := p.NewIterator(&ReadOptions{PrefixSameAsStart: true})
	n := 0
	for it.Seek([]byte("pp00")); it.Valid(); it.Next() {
		n++
	}
	require.NoError(t, it.Close())
	require.Equal(t, 100, n)
}

// TestCompatCFDroppedFamilyInWAL: the WAL still holds records of a family
// dropped after them; a crash copy then opens, in Strata and in ldb,
// without the family, its records skipped, the other families' intact.
func TestCompatCFDroppedFamilyInWAL(t *testing.T) {
	dir := t.TempDir()
	d := compatCFMake(t, dir)
	b := d.ColumnFamily("b")
	batch := NewBatch()
	batch.PutCF(b, []byte("doomed"), []byte("x"))
	batch.PutCF(d.ColumnFamily("a"), []byte("kept"), []byte("y"))
	require.NoError(t, d.Write(batch, nil))
	require.NoError(t, d.DropColumnFamily(b))
	require.ErrorIs(t, b.Put([]byte("late"), []byte("z"), nil), ErrInvalidArgument)
	require.NoError(t, d.Put([]byte("after-drop"), []byte("w"), &WriteOptions{Sync: true}))
	fams, scans := compatCFScans(t, d)
	require.Equal(t, []string{"default", "a"}, fams)
	require.Contains(t, scans["a"], fmt.Sprintf("0x%X : 0x%X\n", "kept", "y"))
	cp := compatCopyDir(t, dir)
	require.NoError(t, d.Close())

	for _, ro := range []bool{true, false} {
		c, err := Open(compatCopyDir(t, cp), &Options{ReadOnly: ro})
		require.NoError(t, err)
		compatCFCheck(t, c, fams, scans)
		require.NoError(t, c.Close())
	}
	if _, err := exec.LookPath("ldb"); err == nil || os.Getenv("CI") == "true" {
		compatCFCheckLDB(t, cp, fams, scans)
	}
}

// TestCompatCFCheckpointWithLDB: a checkpoint of a multi-family Strata
// database holds every family; ldb and Strata read each one as the source
// did when the checkpoint was taken.
func TestCompatCFCheckpointWithLDB(t *testing.T) {
	dir := t.TempDir()
	d := compatCFMake(t, dir)
	fams, scans := compatCFScans(t, d)
	ck := filepath.Join(t.TempDir(), "ck")
	require.NoError(t, d.Checkpoint(ck))
	require.NoError(t, d.ColumnFamily("a").Put([]byte("after"), []byte("checkpoint"), nil))
	require.NoError(t, d.Close())

	got, err := ListColumnFamilies(ck)
	require.NoError(t, err)
	require.Equal(t, fams, got)
	if _, err := exec.LookPath("ldb"); err == nil || os.Getenv("CI") == "true" {
		compatCFCheckLDB(t, ck, fams, scans)
	}
	c, err := Open(ck, &Options{})
	require.NoError(t, err)
	compatCFCheck(t, c, fams, scans)
	require.NoError(t, c.Close())
}

// TestCompatCFListColumnFamiliesWhileOpen: ListColumnFamilies reads the
// MANIFEST while the open database appends family edits to it; every
// answer is a consistent one (default first, then names by id), and the
// last equals the database's own list. It fails on a directory that holds
// no database.
func TestCompatCFListColumnFamiliesWhileOpen(t *testing.T) {
	_, err := ListColumnFamilies(t.TempDir())
	require.Error(t, err)
	_, err = ListColumnFamilies(filepath.Join(t.TempDir(), "absent"))
	require.Error(t, err)

	dir := t.TempDir()
	d, err := Open(dir, &Options{CreateIfMissing: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 30; i++ {
			cf, err := d.CreateColumnFamily(fmt.Sprintf("f%03d", i), nil)
			if err == nil {
				err = cf.Put([]byte("k"), []byte("v"), nil)
			}
			if err == nil && i%2 == 1 {
				err = d.DropColumnFamily(cf)
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for running := true; running; {
		select {
		case err := <-done:
			require.NoError(t, err)
			running = false
		default:
		}
		names, err := ListColumnFamilies(dir)
		require.NoError(t, err)
		require.Equal(t, "default", names[0])
		require.True(t, slices.IsSorted(names[1:]), "%v", names)
	}
	names, err := ListColumnFamilies(dir)
	require.NoError(t, err)
	require.Equal(t, compatCFNames(d), names)
	require.Len(t, names, 16)
}
