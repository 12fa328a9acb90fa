package db_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/prefix"
	"github.com/stratadb/strata/vfs"
	"github.com/stretchr/testify/require"
)

func openMerge(t *testing.T) *db.DB {
	t.Helper()
	d, _ := openTest(t, &db.Options{MergeOperator: db.NewStringAppendOperator(",")})
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// batchScan reads it forward from the first key, then backward from the
// last, and checks both directions agree.
func batchScan(t *testing.T, it *db.Iterator) []string {
	t.Helper()
	var fwd, back []string
	for it.SeekToFirst(); it.Valid(); it.Next() {
		fwd = append(fwd, string(it.Key())+"="+string(it.Value()))
	}
	require.NoError(t, it.Err())
	for it.SeekToLast(); it.Valid(); it.Prev() {
		back = append([]string{string(it.Key()) + "=" + string(it.Value())}, back...)
	}
	require.NoError(t, it.Err())
	require.Equal(t, fwd, back, "forward and backward disagree")
	return fwd
}

func TestIndexedBatchGetOverDB(t *testing.T) {
	d := openMerge(t)
	for _, k := range []string{"a", "b", "c", "d", "m", "r"} {
		require.NoError(t, d.Put([]byte(k), []byte("db-"+k), nil))
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.Put([]byte("e"), []byte("db-e"), nil))

	b := d.NewIndexedBatch()
	b.Put([]byte("a"), []byte("batch-a"))
	b.Delete([]byte("b"))
	b.Merge([]byte("c"), []byte("x"))
	b.Merge([]byte("c"), []byte("y"))
	b.DeleteRange([]byte("d"), []byte("f"))
	b.Merge([]byte("e"), []byte("after-range"))
	b.Put([]byte("n"), []byte("batch-n"))
	b.Merge([]byte("n"), []byte("z"))
	b.SingleDelete([]byte("r"))

	want := map[string]string{"a": "batch-a", "c": "db-c,x,y", "e": "after-range", "m": "db-m", "n": "batch-n,z"}
	for _, k := range []string{"a", "b", "c", "d", "e", "m", "n", "r", "zz"} {
		v, err := b.Get([]byte(k))
		if w, ok := want[k]; ok {
			require.NoError(t, err, k)
			require.Equal(t, w, string(v), k)
		} else {
			require.ErrorIs(t, err, db.ErrNotFound, k)
		}
	}
	// Get reads the database at the moment of the call.
	require.NoError(t, d.Put([]byte("m"), []byte("db-m2"), nil))
	v, err := b.Get([]byte("m"))
	require.NoError(t, err)
	require.Equal(t, "db-m2", string(v))

	it := b.NewIterator(nil)
	require.Equal(t, []string{"a=batch-a", "c=db-c,x,y", "e=after-range", "m=db-m2", "n=batch-n,z"}, batchScan(t, it))
	require.NoError(t, it.Close())

	// Nothing is in the database until Write.
	_, err = d.Get([]byte("n"), nil)
	require.ErrorIs(t, err, db.ErrNotFound)
	require.NoError(t, d.Write(b, nil))
	require.Equal(t, []string{"a=batch-a", "c=db-c,x,y", "e=after-range", "m=db-m2", "n=batch-n,z"}, scan(t, d, nil))
}

func TestPlainBatchIsNotReadable(t *testing.T) {
	d := openMerge(t)
	b := db.NewBatch()
	b.Put([]byte("k"), []byte("v"))
	_, err := b.Get([]byte("k"))
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	_, err = b.GetCF(nil, []byte("k"))
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	it := b.NewIterator(nil)
	it.SeekToFirst()
	require.False(t, it.Valid())
	require.ErrorIs(t, it.Err(), db.ErrInvalidArgument)
	it2 := b.NewIteratorCF(nil, nil)
	it2.SeekToFirst()
	require.False(t, it2.Valid())
	require.ErrorIs(t, it2.Err(), db.ErrInvalidArgument)
	require.NoError(t, d.Write(b, nil))
}

func TestIndexedBatchIteratorBoundsAndPrefix(t *testing.T) {
	d, _ := openTest(t, &db.Options{PrefixExtractor: prefix.Fixed(2)})
	defer d.Close()
	for _, k := range []string{"aa1", "aa3", "ab1", "ac1"} {
		require.NoError(t, d.Put([]byte(k), []byte("d"), nil))
	}
	b := d.NewIndexedBatch()
	b.Put([]byte("aa2"), []byte("b"))
	b.Put([]byte("ab0"), []byte("b"))
	b.Delete([]byte("ab1"))
	b.Put([]byte("ad0"), []byte("b"))

	it := b.NewIterator(&db.ReadOptions{LowerBound: []byte("aa2"), UpperBound: []byte("ad")})
	require.Equal(t, []string{"aa2=b", "aa3=d", "ab0=b", "ac1=d"}, batchScan(t, it))
	it.Seek([]byte("ab"))
	require.True(t, it.Valid())
	require.Equal(t, "ab0", string(it.Key()))
	it.SeekForPrev([]byte("ab5"))
	require.True(t, it.Valid())
	require.Equal(t, "ab0", string(it.Key()))
	require.NoError(t, it.Close())

	it = b.NewIterator(&db.ReadOptions{PrefixSameAsStart: true})
	var got []string
	for it.Seek([]byte("aa")); it.Valid(); it.Next() {
		got = append(got, string(it.Key()))
	}
	require.NoError(t, it.Err())
	require.Equal(t, []string{"aa1", "aa2", "aa3"}, got)
	got = nil
	for it.Seek([]byte("ab")); it.Valid(); it.Next() {
		got = append(got, string(it.Key()))
	}
	require.Equal(t, []string{"ab0"}, got)
	require.NoError(t, it.Close())
}

// An iterator sees the batch as it was when the iterator was made.
func TestIndexedBatchIteratorSeesBatchAtCreation(t *testing.T) {
	d := openMerge(t)
	b := d.NewIndexedBatch()
	b.Put([]byte("a"), []byte("1"))
	it := b.NewIterator(nil)
	b.Put([]byte("b"), []byte("2"))
	b.Put([]byte("a"), []byte("changed"))
	b.DeleteRange([]byte("a"), []byte("z"))
	require.Equal(t, []string{"a=1"}, batchScan(t, it))
	require.ErrorIs(t, it.Refresh(), db.ErrInvalidArgument)
	require.NoError(t, it.Close())
	it = b.NewIterator(nil)
	require.Empty(t, batchScan(t, it))
	require.NoError(t, it.Close())
}

// A batch larger than its index's first arena grows it, and iterators made
// before keep their view.
func TestIndexedBatchGrows(t *testing.T) {
	d := openMerge(t)
	b := d.NewIndexedBatch()
	b.Put([]byte("k0000"), []byte("first"))
	early := b.NewIterator(nil)
	val := make([]byte, 100)
	for i := 0; i < 2000; i++ {
		b.Put([]byte(fmt.Sprintf("k%04d", i)), val)
	}
	v, err := b.Get([]byte("k1999"))
	require.NoError(t, err)
	require.Len(t, v, 100)
	require.Equal(t, []string{"k0000=first"}, batchScan(t, early))
	require.NoError(t, early.Close())
	it := b.NewIterator(nil)
	n := 0
	for it.SeekToFirst(); it.Valid(); it.Next() {
		n++
	}
	require.Equal(t, 2000, n)
	require.NoError(t, it.Close())
	b.Reset()
	_, err = b.Get([]byte("k0000"))
	require.ErrorIs(t, err, db.ErrNotFound)
}

func TestIndexedBatchColumnFamilies(t *testing.T) {
	d := openMerge(t)
	cf, err := d.CreateColumnFamily("other", nil)
	require.NoError(t, err)
	require.NoError(t, cf.Put([]byte("k"), []byte("db-other"), nil))
	require.NoError(t, d.Put([]byte("k"), []byte("db-default"), nil))
	b := d.NewIndexedBatch()
	b.PutCF(cf, []byte("j"), []byte("batch-other"))
	b.DeleteCF(cf, []byte("k"))
	b.Put([]byte("i"), []byte("batch-default"))

	_, err = b.GetCF(cf, []byte("k"))
	require.ErrorIs(t, err, db.ErrNotFound)
	v, err := b.Get([]byte("k"))
	require.NoError(t, err)
	require.Equal(t, "db-default", string(v))
	it := b.NewIteratorCF(cf, nil)
	require.Equal(t, []string{"j=batch-other"}, batchScan(t, it))
	require.NoError(t, it.Close())
	it = b.NewIterator(nil)
	require.Equal(t, []string{"i=batch-default", "k=db-default"}, batchScan(t, it))
	require.NoError(t, it.Close())
}

// The DB side of a batch iterator reads at ro.Snapshot.
func TestIndexedBatchIteratorAtSnapshot(t *testing.T) {
	d := openMerge(t)
	require.NoError(t, d.Put([]byte("a"), []byte("old"), nil))
	s := d.NewSnapshot()
	defer s.Release()
	require.NoError(t, d.Put([]byte("a"), []byte("new"), nil))
	require.NoError(t, d.Put([]byte("b"), []byte("new"), nil))
	b := d.NewIndexedBatch()
	b.Merge([]byte("a"), []byte("m"))
	it := b.NewIterator(&db.ReadOptions{Snapshot: s})
	require.Equal(t, []string{"a=old,m"}, batchScan(t, it))
	require.NoError(t, it.Close())
}

// A model check: reading an indexed batch over a database gives what the
// database reads once the batch is written, for random puts, deletions,
// single deletions, range deletions and merges over a random, partly
// flushed base, with Get, both directions, bounds and reseeks.
func TestIndexedBatchMatchesWritten(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	key := func() []byte { return []byte(fmt.Sprintf("k%02d", rng.Intn(40))) }
	for round := 0; round < 20; round++ {
		open := func() *db.DB {
			d, err := db.Open("/db", &db.Options{FS: vfs.NewMem(), CreateIfMissing: true, MergeOperator: db.NewStringAppendOperator(",")})
			require.NoError(t, err)
			return d
		}
		d1, d2 := open(), open()
		both := func(f func(d *db.DB) error) {
			require.NoError(t, f(d1))
			require.NoError(t, f(d2))
		}
		for i := 0; i < 60; i++ {
			k, v := key(), []byte(fmt.Sprintf("base%d", i))
			switch r := rng.Intn(10); {
			case r < 5:
				both(func(d *db.DB) error { return d.Put(k, v, nil) })
			case r < 7:
				both(func(d *db.DB) error { return d.Merge(k, v, nil) })
			case r < 8:
				both(func(d *db.DB) error { return d.Delete(k, nil) })
			case r < 9:
				e := key()
				if string(e) < string(k) {
					k, e = e, k
				}
				both(func(d *db.DB) error { return d.DeleteRange(k, e, nil) })
			default:
				both(func(d *db.DB) error { return d.Flush() })
			}
		}
		b := d1.NewIndexedBatch()
		for i := 0; i < 40; i++ {
			k, v := key(), []byte(fmt.Sprintf("b%d", i))
			switch r := rng.Intn(10); {
			case r < 4:
				b.Put(k, v)
			case r < 7:
				b.Merge(k, v)
			case r < 8:
				b.Delete(k)
			case r < 9:
				b.SingleDelete(k)
			default:
				b.DeleteRange(k, key())
			}
		}
		lo, hi := key(), key()
		ro := &db.ReadOptions{LowerBound: lo, UpperBound: hi}
		var gets []string
		for i := 0; i < 40; i++ {
			v, err := b.Get([]byte(fmt.Sprintf("k%02d", i)))
			gets = append(gets, fmt.Sprintf("%s/%v", v, err != nil))
		}
		it := b.NewIterator(nil)
		full := batchScan(t, it)
		seed := rng.Int63()
		seeks := reseeks(it, seed)
		require.NoError(t, it.Close())
		it = b.NewIterator(ro)
		bounded := batchScan(t, it)
		require.NoError(t, it.Close())

		require.NoError(t, d2.Write(b, nil))
		for i := 0; i < 40; i++ {
			v, err := d2.Get([]byte(fmt.Sprintf("k%02d", i)), nil)
			require.Equal(t, fmt.Sprintf("%s/%v", v, err != nil), gets[i], "round %d key k%02d", round, i)
		}
		it = d2.NewIterator(nil)
		require.Equal(t, full, batchScan(t, it), "round %d", round)
		require.Equal(t, seeks, reseeks(it, seed), "round %d", round)
		require.NoError(t, it.Close())
		it = d2.NewIterator(ro)
		require.Equal(t, bounded, batchScan(t, it), "round %d", round)
		require.NoError(t, it.Close())
		require.NoError(t, d1.Close())
		require.NoError(t, d2.Close())
	}
}

// reseeks runs a random walk of seeks and steps and returns where each
// stopped.
func reseeks(it *db.Iterator, seed int64) []string {
	rng := rand.New(rand.NewSource(seed))
	var out []string
	for i := 0; i < 60; i++ {
		k := []byte(fmt.Sprintf("k%02d", rng.Intn(42)))
		switch rng.Intn(6) {
		case 0:
			it.Seek(k)
		case 1:
			it.SeekForPrev(k)
		case 2, 3:
			it.Next()
		default:
			it.Prev()
		}
		out = append(out, fmt.Sprintf("%s=%s/%v", it.Key(), it.Value(), it.Valid()))
	}
	return out
}
