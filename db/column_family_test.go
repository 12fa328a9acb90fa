package db_test

// Tests of the column-family contract (API.md, "Column families"), one or
// more per sentence. They run on vfs.NewMem but where a file of the real
// file system is needed (ListColumnFamilies reads the OS's).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/prefix"
	"github.com/stratadb/strata/table"
	"github.com/stratadb/strata/vfs"
	"github.com/stretchr/testify/require"
)

const cfDir = "db"

// openCF opens (creating if needed) the database cfDir on fs with o.
func openCF(t *testing.T, fs vfs.FS, o *db.Options) *db.DB {
	t.Helper()
	d, err := tryOpenCF(fs, o)
	require.NoError(t, err)
	return d
}

func tryOpenCF(fs vfs.FS, o *db.Options) (*db.DB, error) {
	opts := db.Options{}
	if o != nil {
		opts = *o
	}
	opts.FS = fs
	if !opts.ReadOnly {
		opts.CreateIfMissing = true
	}
	return db.Open(cfDir, &opts)
}

func createCF(t *testing.T, d *db.DB, name string, o *db.ColumnFamilyOptions) *db.ColumnFamily {
	t.Helper()
	cf, err := d.CreateColumnFamily(name, o)
	require.NoError(t, err)
	require.Equal(t, name, cf.Name())
	return cf
}

func familyNames(d *db.DB) []string {
	var names []string
	for _, cf := range d.ColumnFamilies() {
		names = append(names, cf.Name())
	}
	return names
}

func requireGet(t *testing.T, cf *db.ColumnFamily, key, want string) {
	t.Helper()
	v, err := cf.Get([]byte(key), nil)
	require.NoError(t, err, "family %q key %q", cf.Name(), key)
	require.Equal(t, want, string(v), "family %q key %q", cf.Name(), key)
}

func requireMissing(t *testing.T, cf *db.ColumnFamily, key string) {
	t.Helper()
	_, err := cf.Get([]byte(key), nil)
	require.ErrorIs(t, err, db.ErrNotFound, "family %q key %q", cf.Name(), key)
}

func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func prop(t *testing.T, cf *db.ColumnFamily, name string) string {
	t.Helper()
	v, ok := cf.GetProperty(name)
	require.True(t, ok, "property %s of %q", name, cf.Name())
	return v
}

func listFiles(t *testing.T, fs vfs.FS, suffix string) []string {
	t.Helper()
	names, err := fs.List(cfDir)
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, suffix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Options' own fields are the default family's options, unless
// Options.ColumnFamilies["default"] is given, which then wins.
func TestColumnFamilyDefaultOptions(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, &db.Options{PrefixExtractor: prefix.Fixed(3), MergeOperator: db.NewUInt64AddOperator()})
	def := d.DefaultColumnFamily()
	require.Equal(t, "default", def.Name())
	require.Equal(t, uint32(0), def.ID())
	require.Equal(t, "rocksdb.FixedPrefix.3", prop(t, def, db.PropPrefixExtractor))
	require.NoError(t, d.Merge([]byte("n"), u64(2), nil))
	require.NoError(t, d.Close())
	// A database whose OPTIONS file names no merge operator, for the
	// second half (a recorded built-in operator would be rebuilt).
	fs = vfs.NewMem()
	require.NoError(t, openCF(t, fs, nil).Close())

	// ColumnFamilies["default"] wins over every per-family field of
	// Options, those it leaves zero included (no merge operator).
	d = openCF(t, fs, &db.Options{
		PrefixExtractor: prefix.Fixed(3),
		MergeOperator:   db.NewUInt64AddOperator(),
		ColumnFamilies:  map[string]*db.ColumnFamilyOptions{"default": {PrefixExtractor: prefix.Capped(5)}},
	})
	defer d.Close()
	require.Equal(t, "rocksdb.CappedPrefix.5", prop(t, d.DefaultColumnFamily(), db.PropPrefixExtractor))
	require.ErrorIs(t, d.Merge([]byte("n"), u64(1), nil), db.ErrInvalidArgument)
}

// Open opens every family the directory has; one not named in
// Options.ColumnFamilies gets the options its OPTIONS section records.
func TestColumnFamilyOpenUnnamedFromOptionsFile(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, nil)
	p := createCF(t, d, "p", &db.ColumnFamilyOptions{PrefixExtractor: prefix.Fixed(3), BloomBitsPerKey: 10})
	m := createCF(t, d, "m", &db.ColumnFamilyOptions{MergeOperator: db.NewUInt64AddOperator()})
	for i := range 100 {
		require.NoError(t, p.Put(fmt.Appendf(nil, "k%03d", i), []byte("v"), nil))
	}
	require.NoError(t, p.Flush())
	require.NoError(t, m.Merge([]byte("n"), u64(5), nil))
	require.NoError(t, d.Close())

	d = openCF(t, fs, nil)
	defer d.Close()
	require.Equal(t, []string{"default", "p", "m"}, familyNames(d))
	p, m = d.ColumnFamily("p"), d.ColumnFamily("m")
	require.Equal(t, "rocksdb.FixedPrefix.3", prop(t, p, db.PropPrefixExtractor))
	require.Equal(t, "nullptr", prop(t, d.DefaultColumnFamily(), db.PropPrefixExtractor))
	requireGet(t, p, "k042", "v")
	// The recorded bloom filter is used: a miss in the table's range
	// consults it.
	before := prop(t, p, db.PropFilterChecks)
	requireMissing(t, p, "k04x")
	require.NotEqual(t, before, prop(t, p, db.PropFilterChecks))
	// The recorded merge operator is built again.
	require.NoError(t, m.Merge([]byte("n"), u64(2), nil))
	requireGet(t, m, "n", string(u64(7)))
}

// latestOptionsFile returns the name of the newest OPTIONS file.
func latestOptionsFile(t *testing.T, fs vfs.FS) string {
	t.Helper()
	names, err := fs.List(cfDir)
	require.NoError(t, err)
	latest := ""
	for _, n := range names {
		if strings.HasPrefix(n, "OPTIONS-") && !strings.HasSuffix(n, ".dbtmp") && n > latest {
			latest = n
		}
	}
	require.NotEmpty(t, latest)
	return filepath.Join(cfDir, latest)
}

func readFile(t *testing.T, fs vfs.FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	return string(b)
}

func writeFile(t *testing.T, fs vfs.FS, name, data string) {
	t.Helper()
	f, err := fs.Create(name)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// A merge operator that cannot be built from its recorded name is an error
// wrapping ErrInvalidArgument that names the family; naming the family in
// Options.ColumnFamilies opens it.
func TestColumnFamilyOpenUnknownMergeOperator(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, nil)
	createCF(t, d, "counts", &db.ColumnFamilyOptions{MergeOperator: db.NewUInt64AddOperator()})
	require.NoError(t, d.Close())

	name := latestOptionsFile(t, fs)
	text := readFile(t, fs, name)
	i := strings.Index(text, `[CFOptions "counts"]`)
	require.GreaterOrEqual(t, i, 0, "OPTIONS file:\n%s", text)
	sec := text[i:]
	j := strings.Index(sec, "merge_operator=")
	require.GreaterOrEqual(t, j, 0, "section:\n%s", sec)
	k := strings.IndexByte(sec[j:], '\n')
	require.Greater(t, k, 0)
	edited := text[:i] + sec[:j] + "merge_operator=NoSuchMergeOperator" + sec[j+k:]
	writeFile(t, fs, name, edited)

	_, err := tryOpenCF(fs, nil)
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.Contains(t, err.Error(), "counts")

	d = openCF(t, fs, &db.Options{ColumnFamilies: map[string]*db.ColumnFamilyOptions{
		"counts": {MergeOperator: db.NewUInt64AddOperator()}}})
	require.NoError(t, d.ColumnFamily("counts").Merge([]byte("x"), u64(1), nil))
	require.NoError(t, d.Close())
}

// A name in Options.ColumnFamilies that the directory lacks is created with
// CreateMissingColumnFamilies, else Open fails with ErrInvalidArgument.
func TestColumnFamilyOpenMissingName(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, openCF(t, fs, nil).Close())
	o := &db.Options{ColumnFamilies: map[string]*db.ColumnFamilyOptions{"x": {}}}
	_, err := tryOpenCF(fs, o)
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.Contains(t, err.Error(), `"x"`)

	o.CreateMissingColumnFamilies = true
	d := openCF(t, fs, o)
	require.Equal(t, []string{"default", "x"}, familyNames(d))
	require.NoError(t, d.ColumnFamily("x").Put([]byte("k"), []byte("v"), nil))
	require.NoError(t, d.Close())

	// A new database creates them too.
	d = openCF(t, vfs.NewMem(), o)
	require.Equal(t, []string{"default", "x"}, familyNames(d))
	require.NoError(t, d.Close())

	d = openCF(t, fs, nil)
	defer d.Close()
	requireGet(t, d.ColumnFamily("x"), "k", "v")
}

// ReadOnly opens every family the same way but creates nothing: a missing
// name is an error, and Create/Drop return ErrReadOnly.
func TestColumnFamilyReadOnly(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, nil)
	a := createCF(t, d, "a", nil)
	require.NoError(t, a.Put([]byte("k"), []byte("in-wal"), nil))
	require.NoError(t, d.Close())

	ro := openCF(t, fs, &db.Options{ReadOnly: true})
	require.Equal(t, []string{"default", "a"}, familyNames(ro))
	a = ro.ColumnFamily("a")
	requireGet(t, a, "k", "in-wal")
	_, err := ro.CreateColumnFamily("b", nil)
	require.ErrorIs(t, err, db.ErrReadOnly)
	require.ErrorIs(t, ro.DropColumnFamily(a), db.ErrReadOnly)
	require.ErrorIs(t, a.Put([]byte("k"), []byte("v"), nil), db.ErrReadOnly)
	require.NoError(t, ro.Close())

	for _, create := range []bool{false, true} {
		_, err := tryOpenCF(fs, &db.Options{ReadOnly: true, CreateMissingColumnFamilies: create,
			ColumnFamilies: map[string]*db.ColumnFamilyOptions{"missing": {}}})
		require.Error(t, err, "CreateMissingColumnFamilies=%v", create)
	}
	d = openCF(t, fs, nil)
	defer d.Close()
	require.Equal(t, []string{"default", "a"}, familyNames(d))
}

// ListColumnFamilies: "default" first, then by ID, whether the database is
// open or not.
func TestListColumnFamilies(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	createCF(t, d, "zeta", nil)
	alpha := createCF(t, d, "alpha", nil)
	createCF(t, d, "mid", nil)
	require.NoError(t, d.DropColumnFamily(alpha))
	names, err := db.ListColumnFamilies(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"default", "zeta", "mid"}, names)
	require.Equal(t, names, familyNames(d))
	require.NoError(t, d.Close())

	names, err = db.ListColumnFamilies(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"default", "zeta", "mid"}, names)

	_, err = db.ListColumnFamilies(filepath.Join(dir, "nothing-here"))
	require.Error(t, err)
}

// CreateColumnFamily of an existing name and DropColumnFamily of the
// default family return errors wrapping ErrInvalidArgument.
func TestColumnFamilyCreateExistingDropDefault(t *testing.T) {
	d := openCF(t, vfs.NewMem(), nil)
	defer d.Close()
	a := createCF(t, d, "a", nil)
	for _, name := range []string{"a", "default"} {
		_, err := d.CreateColumnFamily(name, nil)
		require.ErrorIs(t, err, db.ErrInvalidArgument, name)
	}
	require.ErrorIs(t, d.DropColumnFamily(d.DefaultColumnFamily()), db.ErrInvalidArgument)
	require.Same(t, a, d.ColumnFamily("a"))
	require.Nil(t, d.ColumnFamily("nope"))
	require.Equal(t, []string{"default", "a"}, familyNames(d))
}

// callsThrough calls every method of cf and returns their errors by name.
func callsThrough(d *db.DB, cf *db.ColumnFamily) map[string]error {
	errs := map[string]error{}
	errs["Put"] = cf.Put([]byte("k"), []byte("v"), nil)
	errs["Delete"] = cf.Delete([]byte("k"), nil)
	errs["DeleteRange"] = cf.DeleteRange([]byte("a"), []byte("b"), nil)
	errs["SingleDelete"] = cf.SingleDelete([]byte("k"), nil)
	errs["Merge"] = cf.Merge([]byte("k"), u64(1), nil)
	_, errs["Get"] = cf.Get([]byte("k"), nil)
	_, mg := cf.MultiGet([][]byte{[]byte("k"), []byte("l")}, nil)
	if len(mg) != 2 {
		errs["MultiGet"] = fmt.Errorf("MultiGet returned %d errors for 2 keys", len(mg))
	} else {
		errs["MultiGet[0]"], errs["MultiGet[1]"] = mg[0], mg[1]
	}
	it := cf.NewIterator(nil)
	it.SeekToFirst()
	if it.Valid() {
		errs["NewIterator"] = fmt.Errorf("iterator is valid")
	} else {
		errs["NewIterator"] = it.Err()
	}
	_ = it.Close()
	errs["Flush"] = cf.Flush()
	errs["CompactRange"] = cf.CompactRange(nil, nil)
	errs["SetOptions"] = cf.SetOptions(map[string]string{"write_buffer_size": "1048576"})
	errs["Ingest"] = cf.Ingest([]string{"/no/such.sst"}, nil)
	_, errs["ApproximateSize"] = cf.ApproximateSize([]byte("a"), []byte("z"), nil)
	errs["DropColumnFamily"] = d.DropColumnFamily(cf)
	b := db.NewBatch()
	b.PutCF(cf, []byte("k"), []byte("v"))
	errs["Write"] = d.Write(b, nil)
	return errs
}

// Any call through the handle of a dropped family returns an error
// wrapping ErrInvalidArgument; Name and ID keep working; on a closed
// database ErrClosed wins.
func TestColumnFamilyDroppedHandle(t *testing.T) {
	d := openCF(t, vfs.NewMem(), nil)
	a := createCF(t, d, "a", &db.ColumnFamilyOptions{MergeOperator: db.NewUInt64AddOperator()})
	require.NoError(t, a.Put([]byte("k"), []byte("v"), nil))
	require.NoError(t, d.DropColumnFamily(a))
	require.Equal(t, "a", a.Name())
	require.Equal(t, uint32(1), a.ID())
	require.Nil(t, d.ColumnFamily("a"))

	for name, err := range callsThrough(d, a) {
		require.ErrorIs(t, err, db.ErrInvalidArgument, name)
	}
	_, ok := a.GetProperty(db.PropNumFilesAtLevelPrefix + "0")
	require.False(t, ok)
	_, ok = a.GetProperty(db.PropPrefixExtractor)
	require.False(t, ok)

	// A name can be created again after its drop: a new family, new id.
	a2 := createCF(t, d, "a", nil)
	require.Equal(t, uint32(2), a2.ID())
	requireMissing(t, a2, "k")
	require.ErrorIs(t, a.Put([]byte("k"), []byte("v"), nil), db.ErrInvalidArgument)

	require.NoError(t, d.Close())
	for name, err := range callsThrough(d, a) {
		require.ErrorIs(t, err, db.ErrClosed, name)
	}
	for name, err := range callsThrough(d, a2) {
		require.ErrorIs(t, err, db.ErrClosed, name)
	}
	require.Equal(t, "a", a.Name())
	require.Equal(t, uint32(1), a.ID())
}

// A Write whose batch names a dropped family fails with ErrInvalidArgument
// and applies nothing of the batch.
func TestColumnFamilyWriteNamingDroppedApplyNothing(t *testing.T) {
	d := openCF(t, vfs.NewMem(), nil)
	defer d.Close()
	a := createCF(t, d, "a", nil)
	b := createCF(t, d, "b", nil)
	require.NoError(t, d.DropColumnFamily(b))

	batch := db.NewBatch()
	batch.PutCF(a, []byte("ka"), []byte("1"))
	batch.Put([]byte("kdef"), []byte("2"))
	batch.PutCF(b, []byte("kb"), []byte("3"))
	batch.DeleteCF(a, []byte("old"))
	require.NoError(t, a.Put([]byte("old"), []byte("x"), nil))
	err := d.Write(batch, &db.WriteOptions{Sync: true})
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	requireMissing(t, a, "ka")
	requireMissing(t, d.DefaultColumnFamily(), "kdef")
	requireGet(t, a, "old", "x")

	// The writes after it go on.
	require.NoError(t, a.Put([]byte("ka"), []byte("after"), nil))
	requireGet(t, a, "ka", "after")
}

// Iterators opened before the drop keep reading; the dropped family's
// files are deleted once nothing reads them.
func TestColumnFamilyDropIteratorAndFiles(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, &db.Options{DisableAutoCompactions: true})
	defer func() { require.NoError(t, d.Close()) }()
	a := createCF(t, d, "a", nil)
	before := listFiles(t, fs, ".sst")
	var want []string
	for i := range 20 {
		k := fmt.Sprintf("k%02d", i)
		want = append(want, k)
		require.NoError(t, a.Put([]byte(k), []byte("v"+k), nil))
		if i == 9 {
			require.NoError(t, a.Flush())
		}
	}
	aFiles := listFiles(t, fs, ".sst")
	require.Len(t, aFiles, len(before)+1)
	it := a.NewIterator(nil)
	require.NoError(t, d.DropColumnFamily(a))

	// The default family's flush deletes what is obsolete; a's table is
	// not yet.
	require.NoError(t, d.Put([]byte("x"), []byte("y"), nil))
	require.NoError(t, d.Flush())
	for _, f := range aFiles {
		require.Contains(t, listFiles(t, fs, ".sst"), f)
	}
	var got []string
	for it.SeekToFirst(); it.Valid(); it.Next() {
		got = append(got, string(it.Key()))
		require.Equal(t, "v"+string(it.Key()), string(it.Value()))
	}
	require.NoError(t, it.Err())
	require.Equal(t, want, got)
	require.NoError(t, it.Close())

	require.NoError(t, d.Put([]byte("x2"), []byte("y"), nil))
	require.NoError(t, d.Flush())
	left := listFiles(t, fs, ".sst")
	for _, f := range aFiles {
		if !slices.Contains(before, f) {
			require.NotContains(t, left, f, "dropped family's table")
		}
	}
}

// The files of a family dropped while an iterator read it go at the latest
// when the database reopens.
func TestColumnFamilyDropFilesGoneAfterReopen(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, nil)
	a := createCF(t, d, "a", nil)
	require.NoError(t, a.Put([]byte("k"), []byte("v"), nil))
	require.NoError(t, a.Flush())
	files := listFiles(t, fs, ".sst")
	require.Len(t, files, 1)
	it := a.NewIterator(nil)
	require.NoError(t, d.DropColumnFamily(a))
	require.Equal(t, files, listFiles(t, fs, ".sst"))
	it.SeekToFirst()
	require.True(t, it.Valid())
	require.NoError(t, it.Close())
	require.NoError(t, d.Close())
	d = openCF(t, fs, nil)
	defer d.Close()
	require.Empty(t, listFiles(t, fs, ".sst"))
	require.Equal(t, []string{"default"}, familyNames(d))
}

// Ids are never reused: not after a drop, not across a reopen, not when
// the dropped family had the largest id.
func TestColumnFamilyIDsNeverReused(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, nil)
	require.Equal(t, uint32(1), createCF(t, d, "a", nil).ID())
	b := createCF(t, d, "b", nil)
	require.Equal(t, uint32(2), b.ID())
	require.NoError(t, d.DropColumnFamily(b))
	c := createCF(t, d, "c", nil)
	require.Equal(t, uint32(3), c.ID())
	require.NoError(t, d.DropColumnFamily(c))
	require.NoError(t, d.Close())

	d = openCF(t, fs, nil)
	require.Equal(t, []string{"default", "a"}, familyNames(d))
	require.Equal(t, uint32(1), d.ColumnFamily("a").ID())
	e := createCF(t, d, "e", nil)
	require.Equal(t, uint32(4), e.ID())
	require.NoError(t, d.DropColumnFamily(e))
	// A crash rather than a Close.
	crashed := fs.CrashClone()
	require.NoError(t, d.Close())

	d = openCF(t, crashed, nil)
	defer d.Close()
	require.Equal(t, uint32(5), createCF(t, d, "f", nil).ID())
}

// Create and drop are durable when they return.
func TestColumnFamilyCreateDropDurable(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, nil)
	defer d.Close()
	a := createCF(t, d, "a", &db.ColumnFamilyOptions{PrefixExtractor: prefix.Fixed(2)})
	require.NoError(t, a.Put([]byte("k"), []byte("v"), &db.WriteOptions{Sync: true}))

	c1 := openCF(t, fs.CrashClone(), nil)
	require.Equal(t, []string{"default", "a"}, familyNames(c1))
	requireGet(t, c1.ColumnFamily("a"), "k", "v")
	require.Equal(t, "rocksdb.FixedPrefix.2", prop(t, c1.ColumnFamily("a"), db.PropPrefixExtractor))
	require.NoError(t, c1.Close())

	require.NoError(t, d.DropColumnFamily(a))
	c2 := openCF(t, fs.CrashClone(), nil)
	require.Equal(t, []string{"default"}, familyNames(c2))
	require.NoError(t, c2.Close())
}

// A Batch over several families is atomic across them, through crashes.
func TestColumnFamilyBatchAtomicThroughCrash(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, nil)
	defer d.Close()
	fams := []*db.ColumnFamily{createCF(t, d, "a", nil), createCF(t, d, "b", nil), d.DefaultColumnFamily()}

	b := db.NewBatch()
	for _, cf := range fams {
		b.PutCF(cf, []byte("synced"), []byte(cf.Name()))
	}
	require.NoError(t, d.Write(b, &db.WriteOptions{Sync: true}))
	b = db.NewBatch()
	for _, cf := range fams {
		b.PutCF(cf, []byte("unsynced"), []byte(cf.Name()))
		b.DeleteCF(cf, []byte("synced"))
	}
	require.NoError(t, d.Write(b, nil))

	c := openCF(t, fs.CrashClone(), nil)
	defer c.Close()
	present := 0
	for _, cf := range fams {
		cc := c.ColumnFamily(cf.Name())
		require.NotNil(t, cc)
		_, err := cc.Get([]byte("unsynced"), nil)
		if err == nil {
			present++
			requireMissing(t, cc, "synced")
		} else {
			require.ErrorIs(t, err, db.ErrNotFound)
			requireGet(t, cc, "synced", cf.Name())
		}
	}
	require.Contains(t, []int{0, len(fams)}, present, "the unsynced batch is applied in part")
}

// A snapshot sees every family at the same sequence number.
func TestColumnFamilySnapshotAcrossFamilies(t *testing.T) {
	d := openCF(t, vfs.NewMem(), nil)
	defer d.Close()
	a := createCF(t, d, "a", nil)
	b := createCF(t, d, "b", nil)
	require.NoError(t, a.Put([]byte("k"), []byte("a1"), nil))
	require.NoError(t, b.Put([]byte("k"), []byte("b1"), nil))
	snap := d.NewSnapshot()
	defer snap.Release()
	require.NoError(t, a.Put([]byte("k"), []byte("a2"), nil))
	require.NoError(t, b.Put([]byte("k"), []byte("b2"), nil))
	require.NoError(t, b.Put([]byte("new"), []byte("b2"), nil))
	require.NoError(t, a.Flush())

	ro := &db.ReadOptions{Snapshot: snap}
	for cf, want := range map[*db.ColumnFamily]string{a: "a1", b: "b1"} {
		v, err := cf.Get([]byte("k"), ro)
		require.NoError(t, err)
		require.Equal(t, want, string(v))
		vs, errs := cf.MultiGet([][]byte{[]byte("k"), []byte("new")}, ro)
		require.NoError(t, errs[0])
		require.Equal(t, want, string(vs[0]))
		require.ErrorIs(t, errs[1], db.ErrNotFound)
		it := cf.NewIterator(ro)
		var got []string
		for it.SeekToFirst(); it.Valid(); it.Next() {
			got = append(got, string(it.Key())+"="+string(it.Value()))
		}
		require.NoError(t, it.Err())
		require.NoError(t, it.Close())
		require.Equal(t, []string{"k=" + want}, got)
	}
	requireGet(t, a, "k", "a2")
	requireGet(t, b, "k", "b2")
}

// Each family has its own options: a merge operator in one only.
func TestColumnFamilyMergeOperatorPerFamily(t *testing.T) {
	d := openCF(t, vfs.NewMem(), nil)
	defer d.Close()
	m := createCF(t, d, "m", &db.ColumnFamilyOptions{MergeOperator: db.NewUInt64AddOperator()})
	require.NoError(t, m.Merge([]byte("n"), u64(3), nil))
	require.NoError(t, m.Merge([]byte("n"), u64(4), nil))
	requireGet(t, m, "n", string(u64(7)))
	require.NoError(t, m.Flush())
	require.NoError(t, m.Merge([]byte("n"), u64(1), nil))
	requireGet(t, m, "n", string(u64(8)))

	require.ErrorIs(t, d.Merge([]byte("n"), u64(1), nil), db.ErrInvalidArgument)
	b := db.NewBatch()
	b.Put([]byte("x"), []byte("y"))
	b.MergeCF(d.DefaultColumnFamily(), []byte("n"), u64(1))
	require.ErrorIs(t, d.Write(b, nil), db.ErrInvalidArgument)
	requireMissing(t, d.DefaultColumnFamily(), "x")
	// MergeCF into the family with the operator works through a batch.
	b = db.NewBatch()
	b.MergeCF(m, []byte("n"), u64(2))
	require.NoError(t, d.Write(b, nil))
	requireGet(t, m, "n", string(u64(10)))
}

// Each family has its own prefix extractor; SetOptions on one leaves the
// others as they were.
func TestColumnFamilyPrefixExtractorPerFamily(t *testing.T) {
	d := openCF(t, vfs.NewMem(), &db.Options{PrefixExtractor: prefix.Fixed(1)})
	defer d.Close()
	a := createCF(t, d, "a", &db.ColumnFamilyOptions{PrefixExtractor: prefix.Fixed(3), BloomBitsPerKey: 10})
	b := createCF(t, d, "b", &db.ColumnFamilyOptions{PrefixExtractor: prefix.Fixed(5)})
	// Zero ColumnFamilyOptions: no extractor, whatever the default
	// family has.
	c := createCF(t, d, "c", &db.ColumnFamilyOptions{})
	def := d.DefaultColumnFamily()
	require.Equal(t, "rocksdb.FixedPrefix.1", prop(t, def, db.PropPrefixExtractor))
	require.Equal(t, "rocksdb.FixedPrefix.3", prop(t, a, db.PropPrefixExtractor))
	require.Equal(t, "rocksdb.FixedPrefix.5", prop(t, b, db.PropPrefixExtractor))
	require.Equal(t, "nullptr", prop(t, c, db.PropPrefixExtractor))

	for _, cf := range []*db.ColumnFamily{def, a, b} {
		for _, k := range []string{"abcde1", "abcde2", "abcxx", "abzzz", "b"} {
			require.NoError(t, cf.Put([]byte(k), []byte("v"), nil))
		}
	}
	require.NoError(t, a.Flush())
	prefixScan := func(cf *db.ColumnFamily, seek string) []string {
		it := cf.NewIterator(&db.ReadOptions{PrefixSameAsStart: true})
		defer it.Close()
		var got []string
		for it.Seek([]byte(seek)); it.Valid(); it.Next() {
			got = append(got, string(it.Key()))
		}
		require.NoError(t, it.Err())
		return got
	}
	require.Equal(t, []string{"abcde1", "abcde2", "abcxx", "abzzz"}, prefixScan(def, "abcde1"))
	require.Equal(t, []string{"abcde1", "abcde2", "abcxx"}, prefixScan(a, "abcde1"))
	require.Equal(t, []string{"abcde1", "abcde2"}, prefixScan(b, "abcde1"))

	require.NoError(t, a.SetOptions(map[string]string{"prefix_extractor": "fixed:2"}))
	require.Equal(t, "rocksdb.FixedPrefix.2", prop(t, a, db.PropPrefixExtractor))
	require.Equal(t, "rocksdb.FixedPrefix.5", prop(t, b, db.PropPrefixExtractor))
	require.Equal(t, "rocksdb.FixedPrefix.1", prop(t, def, db.PropPrefixExtractor))
	require.Equal(t, "nullptr", prop(t, c, db.PropPrefixExtractor))
	require.Equal(t, []string{"abcde1", "abcde2", "abcxx", "abzzz"}, prefixScan(a, "abcde1"))
	require.Equal(t, []string{"abcde1", "abcde2"}, prefixScan(b, "abcde1"))

	// A bad value changes nothing anywhere.
	require.ErrorIs(t, b.SetOptions(map[string]string{"prefix_extractor": "fixed:3", "write_buffer_size": "x"}), db.ErrInvalidArgument)
	require.Equal(t, "rocksdb.FixedPrefix.5", prop(t, b, db.PropPrefixExtractor))
	require.NoError(t, def.SetOptions(map[string]string{"prefix_extractor": "nullptr"}))
	require.Equal(t, "nullptr", prop(t, def, db.PropPrefixExtractor))
	require.Equal(t, "rocksdb.FixedPrefix.2", prop(t, a, db.PropPrefixExtractor))
}

// DB-wide options go through DB.SetOptions (or the default family's
// handle) only.
func TestColumnFamilySetOptionsDBWide(t *testing.T) {
	d := openCF(t, vfs.NewMem(), nil)
	defer d.Close()
	a := createCF(t, d, "a", nil)
	require.NoError(t, d.SetOptions(map[string]string{"max_background_jobs": "3"}))
	require.NoError(t, d.DefaultColumnFamily().SetOptions(map[string]string{"max_background_jobs": "2"}))
	err := a.SetOptions(map[string]string{"max_background_jobs": "4"})
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.Contains(t, err.Error(), "max_background_jobs")
	require.NoError(t, a.SetOptions(map[string]string{"write_buffer_size": "1048576", "disable_auto_compactions": "true"}))
}

// Flush of one family writes one table, of that family only.
func TestColumnFamilyFlushOneFamily(t *testing.T) {
	var mu sync.Mutex
	var flushed []string
	listener := &db.EventListener{FlushEnd: func(fi db.FlushInfo) {
		mu.Lock()
		defer mu.Unlock()
		if len(fi.Output) > 0 {
			flushed = append(flushed, fi.ColumnFamilyName)
		}
	}}
	d := openCF(t, vfs.NewMem(), &db.Options{EventListener: listener, DisableAutoCompactions: true})
	a := createCF(t, d, "a", nil)
	b := createCF(t, d, "b", nil)
	for _, cf := range d.ColumnFamilies() {
		require.NoError(t, cf.Put([]byte("k"), []byte(cf.Name()), nil))
	}
	l0 := db.PropNumFilesAtLevelPrefix + "0"
	require.NoError(t, a.Flush())
	require.Equal(t, "1", prop(t, a, l0))
	require.Equal(t, "0", prop(t, b, l0))
	require.Equal(t, "0", prop(t, d.DefaultColumnFamily(), l0))
	v, ok := d.GetProperty(l0)
	require.True(t, ok)
	require.Equal(t, "0", v)
	require.NoError(t, b.Flush())
	require.NoError(t, b.Put([]byte("k2"), []byte("v"), nil))
	require.NoError(t, b.Flush())
	require.Equal(t, "1", prop(t, a, l0))
	require.Equal(t, "2", prop(t, b, l0))

	m := d.Metrics()
	var names []string
	for _, f := range m.Families {
		names = append(names, f.Name)
		switch f.Name {
		case "a":
			require.Equal(t, a.ID(), f.ID)
			require.Equal(t, 1, f.Files[0])
			require.Equal(t, uint64(1), f.Flush.Count)
		case "b":
			require.Equal(t, 2, f.Files[0])
		case "default":
			require.Equal(t, 0, f.Files[0])
		}
	}
	require.Equal(t, []string{"default", "a", "b"}, names)
	require.NoError(t, d.DropColumnFamily(b))
	require.Len(t, d.Metrics().Families, 2)

	// Close delivers every queued event.
	require.NoError(t, d.Close())
	mu.Lock()
	got := append([]string(nil), flushed...)
	mu.Unlock()
	// Close flushes the default family's write.
	require.Equal(t, []string{"a", "b", "b", "default"}, got)
}

// A family with few writes does not keep every WAL since its last write
// alive; its write survives.
func TestColumnFamilyWALsNotPinnedByQuietFamily(t *testing.T) {
	fs := vfs.NewMem()
	o := &db.Options{WriteBufferSize: 64 << 10, MaxTotalWALSize: 256 << 10, DisableAutoCompactions: true}
	d := openCF(t, fs, o)
	busy := createCF(t, d, "busy", nil)
	quiet := createCF(t, d, "quiet", nil)
	require.NoError(t, quiet.Put([]byte("q"), []byte("quiet"), nil))
	value := make([]byte, 1000)
	maxLogs := 0
	for i := range 4000 {
		require.NoError(t, busy.Put(fmt.Appendf(nil, "k%05d", i), value, nil))
		if i%100 == 0 {
			maxLogs = max(maxLogs, len(listFiles(t, fs, ".log")))
		}
	}
	require.NoError(t, busy.Put([]byte("last"), []byte("x"), &db.WriteOptions{Sync: true}))
	logs := listFiles(t, fs, ".log")
	require.LessOrEqual(t, len(logs), 4, "live WALs: %v", logs)
	require.LessOrEqual(t, maxLogs, 6)

	c := openCF(t, fs.CrashClone(), nil)
	requireGet(t, c.ColumnFamily("quiet"), "q", "quiet")
	requireGet(t, c.ColumnFamily("busy"), "last", "x")
	require.NoError(t, c.Close())

	require.NoError(t, d.Close())
	d = openCF(t, fs, o)
	defer d.Close()
	requireGet(t, d.ColumnFamily("quiet"), "q", "quiet")
	requireGet(t, d.ColumnFamily("busy"), "k03999", string(value))
}

// A checkpoint holds every family.
func TestColumnFamilyCheckpoint(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, nil)
	defer d.Close()
	a := createCF(t, d, "a", &db.ColumnFamilyOptions{MergeOperator: db.NewUInt64AddOperator()})
	b := createCF(t, d, "b", nil)
	dropped := createCF(t, d, "dropped", nil)
	require.NoError(t, a.Merge([]byte("n"), u64(1), nil))
	require.NoError(t, a.Flush())
	require.NoError(t, a.Merge([]byte("n"), u64(2), nil))
	require.NoError(t, b.Put([]byte("kb"), []byte("vb"), nil))
	require.NoError(t, d.Put([]byte("kd"), []byte("vd"), nil))
	require.NoError(t, dropped.Put([]byte("x"), []byte("x"), nil))
	require.NoError(t, d.DropColumnFamily(dropped))
	require.NoError(t, d.Checkpoint("ckpt"))

	c, err := db.Open("ckpt", &db.Options{FS: fs})
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, []string{"default", "a", "b"}, familyNames(c))
	requireGet(t, c.ColumnFamily("a"), "n", string(u64(3)))
	requireGet(t, c.ColumnFamily("b"), "kb", "vb")
	requireGet(t, c.DefaultColumnFamily(), "kd", "vd")
	require.Equal(t, uint32(4), createCF(t, c, "new", nil).ID())
}

// Ingest and ApproximateSize through a family act on that family.
func TestColumnFamilyIngestApproximateSize(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, nil)
	defer d.Close()
	a := createCF(t, d, "a", nil)

	f, err := fs.Create("ext.sst")
	require.NoError(t, err)
	w := table.NewExternalWriter(f, table.ExternalWriterOptions{})
	for i := range 100 {
		require.NoError(t, w.Put(fmt.Appendf(nil, "e%03d", i), make([]byte, 100)))
	}
	_, err = w.Finish()
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())

	require.NoError(t, a.Ingest([]string{"ext.sst"}, nil))
	requireGet(t, a, "e050", string(make([]byte, 100)))
	requireMissing(t, d.DefaultColumnFamily(), "e050")
	sa, err := a.ApproximateSize([]byte("e"), []byte("f"), nil)
	require.NoError(t, err)
	require.Greater(t, sa, uint64(0))
	sd, err := d.ApproximateSize([]byte("e"), []byte("f"), nil)
	require.NoError(t, err)
	require.Equal(t, uint64(0), sd)
}

// A crash while a dropped family's table is still on disk (an iterator
// read it) leaves a table in no version: the next Open must not take it
// for a MANIFEST cut short, and deletes it.
func TestColumnFamilyDropThenCrashWithFilesLeft(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, nil)
	defer d.Close()
	a := createCF(t, d, "a", nil)
	require.NoError(t, a.Put([]byte("k"), []byte("v"), nil))
	require.NoError(t, a.Flush())
	it := a.NewIterator(nil)
	defer it.Close()
	require.NoError(t, d.DropColumnFamily(a))
	crashed := fs.CrashClone()
	require.Len(t, listFiles(t, crashed, ".sst"), 1)

	c, err := tryOpenCF(crashed, nil)
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, []string{"default"}, familyNames(c))
	require.Empty(t, listFiles(t, crashed, ".sst"))
}

// A crash during a flush leaves a table that no version names. With a
// family that never had a write (here the default one), the MANIFEST's
// oldest live WAL is one long deleted: Open must still not take the
// leftover for a MANIFEST cut short.
func TestColumnFamilyCrashDuringFlushWithIdleFamily(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, nil)
	defer d.Close()
	a := createCF(t, d, "a", nil)
	for i := range 3 {
		require.NoError(t, a.Put(fmt.Appendf(nil, "k%d", i), []byte("v"), nil))
		require.NoError(t, a.Flush())
	}
	require.NoError(t, a.Put([]byte("last"), []byte("v"), &db.WriteOptions{Sync: true}))
	crashed := fs.CrashClone()
	// What a flush cut by the crash leaves: a table file past every
	// number in use, in no version.
	writeFile(t, crashed, filepath.Join(cfDir, "000999.sst"), "partial table")

	c, err := tryOpenCF(crashed, nil)
	require.NoError(t, err)
	defer c.Close()
	requireGet(t, c.ColumnFamily("a"), "k0", "v")
	requireGet(t, c.ColumnFamily("a"), "last", "v")
}

// Every write method acts on its own family only, directly and through a
// Batch; CompactRange of one family leaves the others' tables alone.
func TestColumnFamilyWritesStayInTheirFamily(t *testing.T) {
	d := openCF(t, vfs.NewMem(), &db.Options{DisableAutoCompactions: true})
	defer d.Close()
	a := createCF(t, d, "a", nil)
	def := d.DefaultColumnFamily()
	keys := []string{"d1", "r1", "r2", "s1", "bd", "br", "bs"}
	for _, cf := range []*db.ColumnFamily{def, a} {
		for _, k := range keys {
			require.NoError(t, cf.Put([]byte(k), []byte(cf.Name()), nil))
		}
	}
	require.NoError(t, a.Delete([]byte("d1"), nil))
	require.NoError(t, a.DeleteRange([]byte("r"), []byte("s"), nil))
	require.NoError(t, a.SingleDelete([]byte("s1"), nil))
	b := db.NewBatch()
	b.DeleteCF(a, []byte("bd"))
	b.DeleteRangeCF(a, []byte("br"), []byte("bs"))
	b.SingleDeleteCF(a, []byte("bs"))
	require.Equal(t, 3, b.Count())
	require.NoError(t, d.Write(b, nil))
	for _, k := range keys {
		requireGet(t, def, k, "default")
		requireMissing(t, a, k)
	}

	require.NoError(t, def.Flush())
	require.NoError(t, d.Put([]byte("d2"), []byte("v"), nil))
	require.NoError(t, def.Flush())
	require.NoError(t, a.Put([]byte("x"), []byte("v"), nil))
	require.NoError(t, a.Flush())
	require.NoError(t, a.Put([]byte("y"), []byte("v"), nil))
	require.NoError(t, a.Flush())
	l0 := db.PropNumFilesAtLevelPrefix + "0"
	require.Equal(t, "2", prop(t, a, l0))
	require.NoError(t, a.CompactRange(nil, nil))
	require.Equal(t, "0", prop(t, a, l0))
	require.Equal(t, "2", prop(t, def, l0))
	requireGet(t, a, "x", "v")
	requireGet(t, def, "d2", "v")
}

// A family named in Options.ColumnFamilies gets those options, over what
// its OPTIONS section records.
func TestColumnFamilyOpenNamedOptionsWin(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, nil)
	createCF(t, d, "p", &db.ColumnFamilyOptions{PrefixExtractor: prefix.Fixed(3)})
	createCF(t, d, "q", &db.ColumnFamilyOptions{PrefixExtractor: prefix.Fixed(4)})
	require.NoError(t, d.Close())

	d = openCF(t, fs, &db.Options{ColumnFamilies: map[string]*db.ColumnFamilyOptions{
		"p": {PrefixExtractor: prefix.Capped(2)}}})
	require.Equal(t, "rocksdb.CappedPrefix.2", prop(t, d.ColumnFamily("p"), db.PropPrefixExtractor))
	require.Equal(t, "rocksdb.FixedPrefix.4", prop(t, d.ColumnFamily("q"), db.PropPrefixExtractor))
	require.NoError(t, d.Close())
	// The OPTIONS file now records the options p was opened with.
	d = openCF(t, fs, nil)
	defer d.Close()
	require.Equal(t, "rocksdb.CappedPrefix.2", prop(t, d.ColumnFamily("p"), db.PropPrefixExtractor))
}

// A handle of another database is refused.
func TestColumnFamilyHandleOfAnotherDB(t *testing.T) {
	d1 := openCF(t, vfs.NewMem(), nil)
	defer d1.Close()
	d2 := openCF(t, vfs.NewMem(), nil)
	defer d2.Close()
	a := createCF(t, d1, "a", nil)
	createCF(t, d2, "a", nil)
	b := db.NewBatch()
	b.PutCF(a, []byte("k"), []byte("v"))
	require.ErrorIs(t, d2.Write(b, nil), db.ErrInvalidArgument)
	require.ErrorIs(t, d2.DropColumnFamily(a), db.ErrInvalidArgument)
	requireMissing(t, d2.ColumnFamily("a"), "k")
	require.NoError(t, d1.Write(b, nil))
	requireGet(t, a, "k", "v")
}

// Writes to several families, creates and drops may run at the same time
// (run with -race).
func TestColumnFamilyConcurrentCreateDropWrite(t *testing.T) {
	d := openCF(t, vfs.NewMem(), &db.Options{WriteBufferSize: 64 << 10})
	defer d.Close()
	fams := []*db.ColumnFamily{d.DefaultColumnFamily(), createCF(t, d, "a", nil), createCF(t, d, "b", nil)}
	var wg sync.WaitGroup
	errs := make([]error, len(fams)+1)
	for i, cf := range fams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 500 {
				b := db.NewBatch()
				b.PutCF(cf, fmt.Appendf(nil, "k%04d", j), make([]byte, 100))
				b.PutCF(fams[(i+1)%len(fams)], fmt.Appendf(nil, "x%d-%04d", i, j), []byte("v"))
				if err := d.Write(b, nil); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for j := range 20 {
			cf, err := d.CreateColumnFamily(fmt.Sprintf("tmp%d", j), nil)
			if err == nil {
				err = cf.Put([]byte("k"), []byte("v"), nil)
			}
			if err == nil {
				err = d.DropColumnFamily(cf)
			}
			if err != nil {
				errs[len(fams)] = err
				return
			}
		}
	}()
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	for i, cf := range fams {
		requireGet(t, cf, "k0499", string(make([]byte, 100)))
		requireGet(t, fams[(i+1)%len(fams)], fmt.Sprintf("x%d-0499", i), "v")
	}
	require.Equal(t, []string{"default", "a", "b"}, familyNames(d))
	require.Equal(t, uint32(23), createCF(t, d, "last", nil).ID())
}

// rocksdbTool runs RocksDB's tool name (ldb, sst_dump, db_bench) and
// returns its stdout, skipping the test when rocksdb-tools is not
// installed (failing under CI, which installs it).
func rocksdbTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found (CI installs it with apt-get install -y rocksdb-tools): %v", name, err)
		}
		t.Skipf("%s (RocksDB 7.8.3 rocksdb-tools) is not installed", name)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(p, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s %v: %s", name, args, stderr.String())
	require.NotContains(t, stdout.String(), "Failed", "%s %v", name, args)
	return stdout.String()
}

// On disk everything is RocksDB's: ldb reads and writes every family of a
// Strata database, creates and drops families in it, and every table
// names its family in its properties.
func TestColumnFamilyRocksDBTools(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	a := createCF(t, d, "a", nil)
	b := createCF(t, d, "b", nil)
	require.NoError(t, a.Put([]byte("ka"), []byte("flushed"), nil))
	require.NoError(t, a.Flush())
	require.NoError(t, a.Put([]byte("kw"), []byte("in-wal"), nil))
	require.NoError(t, b.Put([]byte("kb"), []byte("vb"), nil))
	require.NoError(t, b.Flush())
	require.NoError(t, d.Put([]byte("kd"), []byte("vd"), nil))
	require.NoError(t, d.Close())

	require.Equal(t, "Column families in "+dir+": \n{default, a, b}\n",
		rocksdbTool(t, "ldb", "--db="+dir, "list_column_families"))
	require.Equal(t, "ka : flushed\nkw : in-wal\n", rocksdbTool(t, "ldb", "--db="+dir, "--column_family=a", "scan"))
	require.Equal(t, "vb\n", rocksdbTool(t, "ldb", "--db="+dir, "--column_family=b", "get", "kb"))
	props := rocksdbTool(t, "sst_dump", "--file="+dir, "--show_properties")
	require.Contains(t, props, "column family name: a")
	require.Contains(t, props, "column family name: b")
	require.Contains(t, props, "column family ID: 2")

	rocksdbTool(t, "ldb", "--db="+dir, "--column_family=b", "put", "kb2", "from-ldb")
	rocksdbTool(t, "ldb", "--db="+dir, "create_column_family", "c")
	rocksdbTool(t, "ldb", "--db="+dir, "--column_family=c", "put", "kc", "vc")
	rocksdbTool(t, "ldb", "--db="+dir, "drop_column_family", "a")

	names, err := db.ListColumnFamilies(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"default", "b", "c"}, names)
	d, err = db.Open(dir, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"default", "b", "c"}, familyNames(d))
	requireGet(t, d.ColumnFamily("b"), "kb", "vb")
	requireGet(t, d.ColumnFamily("b"), "kb2", "from-ldb")
	requireGet(t, d.ColumnFamily("c"), "kc", "vc")
	require.Equal(t, uint32(3), d.ColumnFamily("c").ID())
	requireGet(t, d.DefaultColumnFamily(), "kd", "vd")
	require.Equal(t, uint32(4), createCF(t, d, "e", nil).ID())
	require.NoError(t, d.Close())
	require.Equal(t, "Column families in "+dir+": \n{default, b, c, e}\n",
		rocksdbTool(t, "ldb", "--db="+dir, "list_column_families"))
}

// Strata opens a database db_bench made with several column families.
func TestColumnFamilyOpenDBBench(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bench")
	rocksdbTool(t, "db_bench", "-benchmarks=fillseq", "-num=300", "-num_column_families=3",
		"-db="+dir, "-compression_type=none", "-value_size=20")
	d, err := db.Open(dir, nil)
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, []string{"default", "column_family_name_000001", "column_family_name_000002"}, familyNames(d))
	total := 0
	for _, cf := range d.ColumnFamilies() {
		it := cf.NewIterator(nil)
		for it.SeekToFirst(); it.Valid(); it.Next() {
			require.Len(t, it.Value(), 20)
			total++
		}
		require.NoError(t, it.Err())
		require.NoError(t, it.Close())
	}
	require.Equal(t, 300, total)
}

// The OPTIONS file has one section per live family, the default first,
// then by id; a dropped family's goes.
func TestColumnFamilyOptionsFileSections(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, nil)
	defer d.Close()
	createCF(t, d, "zz", nil)
	mid := createCF(t, d, "mid", nil)
	createCF(t, d, "aa", nil)
	require.NoError(t, d.DropColumnFamily(mid))
	text := readFile(t, fs, latestOptionsFile(t, fs))
	var titles []string
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "[CFOptions ") {
			titles = append(titles, strings.TrimSpace(line))
		}
	}
	require.Equal(t, []string{`[CFOptions "default"]`, `[CFOptions "zz"]`, `[CFOptions "aa"]`}, titles)
	for _, name := range []string{"default", "zz", "aa"} {
		require.Contains(t, text, `[TableOptions/BlockBasedTable "`+name+`"]`)
	}
	require.NotContains(t, text, `"mid"`)
}

// Refresh moves an iterator to the current state of its own family; after
// a drop it reports the drop.
func TestColumnFamilyIteratorRefresh(t *testing.T) {
	d := openCF(t, vfs.NewMem(), nil)
	defer d.Close()
	a := createCF(t, d, "a", nil)
	require.NoError(t, a.Put([]byte("k1"), []byte("v"), nil))
	require.NoError(t, d.Put([]byte("other"), []byte("default"), nil))
	it := a.NewIterator(nil)
	defer it.Close()
	require.NoError(t, a.Put([]byte("k2"), []byte("v"), nil))
	require.NoError(t, it.Refresh())
	var keys []string
	for it.SeekToFirst(); it.Valid(); it.Next() {
		keys = append(keys, string(it.Key()))
	}
	require.NoError(t, it.Err())
	require.Equal(t, []string{"k1", "k2"}, keys)

	require.NoError(t, d.DropColumnFamily(a))
	it.SeekToFirst()
	require.True(t, it.Valid(), "an iterator opened before the drop keeps reading")
	require.ErrorIs(t, it.Refresh(), db.ErrInvalidArgument)
	require.False(t, it.Valid())
	require.ErrorIs(t, it.Err(), db.ErrInvalidArgument)
}

// ColumnFamilyOptions fields have the types of the Options fields of the
// same name, and include those API.md lists.
func TestColumnFamilyOptionsFields(t *testing.T) {
	cfo := reflect.TypeFor[db.ColumnFamilyOptions]()
	o := reflect.TypeFor[db.Options]()
	for f := range cfo.Fields() {
		of, ok := o.FieldByName(f.Name)
		require.True(t, ok, "Options has no field %s", f.Name)
		require.Equal(t, of.Type, f.Type, "field %s", f.Name)
	}
	for _, name := range []string{"WriteBufferSize", "BloomBitsPerKey", "PrefixExtractor", "Compression",
		"CompactionStyle", "FIFOMaxTableFilesSize", "DisableAutoCompactions", "MergeOperator", "BlockSize",
		"TargetFileSizeBase", "MaxBytesForLevelBase", "Level0FileNumCompactionTrigger",
		"Level0SlowdownWritesTrigger", "Level0StopWritesTrigger"} {
		_, ok := cfo.FieldByName(name)
		require.True(t, ok, "ColumnFamilyOptions has no field %s", name)
	}
	for _, name := range []string{"ColumnFamilies", "CreateMissingColumnFamilies"} {
		_, ok := o.FieldByName(name)
		require.True(t, ok, "Options has no field %s", name)
	}
}

// Bad family options are refused before anything changes.
func TestColumnFamilyBadOptions(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, nil)
	_, err := d.CreateColumnFamily("small", &db.ColumnFamilyOptions{WriteBufferSize: 10})
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.Contains(t, err.Error(), "small")
	_, err = d.CreateColumnFamily("", nil)
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.Equal(t, []string{"default"}, familyNames(d))
	require.NoError(t, d.Close())

	_, err = tryOpenCF(fs, &db.Options{CreateMissingColumnFamilies: true,
		ColumnFamilies: map[string]*db.ColumnFamilyOptions{"small": {WriteBufferSize: 10}}})
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.Contains(t, err.Error(), "small")
	d = openCF(t, fs, nil)
	defer d.Close()
	require.Equal(t, []string{"default"}, familyNames(d))
}

// walBytes sums the sizes of the live WALs in cfDir (one deleted after the
// listing counts nothing).
func walBytes(t *testing.T, fs vfs.FS) int64 {
	t.Helper()
	var n int64
	for _, name := range listFiles(t, fs, ".log") {
		fi, err := fs.Stat(filepath.Join(cfDir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		require.NoError(t, err)
		n += fi.Size()
	}
	return n
}

// MaxTotalWALSize left zero is RocksDB's default, four times the write
// buffers of all families: a quiet family lets the WALs grow to about that
// and no further.
func TestColumnFamilyMaxTotalWALSizeDefault(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, &db.Options{WriteBufferSize: 64 << 10, DisableAutoCompactions: true})
	defer d.Close()
	small := &db.ColumnFamilyOptions{WriteBufferSize: 64 << 10}
	busy := createCF(t, d, "busy", small)
	quiet := createCF(t, d, "quiet", small)
	// Three families, two memtables of 64 KiB each.
	const limit = 4 * 3 * 2 * 64 << 10
	require.NoError(t, quiet.Put([]byte("q"), []byte("quiet"), nil))
	value := make([]byte, 1000)
	peak := int64(0)
	for i := range 4 * limit / 1000 {
		require.NoError(t, busy.Put(fmt.Appendf(nil, "k%06d", i), value, nil))
		if i%50 == 0 {
			peak = max(peak, walBytes(t, fs))
		}
	}
	// Past the limit the quiet family flushes; the WALs may reach it, plus
	// the WAL being written and one memtable not yet flushed.
	require.Greater(t, peak, int64(limit*7/8), "the WALs never grew near the default limit")
	require.Less(t, peak, int64(limit+3*64<<10), "the WALs grew past the default limit")
	requireGet(t, quiet, "q", "quiet")
	require.Equal(t, "1", prop(t, quiet, db.PropNumFilesAtLevelPrefix+"0"))
}

// A prefix extractor that cannot be built from its recorded name is an
// error wrapping ErrInvalidArgument that names the family; naming the
// family in Options.ColumnFamilies opens it.
func TestColumnFamilyOpenUnknownPrefixExtractor(t *testing.T) {
	fs := vfs.NewMem()
	d := openCF(t, fs, nil)
	createCF(t, d, "users", &db.ColumnFamilyOptions{PrefixExtractor: prefix.Fixed(3)})
	require.NoError(t, d.Close())

	name := latestOptionsFile(t, fs)
	text := readFile(t, fs, name)
	i := strings.Index(text, `[CFOptions "users"]`)
	require.GreaterOrEqual(t, i, 0, "OPTIONS file:\n%s", text)
	const recorded = "prefix_extractor=rocksdb.FixedPrefix.3\n"
	j := strings.Index(text[i:], recorded)
	require.GreaterOrEqual(t, j, 0, "section:\n%s", text[i:])
	writeFile(t, fs, name, text[:i+j]+"prefix_extractor=my.OwnPrefixExtractor\n"+text[i+j+len(recorded):])

	for _, ro := range []bool{false, true} {
		_, err := tryOpenCF(fs, &db.Options{ReadOnly: ro})
		require.ErrorIs(t, err, db.ErrInvalidArgument, "ReadOnly=%v", ro)
		require.ErrorContains(t, err, `"users"`)
		require.ErrorContains(t, err, "my.OwnPrefixExtractor")
	}
	d = openCF(t, fs, &db.Options{ColumnFamilies: map[string]*db.ColumnFamilyOptions{
		"users": {PrefixExtractor: prefix.Capped(2)}}})
	defer d.Close()
	require.Equal(t, "rocksdb.CappedPrefix.2", prop(t, d.ColumnFamily("users"), db.PropPrefixExtractor))
}
