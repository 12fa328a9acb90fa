package db_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

// cfKeys returns the keys of cf in iteration order.
func cfKeys(t *testing.T, it *db.Iterator) []string {
	t.Helper()
	var keys []string
	for it.SeekToFirst(); it.Valid(); it.Next() {
		keys = append(keys, string(it.Key()))
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return keys
}

// tableComparators returns the rocksdb.comparator property of every table
// in dir.
func tableComparators(t *testing.T, dir string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, p := range filesMatching(t, dir, "*.sst") {
		f, err := os.Open(p)
		require.NoError(t, err)
		st, err := f.Stat()
		require.NoError(t, err)
		// Only the properties are read: any order will do.
		r, err := table.Open(f, st.Size(), table.ReaderOptions{FileName: p, Comparer: base.DefaultComparer})
		require.NoError(t, err)
		names[r.Properties().ComparatorName] = true
		require.NoError(t, r.Close())
	}
	return names
}

// TestComparerFamilies: two families with different comparers in one
// database (the default reverse bytewise, another a user comparer) order
// their keys each its own way, through flushes and a reopen; the MANIFEST,
// the OPTIONS file and the tables record each family's name; reopening
// with another comparer (or none, for a user comparer the OPTIONS file
// cannot rebuild) fails with ErrInvalidArgument naming both.
func TestComparerFamilies(t *testing.T) {
	dir := t.TempDir()
	opts := db.Options{CreateIfMissing: true, CreateMissingColumnFamilies: true,
		Comparer:       db.ReverseBytewiseComparer(),
		ColumnFamilies: map[string]*db.ColumnFamilyOptions{"num": {Comparer: lengthFirstComparer{}}}}
	d, err := db.Open(dir, &opts)
	require.NoError(t, err)
	num := d.ColumnFamily("num")
	require.NotNil(t, num)
	keys := []string{"9", "10", "100", "2", "11", "1"}
	for _, k := range keys {
		require.NoError(t, d.Put([]byte(k), []byte("d"+k), nil))
		require.NoError(t, num.Put([]byte(k), []byte("n"+k), nil))
	}
	// A family created later, with the default (bytewise) comparer.
	plain, err := d.CreateColumnFamily("plain", nil)
	require.NoError(t, err)
	for _, k := range keys {
		require.NoError(t, plain.Put([]byte(k), nil, nil))
	}
	wantRev := []string{"9", "2", "11", "100", "10", "1"}
	wantNum := []string{"1", "2", "9", "10", "11", "100"}
	wantPlain := []string{"1", "10", "100", "11", "2", "9"}
	check := func(d *db.DB) {
		t.Helper()
		require.Equal(t, wantRev, cfKeys(t, d.NewIterator(nil)))
		require.Equal(t, wantNum, cfKeys(t, d.ColumnFamily("num").NewIterator(nil)))
		require.Equal(t, wantPlain, cfKeys(t, d.ColumnFamily("plain").NewIterator(nil)))
		v, err := d.ColumnFamily("num").Get([]byte("100"), nil)
		require.NoError(t, err)
		require.Equal(t, "n100", string(v))
		// Bounds are in the family's order.
		it := d.ColumnFamily("num").NewIterator(&db.ReadOptions{LowerBound: []byte("3"), UpperBound: []byte("11")})
		require.Equal(t, []string{"9", "10"}, cfKeys(t, it))
		it = d.NewIterator(&db.ReadOptions{LowerBound: []byte("2"), UpperBound: []byte("10")})
		require.Equal(t, []string{"2", "11", "100"}, cfKeys(t, it))
	}
	check(d)
	// In memtables ApproximateSize walks the entries: exact.
	memOnly := &db.ApproximateSizeOptions{IncludeMemtables: true, ExcludeFiles: true}
	mem, err := d.ApproximateSize(nil, []byte("1"), memOnly)
	require.NoError(t, err)
	require.Positive(t, mem)
	memAll, err := d.ApproximateSize(nil, nil, memOnly)
	require.NoError(t, err)
	require.Greater(t, memAll, mem, "the range excludes key 1")
	for _, cf := range d.ColumnFamilies() {
		require.NoError(t, cf.Flush())
	}
	check(d)
	// ApproximateSize in the family's order: nil start is its first key
	// (under the reverse order the empty key is the last). On disk the
	// estimate has data-block granularity: a whole table for a range
	// holding all of it.
	all, err := d.ApproximateSize(nil, []byte("0"), nil)
	require.NoError(t, err)
	require.Positive(t, all)
	_, err = d.ApproximateSize([]byte("1"), []byte("9"), nil) // "1" sorts after "9"
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.NoError(t, d.Close())

	// Formats: OPTIONS, MANIFEST and table properties name each family's.
	optFiles := filesMatching(t, dir, "OPTIONS-*")
	data, err := os.ReadFile(optFiles[len(optFiles)-1])
	require.NoError(t, err)
	sections := strings.Split(string(data), "[CFOptions ")
	found := map[string]string{}
	for _, s := range sections[1:] {
		name := s[1 : strings.Index(s[1:], `"`)+1]
		for _, line := range strings.Split(s, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "comparator="); ok {
				found[name] = v
			}
		}
	}
	require.Equal(t, map[string]string{"default": "rocksdb.ReverseBytewiseComparator",
		"num": "strata.test.LengthFirst", "plain": "leveldb.BytewiseComparator"}, found)
	manifests := filesMatching(t, dir, "MANIFEST-*")
	recorded := map[uint32]string{}
	cp := filepath.Join(t.TempDir(), "m")
	copyDir(t, dir, cp)
	rewriteManifest(t, filepath.Join(cp, filepath.Base(manifests[len(manifests)-1])), func(e *version.Edit) {
		if e.HasComparator {
			recorded[e.ColumnFamily] = e.ComparatorName
		}
	})
	require.Equal(t, map[uint32]string{0: "rocksdb.ReverseBytewiseComparator", 1: "strata.test.LengthFirst",
		2: "leveldb.BytewiseComparator"}, recorded)
	require.Equal(t, map[string]bool{"rocksdb.ReverseBytewiseComparator": true, "strata.test.LengthFirst": true,
		"leveldb.BytewiseComparator": true}, tableComparators(t, dir))

	// ListColumnFamilies needs no comparer.
	names, err := db.ListColumnFamilies(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"default", "num", "plain"}, names)

	// Reopen as written: the same orders. A checkpoint (a new MANIFEST
	// written from the families' state) keeps each family's comparator.
	opts.CreateMissingColumnFamilies = false
	d, err = db.Open(dir, &opts)
	require.NoError(t, err)
	check(d)
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	require.NoError(t, d.Checkpoint(ckpt))
	require.NoError(t, d.Close())
	d, err = db.Open(ckpt, &opts)
	require.NoError(t, err)
	check(d)
	require.NoError(t, d.Close())
	_, err = db.Open(ckpt, &db.Options{ColumnFamilies: opts.ColumnFamilies})
	require.ErrorIs(t, err, db.ErrInvalidArgument)

	// Reopen with the wrong comparers.
	for _, tc := range []struct {
		name       string
		opts       db.Options
		contains   []string
		notInError string
	}{
		{"default nil", db.Options{ColumnFamilies: map[string]*db.ColumnFamilyOptions{"num": {Comparer: lengthFirstComparer{}}}},
			[]string{"leveldb.BytewiseComparator: does not match existing comparator rocksdb.ReverseBytewiseComparator"}, ""},
		{"num reverse", db.Options{Comparer: db.ReverseBytewiseComparer(),
			ColumnFamilies: map[string]*db.ColumnFamilyOptions{"num": {Comparer: db.ReverseBytewiseComparer()}}},
			[]string{"rocksdb.ReverseBytewiseComparator: does not match existing comparator strata.test.LengthFirst"}, ""},
		{"num not given", db.Options{Comparer: db.ReverseBytewiseComparer()},
			[]string{`"num"`, "strata.test.LengthFirst", "not built in"}, ""},
		{"plain reverse", db.Options{Comparer: db.ReverseBytewiseComparer(),
			ColumnFamilies: map[string]*db.ColumnFamilyOptions{"num": {Comparer: lengthFirstComparer{}},
				"plain": {Comparer: db.ReverseBytewiseComparer()}}},
			[]string{"rocksdb.ReverseBytewiseComparator: does not match existing comparator leveldb.BytewiseComparator"}, ""},
	} {
		_, err := db.Open(dir, &tc.opts)
		require.ErrorIs(t, err, db.ErrInvalidArgument, tc.name)
		for _, s := range tc.contains {
			require.ErrorContains(t, err, s, tc.name)
		}
	}
	// A bytewise comparer of the user's own, under the built-in name, is
	// accepted: the names match.
	d, err = db.Open(dir, &db.Options{Comparer: db.ReverseBytewiseComparer(),
		ColumnFamilies: map[string]*db.ColumnFamilyOptions{"num": {Comparer: lengthFirstComparer{}},
			"plain": {Comparer: userBytewise{}}}})
	require.NoError(t, err)
	check(d)
	require.NoError(t, d.Close())
}

// userBytewise is a user Comparer under the built-in bytewise name.
type userBytewise struct{}

func (userBytewise) Name() string            { return "leveldb.BytewiseComparator" }
func (userBytewise) Compare(a, b []byte) int { return bytes.Compare(a, b) }

// TestComparerIngestMismatch: a table written with another comparator is
// refused by Ingest with ErrInvalidArgument naming both.
func TestComparerIngestMismatch(t *testing.T) {
	d, _ := openTest(t, &db.Options{Comparer: db.ReverseBytewiseComparer()})
	defer d.Close()
	path := filepath.Join(t.TempDir(), "x.sst")
	f, err := os.Create(path)
	require.NoError(t, err)
	w := table.NewExternalWriter(f, table.ExternalWriterOptions{})
	require.NoError(t, w.Put([]byte("a"), []byte("1")))
	_, err = w.Finish()
	require.NoError(t, err)
	require.NoError(t, f.Close())
	err = d.Ingest([]string{path}, nil)
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.ErrorContains(t, err, "leveldb.BytewiseComparator")
	require.ErrorContains(t, err, "rocksdb.ReverseBytewiseComparator")
}

// TestComparerIndexedBatchAndTransactions: an indexed batch and a
// transaction read in the family's order, and serializable validation of a
// scanned range uses it: a write inside the range scanned (in reverse
// order) conflicts, one outside it does not.
func TestComparerIndexedBatchAndTransactions(t *testing.T) {
	d, _ := openTest(t, &db.Options{Comparer: db.ReverseBytewiseComparer(), MergeOperator: db.NewStringAppendOperator(",")})
	defer d.Close()
	for _, k := range []string{"a", "c", "e", "g"} {
		require.NoError(t, d.Put([]byte(k), []byte(k), nil))
	}
	require.NoError(t, d.Flush())
	b := d.NewIndexedBatch()
	b.Put([]byte("d"), []byte("d"))
	b.Delete([]byte("e"))
	b.Merge([]byte("c"), []byte("m"))
	// [f, d) in reverse order: f down to above d, so e (gone already).
	b.DeleteRange([]byte("f"), []byte("d"))
	require.Equal(t, []string{"g", "d", "c", "a"}, cfKeys(t, b.NewIterator(nil)))
	v, err := b.Get([]byte("c"))
	require.NoError(t, err)
	require.Equal(t, "c,m", string(v))
	it := b.NewIterator(&db.ReadOptions{LowerBound: []byte("f"), UpperBound: []byte("b")})
	require.Equal(t, []string{"d", "c"}, cfKeys(t, it))
	it = b.NewIterator(nil)
	it.SeekForPrev([]byte("cc"))
	require.True(t, it.Valid())
	require.Equal(t, "d", string(it.Key()))
	it.Seek([]byte("cc"))
	require.True(t, it.Valid())
	require.Equal(t, "c", string(it.Key()))
	require.NoError(t, it.Close())
	require.NoError(t, d.Write(b, nil))
	require.Equal(t, []string{"g", "d", "c", "a"}, cfKeys(t, d.NewIterator(nil)))

	scan := func(tx *db.Transaction, lo, hi string) []string {
		return cfKeys(t, tx.NewIterator(&db.ReadOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)}))
	}
	ser := &db.TransactionOptions{Isolation: db.Serializable}
	// A write inside the scanned range [f, b) (f down to above b).
	tx := d.NewTransaction(ser)
	require.NoError(t, tx.Put([]byte("z"), nil))
	require.Equal(t, []string{"d", "c"}, scan(tx, "f", "b"))
	require.NoError(t, d.Put([]byte("e"), []byte("new"), nil))
	require.ErrorIs(t, tx.Commit(), db.ErrConflict)
	// Writes outside it: after b (in reverse order) and before f.
	tx = d.NewTransaction(ser)
	require.NoError(t, tx.Put([]byte("z"), nil))
	require.Equal(t, []string{"e", "d", "c"}, scan(tx, "f", "b"))
	require.NoError(t, d.Put([]byte("b"), nil, nil))
	require.NoError(t, d.Put([]byte("g2"), nil, nil))
	require.NoError(t, tx.Commit())
	// A scan that returned a key includes it: a write to the last key
	// read conflicts (the range's upper end is that key, inclusive).
	tx = d.NewTransaction(ser)
	require.NoError(t, tx.Put([]byte("y"), nil))
	it = tx.NewIterator(nil)
	it.Seek([]byte("e"))
	require.True(t, it.Valid())
	require.Equal(t, "e", string(it.Key()))
	require.NoError(t, it.Close())
	require.NoError(t, d.Put([]byte("e"), []byte("again"), nil))
	require.ErrorIs(t, tx.Commit(), db.ErrConflict)
}

// TestComparerRefreshBoundsAndBlobs: under the reverse order an iterator
// refreshed while positioned backward resumes at its key, SetBounds takes
// bounds in the family's order, and values in blob files read back through
// flushes and compactions.
func TestComparerRefreshBoundsAndBlobs(t *testing.T) {
	d, _ := openTest(t, &db.Options{Comparer: db.ReverseBytewiseComparer(), EnableBlobFiles: true, MinBlobSize: 16})
	defer d.Close()
	big := func(k string) []byte { return bytes.Repeat([]byte(k), 40) }
	for _, k := range []string{"a", "c", "e", "g"} {
		require.NoError(t, d.Put([]byte(k), big(k), nil))
	}
	require.NoError(t, d.Flush())
	it := d.NewIterator(nil)
	it.SeekForPrev([]byte("d"))
	require.True(t, it.Valid())
	require.Equal(t, "e", string(it.Key()))
	require.NoError(t, d.Put([]byte("f"), big("f"), nil))
	require.NoError(t, d.Delete([]byte("g"), nil))
	require.NoError(t, it.Refresh())
	require.True(t, it.Valid())
	require.Equal(t, "e", string(it.Key()))
	require.Equal(t, big("e"), it.Value())
	it.Prev()
	require.True(t, it.Valid())
	require.Equal(t, "f", string(it.Key()), "the write after the iterator was made is seen after Refresh")
	it.Prev()
	require.False(t, it.Valid(), "g was deleted")
	it.SetBounds([]byte("f"), []byte("a")) // f down to above a
	var keys []string
	for it.SeekToFirst(); it.Valid(); it.Next() {
		keys = append(keys, string(it.Key()))
		require.Equal(t, big(string(it.Key())), it.Value())
	}
	require.Equal(t, []string{"f", "e", "c"}, keys)
	require.NoError(t, it.Close())
	require.NoError(t, d.CompactRange(nil, nil))
	require.Equal(t, []string{"f", "e", "c", "a"}, scanKeys(t, d, nil))
	v, err := d.Get([]byte("a"), nil)
	require.NoError(t, err)
	require.Equal(t, big("a"), v)
}

// skipFromE removes key e and skips to b: under the reverse order the keys
// after e are d, c, b, so e, d and c go.
type skipFromE struct{}

func (skipFromE) Name() string { return "test.SkipFromE" }
func (skipFromE) Filter(level int, key, value []byte) (db.FilterDecision, []byte) {
	if string(key) == "e" {
		return db.FilterRemoveAndSkipUntil, []byte("b")
	}
	return db.FilterKeep, nil
}

// TestComparerFilterSkipUntil: FilterRemoveAndSkipUntil skips in the
// family's order.
func TestComparerFilterSkipUntil(t *testing.T) {
	d, _ := openTest(t, &db.Options{Comparer: db.ReverseBytewiseComparer(), CompactionFilter: skipFromE{}})
	defer d.Close()
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		require.NoError(t, d.Put([]byte(k), []byte(k), nil))
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.CompactRange(nil, nil))
	require.Equal(t, []string{"f", "b", "a"}, scanKeys(t, d, nil))
}

type unnamedComparer struct{ userBytewise }

func (unnamedComparer) Name() string { return "" }

// TestComparerNameRequired: a Comparer must have a Name, for Open and for
// CreateColumnFamily.
func TestComparerNameRequired(t *testing.T) {
	_, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true, Comparer: unnamedComparer{}})
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.ErrorContains(t, err, "Comparer")
	d, _ := openTest(t, nil)
	defer d.Close()
	_, err = d.CreateColumnFamily("x", &db.ColumnFamilyOptions{Comparer: unnamedComparer{}})
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.Nil(t, d.ColumnFamily("x"))
}

// TestComparerConcurrentWriters: writers inserting into the memtable
// concurrently (the default) keep the reverse order; run under -race too.
func TestComparerConcurrentWriters(t *testing.T) {
	d, _ := openTest(t, &db.Options{Comparer: db.ReverseBytewiseComparer(), WriteBufferSize: 64 << 10})
	defer d.Close()
	const writers, each = 4, 300
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func(w int) {
			var err error
			for i := 0; i < each && err == nil; i++ {
				err = d.Put([]byte(fmt.Sprintf("%04d-%d", i, w)), []byte("v"), nil)
			}
			errs <- err
		}(w)
	}
	for w := 0; w < writers; w++ {
		require.NoError(t, <-errs)
	}
	keys := scanKeys(t, d, nil)
	require.Len(t, keys, writers*each)
	require.True(t, sort.SliceIsSorted(keys, func(i, j int) bool { return keys[i] > keys[j] }))
	for i := 1; i < len(keys); i++ {
		require.NotEqual(t, keys[i-1], keys[i])
	}
}
