package db_test

import (
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/batch"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/prefix"
	"github.com/stratadb/strata/vfs"
	"github.com/stretchr/testify/require"
)

// txnModes are the four kinds of transaction.
var txnModes = []struct {
	name string
	opts db.TransactionOptions
}{
	{"optimistic/SI", db.TransactionOptions{}},
	{"optimistic/serializable", db.TransactionOptions{Isolation: db.Serializable}},
	{"pessimistic/SI", db.TransactionOptions{Pessimistic: true, LockTimeout: 2 * time.Second}},
	{"pessimistic/serializable", db.TransactionOptions{Isolation: db.Serializable, Pessimistic: true, LockTimeout: 2 * time.Second}},
}

func get(t *testing.T, tx *db.Transaction, k string) string {
	t.Helper()
	v, err := tx.Get([]byte(k))
	if errors.Is(err, db.ErrNotFound) {
		return "<none>"
	}
	require.NoError(t, err)
	return string(v)
}

func dbGet(t *testing.T, d *db.DB, k string) string {
	t.Helper()
	v, err := d.Get([]byte(k), nil)
	if errors.Is(err, db.ErrNotFound) {
		return "<none>"
	}
	require.NoError(t, err)
	return string(v)
}

func put(t *testing.T, tx *db.Transaction, k, v string) {
	t.Helper()
	require.NoError(t, tx.Put([]byte(k), []byte(v)))
}

func txnScan(t *testing.T, tx *db.Transaction, ro *db.ReadOptions) []string {
	t.Helper()
	it := tx.NewIterator(ro)
	out := batchScan(t, it)
	require.NoError(t, it.Close())
	return out
}

// A transaction reads at its snapshot, sees its own writes, and nothing of
// it is visible before Commit returns nil.
func TestTransactionSnapshotOwnWritesInvisibleUntilCommit(t *testing.T) {
	for _, m := range txnModes {
		t.Run(m.name, func(t *testing.T) {
			d := openMerge(t)
			require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
			require.NoError(t, d.Put([]byte("c"), []byte("3"), nil))
			tx := d.NewTransaction(&m.opts)
			require.NoError(t, d.Put([]byte("a"), []byte("after"), nil))
			require.NoError(t, d.Put([]byte("b"), []byte("after"), nil))
			require.Equal(t, "1", get(t, tx, "a"))
			require.Equal(t, "<none>", get(t, tx, "b"))
			put(t, tx, "c", "own")
			require.NoError(t, tx.Merge([]byte("c"), []byte("m")))
			put(t, tx, "d", "own")
			require.NoError(t, tx.Delete([]byte("a")))
			require.Equal(t, "own,m", get(t, tx, "c"))
			require.Equal(t, "<none>", get(t, tx, "a"))
			require.Equal(t, []string{"c=own,m", "d=own"}, txnScan(t, tx, nil))
			// Nobody else sees it.
			require.Equal(t, "3", dbGet(t, d, "c"))
			require.Equal(t, "<none>", dbGet(t, d, "d"))
			require.Equal(t, []string{"a=after", "b=after", "c=3"}, scan(t, d, nil))
			other := d.NewTransaction(nil)
			require.Equal(t, "<none>", get(t, other, "d"))
			require.NoError(t, other.Rollback())
			// a was written after the snapshot and by the transaction.
			require.ErrorIs(t, tx.Commit(), db.ErrConflict)
			require.Equal(t, "<none>", dbGet(t, d, "d"), "a failed Commit leaves no trace")

			tx = d.NewTransaction(&m.opts)
			put(t, tx, "c", "own")
			put(t, tx, "d", "own")
			require.NoError(t, tx.Commit())
			require.Equal(t, []string{"a=after", "b=after", "c=own", "d=own"}, scan(t, d, nil))
		})
	}
}

// Commit writes one plain batch in the WAL.
func TestTransactionCommitIsOneWALBatch(t *testing.T) {
	d, dir := openTest(t, nil)
	require.NoError(t, d.Put([]byte("before"), []byte("x"), nil))
	cf, err := d.CreateColumnFamily("other", nil)
	require.NoError(t, err)
	tx := d.NewTransaction(nil)
	put(t, tx, "k1", "v1")
	put(t, tx, "k2", "v2")
	require.NoError(t, tx.PutCF(cf, []byte("k3"), []byte("v3")))
	require.NoError(t, tx.Delete([]byte("before")))
	require.NoError(t, tx.Commit())
	defer d.Close()

	// Read while open: Close would flush the memtable and drop the WAL.
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	var batches [][]string
	for _, name := range logs {
		f, err := os.Open(name)
		require.NoError(t, err)
		r := record.NewReader(f, 0, name)
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			br, err := batch.NewReader(rec)
			require.NoError(t, err)
			var recs []string
			for {
				id, kind, key, value, err := br.NextCF()
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				recs = append(recs, fmt.Sprintf("%d:%s:%s=%s", id, kind, key, value))
			}
			batches = append(batches, recs)
		}
		require.NoError(t, f.Close())
	}
	var found int
	for _, b := range batches {
		if len(b) == 4 {
			require.Equal(t, "0:SET:k1=v1", b[0])
			require.Equal(t, "0:SET:k2=v2", b[1])
			require.True(t, strings.HasSuffix(b[2], ":SET:k3=v3"), b[2])
			require.Equal(t, "0:DEL:before=", b[3])
			found++
		}
	}
	require.Equal(t, 1, found, "batches: %v", batches)
}

// A committed transaction is whole after a power loss; a rolled back or
// failed one leaves nothing.
func TestTransactionCrash(t *testing.T) {
	fs := vfs.NewMem()
	opts := func(f vfs.FS) *db.Options { return &db.Options{FS: f, CreateIfMissing: true} }
	d, err := db.Open("/db", opts(fs))
	require.NoError(t, err)
	for i := 0; i < 20; i++ {
		tx := d.NewTransaction(nil)
		for j := 0; j < 50; j++ {
			put(t, tx, fmt.Sprintf("t%02d-%02d", i, j), strconv.Itoa(i))
		}
		if i%3 == 2 {
			require.NoError(t, tx.Rollback())
			continue
		}
		require.NoError(t, tx.Commit())
	}
	loser := d.NewTransaction(nil)
	put(t, loser, "t00-00", "lost")
	put(t, loser, "loser", "lost")
	require.NoError(t, d.Put([]byte("t00-00"), []byte("outside"), nil))
	require.ErrorIs(t, loser.Commit(), db.ErrConflict)
	// A synced write makes everything before it durable.
	require.NoError(t, d.Put([]byte("sync"), []byte("1"), &db.WriteOptions{Sync: true}))
	crashed := fs.CrashClone()
	require.NoError(t, d.Close())
	d, err = db.Open("/db", opts(crashed))
	require.NoError(t, err)
	defer d.Close()
	for i := 0; i < 20; i++ {
		for j := 0; j < 50; j++ {
			k := fmt.Sprintf("t%02d-%02d", i, j)
			want := strconv.Itoa(i)
			if i%3 == 2 {
				want = "<none>"
			} else if k == "t00-00" {
				want = "outside"
			}
			require.Equal(t, want, dbGet(t, d, k), k)
		}
	}
	require.Equal(t, "<none>", dbGet(t, d, "loser"))
}

// SnapshotIsolation: a conflict when, and only when, a key written or read
// with GetForUpdate was written after the snapshot.
func TestTransactionSnapshotIsolationConflicts(t *testing.T) {
	for _, pess := range []bool{false, true} {
		opts := &db.TransactionOptions{Pessimistic: pess, LockTimeout: 2 * time.Second}
		t.Run(fmt.Sprintf("pessimistic=%v", pess), func(t *testing.T) {
			d := openMerge(t)
			require.NoError(t, d.Put([]byte("x"), []byte("0"), nil))
			cases := []struct {
				name     string
				tx       func(*db.Transaction)
				outside  func()
				conflict bool
			}{
				{"written key overwritten", func(tx *db.Transaction) { put(t, tx, "x", "1") },
					func() { require.NoError(t, d.Put([]byte("x"), []byte("o"), nil)) }, true},
				{"written key deleted", func(tx *db.Transaction) { put(t, tx, "x", "1") },
					func() { require.NoError(t, d.Delete([]byte("x"), nil)) }, true},
				{"written key merged", func(tx *db.Transaction) { require.NoError(t, tx.Merge([]byte("x"), []byte("1"))) },
					func() { require.NoError(t, d.Merge([]byte("x"), []byte("o"), nil)) }, true},
				{"written key range-deleted", func(tx *db.Transaction) { put(t, tx, "x", "1") },
					func() { require.NoError(t, d.DeleteRange([]byte("w"), []byte("y"), nil)) }, true},
				{"key read for update", func(tx *db.Transaction) { _, _ = tx.GetForUpdate([]byte("x")); put(t, tx, "z", "1") },
					func() { require.NoError(t, d.Put([]byte("x"), []byte("o"), nil)) }, true},
				{"missing key read for update, then created", func(tx *db.Transaction) { _, _ = tx.GetForUpdate([]byte("new")) },
					func() { require.NoError(t, d.Put([]byte("new"), []byte("o"), nil)) }, true},
				{"key read by Get: no conflict", func(tx *db.Transaction) { get(t, tx, "x"); put(t, tx, "z", "1") },
					func() { require.NoError(t, d.Put([]byte("x"), []byte("o"), nil)) }, false},
				{"iterated key: no conflict", func(tx *db.Transaction) { txnScan(t, tx, nil); put(t, tx, "z", "1") },
					func() { require.NoError(t, d.Put([]byte("x2"), []byte("o"), nil)) }, false},
				{"other key", func(tx *db.Transaction) { put(t, tx, "x", "1") },
					func() { require.NoError(t, d.Put([]byte("x0"), []byte("o"), nil)) }, false},
				{"written key overwritten and flushed", func(tx *db.Transaction) { put(t, tx, "x", "1") },
					func() {
						require.NoError(t, d.Put([]byte("x"), []byte("o"), nil))
						require.NoError(t, d.Flush())
					}, true},
				{"written key overwritten, flushed and compacted", func(tx *db.Transaction) { put(t, tx, "x", "1") },
					func() {
						require.NoError(t, d.Put([]byte("x"), []byte("o"), nil))
						require.NoError(t, d.Flush())
						require.NoError(t, d.CompactRange(nil, nil))
					}, true},
				{"other key flushed and compacted", func(tx *db.Transaction) { put(t, tx, "x", "1") },
					func() {
						require.NoError(t, d.Put([]byte("x1"), []byte("o"), nil))
						require.NoError(t, d.Flush())
						require.NoError(t, d.CompactRange(nil, nil))
					}, false},
			}
			for _, c := range cases {
				tx := d.NewTransaction(opts)
				c.tx(tx)
				c.outside()
				err := tx.Commit()
				if c.conflict {
					require.ErrorIs(t, err, db.ErrConflict, c.name)
				} else {
					require.NoError(t, err, c.name)
				}
			}
		})
	}
}

// Serializable adds every key read by Get (found or not) and every range an
// iterator passed over; a read-only transaction validates too.
func TestTransactionSerializableConflicts(t *testing.T) {
	for _, pess := range []bool{false, true} {
		opts := &db.TransactionOptions{Isolation: db.Serializable, Pessimistic: pess, LockTimeout: 2 * time.Second}
		t.Run(fmt.Sprintf("pessimistic=%v", pess), func(t *testing.T) {
			var d *db.DB
			w := func(k string) func() {
				return func() { require.NoError(t, d.Put([]byte(k), []byte("o"), nil)) }
			}
			// walk reads from Seek(from) forward n keys (n < 0: to the end).
			walk := func(ro *db.ReadOptions, from string, n int) func(*db.Transaction) {
				return func(tx *db.Transaction) {
					it := tx.NewIterator(ro)
					// Stop on the n-th key, without moving past it.
					for i := 1; ; i++ {
						if i == 1 {
							it.Seek([]byte(from))
						} else {
							it.Next()
						}
						if !it.Valid() || i == n {
							break
						}
					}
					require.NoError(t, it.Close())
				}
			}
			back := func(from string, n int) func(*db.Transaction) {
				return func(tx *db.Transaction) {
					it := tx.NewIterator(nil)
					for i := 1; ; i++ {
						if i == 1 {
							it.SeekForPrev([]byte(from))
						} else {
							it.Prev()
						}
						if !it.Valid() || i == n {
							break
						}
					}
					require.NoError(t, it.Close())
				}
			}
			// first and last position once and read one key.
			first := func(ro *db.ReadOptions) func(*db.Transaction) {
				return func(tx *db.Transaction) {
					it := tx.NewIterator(ro)
					it.SeekToFirst()
					require.True(t, it.Valid())
					require.NoError(t, it.Close())
				}
			}
			last := func(ro *db.ReadOptions) func(*db.Transaction) {
				return func(tx *db.Transaction) {
					it := tx.NewIterator(ro)
					it.SeekToLast()
					require.True(t, it.Valid())
					require.NoError(t, it.Close())
				}
			}
			cases := []struct {
				name     string
				tx       func(*db.Transaction)
				outside  func()
				conflict bool
			}{
				{"key found by Get", func(tx *db.Transaction) { get(t, tx, "b") }, w("b"), true},
				{"key missed by Get", func(tx *db.Transaction) { get(t, tx, "c") }, w("c"), true},
				{"other key than Get's", func(tx *db.Transaction) { get(t, tx, "c") }, w("c0"), false},
				{"read-only Commit validates", func(tx *db.Transaction) { get(t, tx, "d") }, w("d"), true},
				// Seek(c) then two keys (d, f): [c, f] read.
				{"insert inside the range passed", walk(nil, "c", 2), w("e"), true},
				{"insert at the seek key", walk(nil, "c", 2), w("c"), true},
				{"overwrite of the last key returned", walk(nil, "c", 2), w("f"), true},
				{"insert past the last key returned", walk(nil, "c", 2), w("g"), false},
				{"insert before the seek key", walk(nil, "c", 2), w("a"), false},
				{"ran off the end", walk(nil, "c", -1), w("zzz"), true},
				{"ran off the upper bound, insert inside", walk(&db.ReadOptions{UpperBound: []byte("g")}, "c", -1), w("f5"), true},
				{"ran off the upper bound, insert past it", walk(&db.ReadOptions{UpperBound: []byte("g")}, "c", -1), w("g"), false},
				{"range tombstone over the range", walk(nil, "c", 2), func() {
					require.NoError(t, d.DeleteRange([]byte("e0"), []byte("e1"), nil))
				}, true},
				// SeekToFirst and SeekToLast start at the bound, or the end.
				{"SeekToFirst: insert before the first key", first(nil), w("a"), true},
				{"SeekToFirst: insert past the key returned", first(nil), w("c"), false},
				{"SeekToFirst: insert below the lower bound", first(&db.ReadOptions{LowerBound: []byte("c")}), w("c-"), true},
				{"SeekToFirst with a lower bound: insert below it", first(&db.ReadOptions{LowerBound: []byte("c")}), w("bb"), false},
				{"SeekToLast: insert past the last key", last(nil), w("z"), true},
				{"SeekToLast: insert before the key returned", last(nil), w("g"), false},
				{"SeekToLast with an upper bound: insert at it", last(&db.ReadOptions{UpperBound: []byte("g")}), w("g"), false},
				{"SeekToLast with an upper bound: insert below it", last(&db.ReadOptions{UpperBound: []byte("g")}), w("f5"), true},
				// SeekForPrev(g) then back two keys (f, d): [d, g] read.
				{"backward: insert inside", back("g", 2), w("e"), true},
				{"backward: insert at the seek key", back("g", 2), w("g"), true},
				{"backward: insert before the last key", back("g", 2), w("c"), false},
				{"backward: insert past the seek key", back("g", 2), w("g0"), false},
				{"backward: ran off the start", back("g", 10), w("0"), true},
			}
			for _, c := range cases {
				d = openMerge(t)
				for _, k := range []string{"b", "d", "f", "h"} {
					require.NoError(t, d.Put([]byte(k), []byte("0"), nil))
				}
				tx := d.NewTransaction(opts)
				c.tx(tx)
				c.outside()
				err := tx.Commit()
				if c.conflict {
					require.ErrorIs(t, err, db.ErrConflict, c.name)
				} else {
					require.NoError(t, err, c.name)
				}
			}
		})
	}
}

// The anomaly matrix: which anomalies each isolation level and mode admit.
func TestTransactionAnomalies(t *testing.T) {
	type scenario func(t *testing.T, d *db.DB, o *db.TransactionOptions) (anomaly bool)
	begin := func(d *db.DB, o *db.TransactionOptions) *db.Transaction { return d.NewTransaction(o) }
	num := func(t *testing.T, tx *db.Transaction, k string) int {
		n, err := strconv.Atoi(get(t, tx, k))
		require.NoError(t, err, k)
		return n
	}
	scenarios := map[string]scenario{
		// T2 reads what T1 wrote and has not committed.
		"dirty read": func(t *testing.T, d *db.DB, o *db.TransactionOptions) bool {
			t1 := begin(d, o)
			put(t, t1, "x", "dirty")
			t2 := begin(d, o)
			v := get(t, t2, "x")
			require.NoError(t, t1.Rollback())
			require.NoError(t, t2.Commit())
			return v == "dirty"
		},
		// Both read x and write x+1; both commit.
		"lost update": func(t *testing.T, d *db.DB, o *db.TransactionOptions) bool {
			t1, t2 := begin(d, o), begin(d, o)
			x1, x2 := num(t, t1, "x"), num(t, t2, "x")
			put(t, t1, "x", strconv.Itoa(x1+1))
			require.NoError(t, t1.Commit())
			put(t, t2, "x", strconv.Itoa(x2+1))
			return t2.Commit() == nil
		},
		// T1 reads x, T2 moves 10 from x to y and commits, T1 reads y: the
		// sum is off.
		"read skew": func(t *testing.T, d *db.DB, o *db.TransactionOptions) bool {
			t1 := begin(d, o)
			x := num(t, t1, "x")
			t2 := begin(d, o)
			put(t, t2, "x", strconv.Itoa(num(t, t2, "x")-10))
			put(t, t2, "y", strconv.Itoa(num(t, t2, "y")+10))
			require.NoError(t, t2.Commit())
			y := num(t, t1, "y")
			err := t1.Commit()
			return x+y != 100 && err == nil
		},
		// Each reads x and y (x+y must stay >= 50) and lowers a different one.
		"write skew": func(t *testing.T, d *db.DB, o *db.TransactionOptions) bool {
			t1, t2 := begin(d, o), begin(d, o)
			if num(t, t1, "x")+num(t, t1, "y") >= 100 {
				put(t, t1, "x", "0")
			}
			if num(t, t2, "x")+num(t, t2, "y") >= 100 {
				put(t, t2, "y", "0")
			}
			require.NoError(t, t1.Commit())
			return t2.Commit() == nil
		},
		// T1 counts the keys under "item/" and records the count; T2 adds
		// one and commits first.
		"phantom": func(t *testing.T, d *db.DB, o *db.TransactionOptions) bool {
			t1 := begin(d, o)
			it := t1.NewIterator(&db.ReadOptions{LowerBound: []byte("item/"), UpperBound: []byte("item0")})
			n := 0
			for it.SeekToFirst(); it.Valid(); it.Next() {
				n++
			}
			require.NoError(t, it.Close())
			t2 := begin(d, o)
			put(t, t2, "item/new", "1")
			require.NoError(t, t2.Commit())
			put(t, t1, "count", strconv.Itoa(n))
			return t1.Commit() == nil
		},
	}
	// Anomalies admitted: SnapshotIsolation admits write skew and
	// phantoms; Serializable none.
	admits := map[db.Isolation]map[string]bool{
		db.SnapshotIsolation: {"write skew": true, "phantom": true},
		db.Serializable:      {},
	}
	for name, sc := range scenarios {
		for _, m := range txnModes {
			t.Run(name+"/"+m.name, func(t *testing.T) {
				d := openMerge(t)
				for _, k := range []string{"x", "y"} {
					require.NoError(t, d.Put([]byte(k), []byte("50"), nil))
				}
				require.NoError(t, d.Put([]byte("item/1"), []byte("1"), nil))
				o := m.opts
				require.Equal(t, admits[o.Isolation][name], sc(t, d, &o))
			})
		}
	}
}

// Pessimistic: writes and GetForUpdate lock until Commit or Rollback; a
// wait past LockTimeout fails that call with ErrConflict and the
// transaction stays open.
func TestTransactionLockTimeout(t *testing.T) {
	d := openMerge(t)
	o := &db.TransactionOptions{Pessimistic: true, LockTimeout: 50 * time.Millisecond}
	lockers := map[string]func(*db.Transaction) error{
		"Put":          func(tx *db.Transaction) error { return tx.Put([]byte("k"), []byte("1")) },
		"Delete":       func(tx *db.Transaction) error { return tx.Delete([]byte("k")) },
		"Merge":        func(tx *db.Transaction) error { return tx.Merge([]byte("k"), []byte("1")) },
		"GetForUpdate": func(tx *db.Transaction) error { _, err := tx.GetForUpdate([]byte("k")); return ignoreNotFound(err) },
	}
	for first, lock1 := range lockers {
		for second, lock2 := range lockers {
			t1, t2 := d.NewTransaction(o), d.NewTransaction(o)
			require.NoError(t, lock1(t1))
			start := time.Now()
			err := lock2(t2)
			require.ErrorIs(t, err, db.ErrConflict, "%s then %s", first, second)
			require.GreaterOrEqual(t, time.Since(start), o.LockTimeout)
			// t2 is still open; once t1 lets go its call succeeds.
			if first == "GetForUpdate" {
				require.NoError(t, t1.Commit())
			} else {
				require.NoError(t, t1.Rollback())
			}
			require.NoError(t, lock2(t2), "%s then %s", first, second)
			require.NoError(t, t2.Rollback())
		}
	}
	// Plain Get does not lock; writes outside transactions do not wait.
	t1, t2 := d.NewTransaction(o), d.NewTransaction(o)
	put(t, t1, "k", "t1")
	require.Equal(t, "<none>", get(t, t2, "k"))
	require.NoError(t, d.Put([]byte("k"), []byte("outside"), nil))
	require.ErrorIs(t, t1.Commit(), db.ErrConflict, "Commit still validates")
	require.NoError(t, t2.Rollback())
}

func ignoreNotFound(err error) error {
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	return err
}

// Two transactions lock in opposite order: the wait that closes the cycle
// fails at once, well before the timeout, and the other goes on.
func TestTransactionDeadlock(t *testing.T) {
	d := openMerge(t)
	o, t1, t2, done := halfDeadlock(t, d)
	start := time.Now()
	err := t2.Put([]byte("a"), []byte("2"))
	require.ErrorIs(t, err, db.ErrConflict)
	require.Less(t, time.Since(start), o.LockTimeout/2)
	require.NoError(t, t2.Rollback())
	require.NoError(t, <-done)
	require.NoError(t, t1.Commit())
	require.Equal(t, "1", dbGet(t, d, "a"))
	require.Equal(t, "1", dbGet(t, d, "b"))
}

// halfDeadlock starts the opposite-order pair of the deadlock tests: t1
// holds a, t2 holds b, and t1 waits for b in a goroutine whose Put result
// done delivers; it returns once t1 waits. t2's Put of a closes the cycle.
func halfDeadlock(t *testing.T, d *db.DB) (o *db.TransactionOptions, t1, t2 *db.Transaction, done chan error) {
	o = &db.TransactionOptions{Pessimistic: true, LockTimeout: 2 * time.Second}
	t1, t2 = d.NewTransaction(o), d.NewTransaction(o)
	put(t, t1, "a", "1")
	put(t, t2, "b", "2")
	done = make(chan error, 1)
	go func() { done <- t1.Put([]byte("b"), []byte("1")) }()
	for !t1.TestingLockWaiting() {
		select {
		case err := <-done:
			t.Fatalf("t1's Put returned before t2 released b: %v", err)
		default:
			time.Sleep(time.Millisecond)
		}
	}
	return o, t1, t2, done
}

// A cycle of three.
func TestTransactionDeadlockThree(t *testing.T) {
	d := openMerge(t)
	o := &db.TransactionOptions{Pessimistic: true, LockTimeout: 2 * time.Second}
	tx := []*db.Transaction{d.NewTransaction(o), d.NewTransaction(o), d.NewTransaction(o)}
	keys := []string{"a", "b", "c"}
	for i := range tx {
		put(t, tx[i], keys[i], "x")
	}
	done := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func(i int) { done <- tx[i].Put([]byte(keys[i+1]), []byte("y")) }(i)
	}
	for !tx[0].TestingLockWaiting() || !tx[1].TestingLockWaiting() {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	require.ErrorIs(t, tx[2].Put([]byte("a"), []byte("y")), db.ErrConflict)
	require.Less(t, time.Since(start), o.LockTimeout/2)
	require.NoError(t, tx[2].Rollback())
	require.NoError(t, <-done)
	require.NoError(t, tx[1].Commit())
	require.NoError(t, <-done)
	// tx[0] waited for b while tx[1] held it, and tx[1] wrote b after
	// tx[0]'s snapshot: Commit's validation refuses it.
	require.ErrorIs(t, tx[0].Commit(), db.ErrConflict)
}

// Savepoints nest; RollbackToSavePoint undoes the writes since the latest
// and removes it; ErrNotFound without one.
func TestTransactionSavePoints(t *testing.T) {
	d := openMerge(t)
	require.NoError(t, d.Put([]byte("base"), []byte("db"), nil))
	tx := d.NewTransaction(&db.TransactionOptions{Pessimistic: true, LockTimeout: 20 * time.Millisecond})
	require.ErrorIs(t, tx.RollbackToSavePoint(), db.ErrNotFound)
	put(t, tx, "a", "1")
	tx.SetSavePoint()
	put(t, tx, "b", "2")
	require.NoError(t, tx.Merge([]byte("a"), []byte("m")))
	tx.SetSavePoint()
	put(t, tx, "c", "3")
	require.NoError(t, tx.Delete([]byte("base")))
	require.Equal(t, []string{"a=1,m", "b=2", "c=3"}, txnScan(t, tx, nil))
	require.NoError(t, tx.RollbackToSavePoint())
	require.Equal(t, []string{"a=1,m", "b=2", "base=db"}, txnScan(t, tx, nil))
	require.NoError(t, tx.RollbackToSavePoint())
	require.Equal(t, []string{"a=1", "base=db"}, txnScan(t, tx, nil))
	require.Equal(t, "<none>", get(t, tx, "b"))
	require.ErrorIs(t, tx.RollbackToSavePoint(), db.ErrNotFound)
	// The lock on c, taken since, is kept.
	other := d.NewTransaction(&db.TransactionOptions{Pessimistic: true, LockTimeout: 20 * time.Millisecond})
	require.ErrorIs(t, other.Put([]byte("c"), []byte("x")), db.ErrConflict)
	require.NoError(t, other.Rollback())
	// A key written only after a savepoint rolled back is no conflict key.
	tx2 := d.NewTransaction(nil)
	tx2.SetSavePoint()
	put(t, tx2, "z", "1")
	require.NoError(t, tx2.RollbackToSavePoint())
	put(t, tx2, "y", "1")
	require.NoError(t, d.Put([]byte("z"), []byte("outside"), nil))
	require.NoError(t, tx2.Commit())
	require.NoError(t, tx.Commit())
	require.Equal(t, []string{"a=1", "base=db", "y=1", "z=outside"}, scan(t, d, nil))
}

// A transaction's iterator uses its bounds and PrefixSameAsStart and reads
// at the transaction's snapshot whatever ReadOptions.Snapshot says.
func TestTransactionIteratorSnapshotBoundsPrefix(t *testing.T) {
	d, _ := openTest(t, &db.Options{PrefixExtractor: prefix.Fixed(2)})
	defer d.Close()
	require.NoError(t, d.Put([]byte("aa1"), []byte("old"), nil))
	early := d.NewSnapshot()
	defer early.Release()
	require.NoError(t, d.Put([]byte("aa2"), []byte("old"), nil))
	tx := d.NewTransaction(nil)
	require.NoError(t, d.Put([]byte("aa3"), []byte("late"), nil))
	late := d.NewSnapshot()
	defer late.Release()
	put(t, tx, "ab1", "own")
	put(t, tx, "aa0", "own")
	for _, s := range []*db.Snapshot{nil, early, late} {
		require.Equal(t, []string{"aa0=own", "aa1=old", "aa2=old", "ab1=own"}, txnScan(t, tx, &db.ReadOptions{Snapshot: s}))
	}
	require.Equal(t, []string{"aa1=old", "aa2=old"}, txnScan(t, tx, &db.ReadOptions{LowerBound: []byte("aa1"), UpperBound: []byte("ab")}))
	it := tx.NewIterator(&db.ReadOptions{PrefixSameAsStart: true})
	var got []string
	for it.Seek([]byte("ab")); it.Valid(); it.Next() {
		got = append(got, string(it.Key()))
	}
	require.Equal(t, []string{"ab1"}, got)
	require.NoError(t, it.Close())
	require.NoError(t, tx.Commit())
}

// After Commit (successful or not) or Rollback, every method returns
// ErrClosed.
func TestTransactionClosedAfterEnd(t *testing.T) {
	d := openMerge(t)
	cf, err := d.CreateColumnFamily("other", nil)
	require.NoError(t, err)
	ends := map[string]func(*db.Transaction){
		"Commit":   func(tx *db.Transaction) { require.NoError(t, tx.Commit()) },
		"Rollback": func(tx *db.Transaction) { require.NoError(t, tx.Rollback()) },
		"failed Commit": func(tx *db.Transaction) {
			put(t, tx, "conflict", "1")
			require.NoError(t, d.Put([]byte("conflict"), []byte("o"), nil))
			require.ErrorIs(t, tx.Commit(), db.ErrConflict)
		},
	}
	for name, end := range ends {
		tx := d.NewTransaction(&db.TransactionOptions{Pessimistic: true})
		put(t, tx, "k", "v")
		end(tx)
		k, v := []byte("k"), []byte("v")
		errs := map[string]error{
			"Commit":              tx.Commit(),
			"Rollback":            tx.Rollback(),
			"Put":                 tx.Put(k, v),
			"Delete":              tx.Delete(k),
			"Merge":               tx.Merge(k, v),
			"PutCF":               tx.PutCF(cf, k, v),
			"DeleteCF":            tx.DeleteCF(cf, k),
			"MergeCF":             tx.MergeCF(cf, k, v),
			"RollbackToSavePoint": tx.RollbackToSavePoint(),
		}
		_, errs["Get"] = tx.Get(k)
		_, errs["GetCF"] = tx.GetCF(cf, k)
		_, errs["GetForUpdate"] = tx.GetForUpdate(k)
		_, errs["GetForUpdateCF"] = tx.GetForUpdateCF(cf, k)
		for _, it := range map[string]*db.Iterator{"NewIterator": tx.NewIterator(nil), "NewIteratorCF": tx.NewIteratorCF(cf, nil)} {
			it.SeekToFirst()
			require.False(t, it.Valid())
			require.ErrorIs(t, it.Err(), db.ErrClosed)
		}
		tx.SetSavePoint() // nothing to return; must not revive it
		require.ErrorIs(t, tx.RollbackToSavePoint(), db.ErrClosed)
		for m, err := range errs {
			require.ErrorIs(t, err, db.ErrClosed, "%s after %s", m, name)
		}
	}
}

// Update retries a conflict a bounded number of times and returns any
// other error of fn unchanged, committing nothing.
func TestUpdateRetriesAndErrors(t *testing.T) {
	d := openMerge(t)
	require.NoError(t, d.Put([]byte("n"), []byte("0"), nil))
	// A conflict on the first two attempts, then success.
	attempts := 0
	require.NoError(t, d.Update(func(tx *db.Transaction) error {
		attempts++
		v := get(t, tx, "n")
		if attempts <= 2 {
			require.NoError(t, d.Put([]byte("n"), []byte(v+"+"), nil))
		}
		return tx.Put([]byte("n"), []byte(v+"!"))
	}))
	require.Equal(t, 3, attempts)
	require.Equal(t, "0++!", dbGet(t, d, "n"))

	// Always conflicting: bounded, then the conflict.
	attempts = 0
	err := d.Update(func(tx *db.Transaction) error {
		attempts++
		put(t, tx, "n", "never")
		require.NoError(t, d.Put([]byte("n"), []byte(strconv.Itoa(attempts)), nil))
		return nil
	})
	require.ErrorIs(t, err, db.ErrConflict)
	require.Greater(t, attempts, 1)
	require.Less(t, attempts, 100)
	require.Equal(t, strconv.Itoa(attempts), dbGet(t, d, "n"))

	// fn's own ErrConflict is retried too.
	attempts = 0
	require.NoError(t, d.Update(func(tx *db.Transaction) error {
		attempts++
		if attempts == 1 {
			return fmt.Errorf("app: %w", db.ErrConflict)
		}
		return nil
	}))
	require.Equal(t, 2, attempts)

	// Any other error: returned unchanged, nothing committed, no retry.
	mine := errors.New("app: no")
	attempts = 0
	err = d.Update(func(tx *db.Transaction) error {
		attempts++
		put(t, tx, "other", "1")
		return mine
	})
	require.Same(t, mine, err)
	require.Equal(t, 1, attempts)
	require.Equal(t, "<none>", dbGet(t, d, "other"))
}

// View reads at one snapshot, returns fn's error and refuses writes.
func TestView(t *testing.T) {
	d := openMerge(t)
	cf, err := d.CreateColumnFamily("other", nil)
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("k"), []byte("1"), nil))
	mine := errors.New("app: done")
	err = d.View(func(tx *db.Transaction) error {
		require.Equal(t, "1", get(t, tx, "k"))
		require.NoError(t, d.Put([]byte("k"), []byte("2"), nil))
		require.Equal(t, "1", get(t, tx, "k"))
		require.ErrorIs(t, tx.Put([]byte("k"), []byte("x")), db.ErrReadOnly)
		require.ErrorIs(t, tx.Delete([]byte("k")), db.ErrReadOnly)
		require.ErrorIs(t, tx.Merge([]byte("k"), []byte("x")), db.ErrReadOnly)
		require.ErrorIs(t, tx.PutCF(cf, []byte("k"), []byte("x")), db.ErrReadOnly)
		require.ErrorIs(t, tx.DeleteCF(cf, []byte("k")), db.ErrReadOnly)
		require.ErrorIs(t, tx.MergeCF(cf, []byte("k"), []byte("x")), db.ErrReadOnly)
		return mine
	})
	require.Same(t, mine, err)
	require.NoError(t, d.View(func(tx *db.Transaction) error { return nil }))
	require.Equal(t, "2", dbGet(t, d, "k"))
}

// A transaction over two families: reads, writes, conflicts and commit in
// each.
func TestTransactionTwoFamilies(t *testing.T) {
	d := openMerge(t)
	cf, err := d.CreateColumnFamily("accounts", &db.ColumnFamilyOptions{MergeOperator: db.NewStringAppendOperator(",")})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("k"), []byte("default"), nil))
	require.NoError(t, cf.Put([]byte("k"), []byte("accounts"), nil))
	for _, m := range txnModes {
		tx := d.NewTransaction(&m.opts)
		v, err := tx.GetCF(cf, []byte("k"))
		require.NoError(t, err)
		require.Equal(t, "accounts", string(v))
		require.NoError(t, tx.MergeCF(cf, []byte("k"), []byte(m.name)))
		require.NoError(t, tx.Put([]byte("k2"), []byte(m.name)))
		v, err = tx.GetCF(cf, []byte("k"))
		require.NoError(t, err)
		require.Equal(t, "accounts,"+m.name, string(v))
		it := tx.NewIteratorCF(cf, &db.ReadOptions{UpperBound: []byte("k\x00")})
		require.Equal(t, []string{"k=accounts," + m.name}, batchScan(t, it))
		require.NoError(t, it.Close())
		require.Equal(t, "default", get(t, tx, "k"))
		require.NoError(t, tx.Commit())
		v, err = cf.Get([]byte("k"), nil)
		require.NoError(t, err)
		require.Equal(t, "accounts,"+m.name, string(v))
		require.Equal(t, m.name, dbGet(t, d, "k2"))
		require.NoError(t, cf.Put([]byte("k"), []byte("accounts"), nil))

		// A write to the same key in the other family is no conflict; in
		// the same family it is.
		tx = d.NewTransaction(&m.opts)
		require.NoError(t, tx.PutCF(cf, []byte("x"), []byte("1")))
		require.NoError(t, d.Put([]byte("x"), []byte("o"), nil))
		require.NoError(t, tx.Commit(), m.name)
		tx = d.NewTransaction(&m.opts)
		require.NoError(t, tx.PutCF(cf, []byte("x"), []byte("1")))
		require.NoError(t, cf.Put([]byte("x"), []byte("o"), nil))
		require.ErrorIs(t, tx.Commit(), db.ErrConflict, m.name)
	}
}

// Concurrent transfers between accounts by Update keep the total, checked
// by concurrent readers in View (run with -race).
func TestTransactionConcurrentBank(t *testing.T) {
	for _, m := range txnModes {
		t.Run(m.name, func(t *testing.T) {
			d := openMerge(t)
			const accounts, total = 8, 8000
			for i := 0; i < accounts; i++ {
				require.NoError(t, d.Put([]byte(fmt.Sprintf("acct%d", i)), []byte(strconv.Itoa(total/accounts)), nil))
			}
			opts := m.opts
			opts.LockTimeout = 100 * time.Millisecond
			transfer := func(from, to int) error {
				for attempt := 0; ; attempt++ {
					tx := d.NewTransaction(&opts)
					err := func() error {
						a, b := fmt.Sprintf("acct%d", from), fmt.Sprintf("acct%d", to)
						va, err := tx.GetForUpdate([]byte(a))
						if err != nil {
							return err
						}
						vb, err := tx.GetForUpdate([]byte(b))
						if err != nil {
							return err
						}
						na, _ := strconv.Atoi(string(va))
						nb, _ := strconv.Atoi(string(vb))
						if err := tx.Put([]byte(a), []byte(strconv.Itoa(na-1))); err != nil {
							return err
						}
						return tx.Put([]byte(b), []byte(strconv.Itoa(nb+1)))
					}()
					if err == nil {
						err = tx.Commit()
					} else {
						_ = tx.Rollback()
					}
					if err == nil || !errors.Is(err, db.ErrConflict) || attempt > 1000 {
						return err
					}
					// Back off, as Update does: a deadlock's victim that
					// retries at once takes its first lock again before
					// the survivor wakes, and the two can trade places
					// for ever.
					time.Sleep(time.Duration(rand.Intn(200)) * time.Microsecond)
				}
			}
			sum := func() (int, error) {
				n := 0
				err := d.View(func(tx *db.Transaction) error {
					it := tx.NewIterator(nil)
					defer it.Close()
					for it.SeekToFirst(); it.Valid(); it.Next() {
						v, _ := strconv.Atoi(string(it.Value()))
						n += v
					}
					return it.Err()
				})
				return n, err
			}
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for w := 0; w < 4; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := 0; i < 100; i++ {
						from, to := (w+i)%accounts, (w*3+i*5+1)%accounts
						if from == to {
							to = (to + 1) % accounts
						}
						if err := transfer(from, to); err != nil {
							errs <- err
							return
						}
					}
				}(w)
			}
			sums := make(chan int, 1000)
			stop := make(chan struct{})
			var rwg sync.WaitGroup
			rwg.Add(1)
			go func() {
				defer rwg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					n, err := sum()
					if err != nil {
						errs <- err
						return
					}
					select {
					case sums <- n:
					default:
					}
				}
			}()
			wg.Wait()
			close(stop)
			rwg.Wait()
			close(errs)
			close(sums)
			for err := range errs {
				require.NoError(t, err)
			}
			for n := range sums {
				require.Equal(t, total, n)
			}
			n, err := sum()
			require.NoError(t, err)
			require.Equal(t, total, n)
		})
	}
}

// An ingestion after the snapshot is a commit too: its table's entries and
// range deletions conflict like writes.
func TestTransactionConflictWithIngestion(t *testing.T) {
	fs := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true})
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Put([]byte("m"), []byte("0"), nil))
	cases := []struct {
		name     string
		ops      []extOp
		conflict bool
	}{
		{"written key ingested", []extOp{{key: "k", value: "ingested"}}, true},
		{"range deletion over the scanned range", []extOp{{key: "p0", end: "p1"}}, true},
		{"unrelated key", []extOp{{key: "zz", value: "ingested"}}, false},
	}
	for i, c := range cases {
		tx := d.NewTransaction(&db.TransactionOptions{Isolation: db.Serializable})
		put(t, tx, "k", "txn")
		it := tx.NewIterator(&db.ReadOptions{LowerBound: []byte("p"), UpperBound: []byte("q")})
		for it.SeekToFirst(); it.Valid(); it.Next() {
		}
		require.NoError(t, it.Close())
		path := fmt.Sprintf("/ext%d.sst", i)
		writeExtFile(t, fs, path, c.ops)
		require.NoError(t, d.Ingest([]string{path}, nil))
		err := tx.Commit()
		if c.conflict {
			require.ErrorIs(t, err, db.ErrConflict, c.name)
		} else {
			require.NoError(t, err, c.name)
		}
	}
}

// TransactionOptions.Sync: a commit acknowledged with Sync survives a power
// loss (a crash clone of the in-memory file system keeps only what was
// synced), whatever the kind of transaction; an unsynced commit after it
// need not. Update and View keep working on the same database.
func TestTransactionSyncSurvivesPowerLoss(t *testing.T) {
	for _, m := range txnModes {
		t.Run(m.name, func(t *testing.T) {
			fs := vfs.NewMem()
			opts := func(f vfs.FS) *db.Options { return &db.Options{FS: f, CreateIfMissing: true} }
			d, err := db.Open("/db", opts(fs))
			require.NoError(t, err)
			o := m.opts
			o.Sync = true
			for i := 0; i < 10; i++ {
				tx := d.NewTransaction(&o)
				put(t, tx, fmt.Sprintf("synced%02d", i), strconv.Itoa(i))
				put(t, tx, fmt.Sprintf("other%02d", i), strconv.Itoa(i))
				require.NoError(t, tx.Commit())
			}
			require.NoError(t, d.Update(func(tx *db.Transaction) error {
				return tx.Put([]byte("update"), []byte("u"))
			}))
			// An unsynced commit: the clone below may or may not keep it,
			// but never half of it.
			tx := d.NewTransaction(&m.opts)
			put(t, tx, "unsynced-a", "x")
			put(t, tx, "unsynced-b", "x")
			require.NoError(t, tx.Commit())
			crashed := fs.CrashClone()
			require.NoError(t, d.Close())
			d, err = db.Open("/db", opts(crashed))
			require.NoError(t, err)
			defer d.Close()
			require.NoError(t, d.View(func(tx *db.Transaction) error {
				for i := 0; i < 10; i++ {
					require.Equal(t, strconv.Itoa(i), get(t, tx, fmt.Sprintf("synced%02d", i)))
					require.Equal(t, strconv.Itoa(i), get(t, tx, fmt.Sprintf("other%02d", i)))
				}
				require.Equal(t, get(t, tx, "unsynced-a"), get(t, tx, "unsynced-b"))
				return nil
			}))
			require.NoError(t, d.Update(func(tx *db.Transaction) error {
				return tx.Put([]byte("after"), []byte("1"))
			}))
			require.Equal(t, "1", dbGet(t, d, "after"))
		})
	}
}

// Without Sync nothing forces the WAL out: a power loss right after an
// unsynced commit loses it on the in-memory file system, which keeps only
// synced bytes. This is what makes the test above able to fail.
func TestTransactionWithoutSyncLostOnPowerLoss(t *testing.T) {
	fs := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true})
	require.NoError(t, err)
	tx := d.NewTransaction(nil)
	put(t, tx, "k", "v")
	require.NoError(t, tx.Commit())
	crashed := fs.CrashClone()
	require.NoError(t, d.Close())
	d, err = db.Open("/db", &db.Options{FS: crashed, CreateIfMissing: true})
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, "<none>", dbGet(t, d, "k"))
}
