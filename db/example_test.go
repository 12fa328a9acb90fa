package db_test

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strings"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/prefix"
)

// exampleDB opens a new database in a temporary directory; cleanup closes
// it and removes the directory.
func exampleDB(opts *db.Options) (*db.DB, func()) {
	dir, err := os.MkdirTemp("", "strata-example")
	if err != nil {
		log.Fatal(err)
	}
	if opts == nil {
		opts = &db.Options{}
	}
	opts.CreateIfMissing = true
	d, err := db.Open(dir, opts)
	if err != nil {
		log.Fatal(err)
	}
	return d, func() {
		if err := d.Close(); err != nil {
			log.Fatal(err)
		}
		os.RemoveAll(dir)
	}
}

func Example() {
	dir, err := os.MkdirTemp("", "strata-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	d, err := db.Open(dir, &db.Options{CreateIfMissing: true})
	if err != nil {
		log.Fatal(err)
	}
	if err := d.Put([]byte("hello"), []byte("world"), nil); err != nil {
		log.Fatal(err)
	}
	v, err := d.Get([]byte("hello"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("hello=%s\n", v)
	_, err = d.Get([]byte("missing"), nil)
	fmt.Println("missing is ErrNotFound:", errors.Is(err, db.ErrNotFound))
	if err := d.Close(); err != nil {
		log.Fatal(err)
	}

	// Everything persists across Close and Open.
	d, err = db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	v, _ = d.Get([]byte("hello"), nil)
	fmt.Printf("after reopen: hello=%s\n", v)
	// Output:
	// hello=world
	// missing is ErrNotFound: true
	// after reopen: hello=world
}

func ExampleDB_Write() {
	d, done := exampleDB(nil)
	defer done()
	d.Put([]byte("balance/alice"), []byte("100"), nil)
	d.Put([]byte("balance/bob"), []byte("0"), nil)

	// A batch applies all of its writes or none.
	b := db.NewBatch()
	b.Put([]byte("balance/alice"), []byte("60"))
	b.Put([]byte("balance/bob"), []byte("40"))
	b.Delete([]byte("pending/transfer-1"))
	if err := d.Write(b, &db.WriteOptions{Sync: true}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("writes in batch:", b.Count())
	for _, k := range []string{"balance/alice", "balance/bob"} {
		v, _ := d.Get([]byte(k), nil)
		fmt.Printf("%s=%s\n", k, v)
	}
	// Output:
	// writes in batch: 3
	// balance/alice=60
	// balance/bob=40
}

func ExampleDB_NewIterator() {
	d, done := exampleDB(nil)
	defer done()
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		d.Put([]byte(k), []byte("v-"+k), nil)
	}
	// Keys in [b, e): LowerBound is inclusive, UpperBound exclusive.
	it := d.NewIterator(&db.ReadOptions{LowerBound: []byte("b"), UpperBound: []byte("e")})
	defer it.Close()
	for it.SeekToFirst(); it.Valid(); it.Next() {
		fmt.Printf("%s=%s\n", it.Key(), it.Value())
	}
	var keys []string
	for it.SeekToLast(); it.Valid(); it.Prev() {
		keys = append(keys, string(it.Key()))
	}
	fmt.Println(strings.Join(keys, " "))
	if err := it.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// b=v-b
	// c=v-c
	// d=v-d
	// d c b
}

func ExampleDB_NewSnapshot() {
	d, done := exampleDB(nil)
	defer done()
	d.Put([]byte("k"), []byte("old"), nil)
	snap := d.NewSnapshot()
	defer snap.Release()
	d.Put([]byte("k"), []byte("new"), nil)
	d.Flush() // snapshots survive flushes and compactions

	v, _ := d.Get([]byte("k"), &db.ReadOptions{Snapshot: snap})
	fmt.Printf("at snapshot: %s\n", v)
	v, _ = d.Get([]byte("k"), nil)
	fmt.Printf("latest: %s\n", v)
	// Output:
	// at snapshot: old
	// latest: new
}

func ExampleDB_DeleteRange() {
	d, done := exampleDB(nil)
	defer done()
	for i := 0; i < 6; i++ {
		d.Put([]byte(fmt.Sprintf("log/%d", i)), []byte("entry"), nil)
	}
	// Deletes log/1, log/2 and log/3: the end is exclusive.
	if err := d.DeleteRange([]byte("log/1"), []byte("log/4"), nil); err != nil {
		log.Fatal(err)
	}
	it := d.NewIterator(nil)
	defer it.Close()
	var keys []string
	for it.SeekToFirst(); it.Valid(); it.Next() {
		keys = append(keys, string(it.Key()))
	}
	fmt.Println(strings.Join(keys, " "))
	err := d.DeleteRange([]byte("z"), []byte("a"), nil)
	fmt.Println("inverted range is ErrInvalidArgument:", errors.Is(err, db.ErrInvalidArgument))
	// Output:
	// log/0 log/4 log/5
	// inverted range is ErrInvalidArgument: true
}

func ExampleReadOptions_prefixSameAsStart() {
	// Keys are "<user id, 4 bytes>/<item>": the prefix is the user id.
	d, done := exampleDB(&db.Options{PrefixExtractor: prefix.Fixed(4), BloomBitsPerKey: 10})
	defer done()
	for _, k := range []string{"u001/apple", "u001/pear", "u002/fig", "u003/kiwi"} {
		d.Put([]byte(k), nil, nil)
	}
	d.Flush()
	it := d.NewIterator(&db.ReadOptions{PrefixSameAsStart: true})
	defer it.Close()
	// Only the keys of user u001, then those of u002 backward.
	var keys []string
	for it.Seek([]byte("u001")); it.Valid(); it.Next() {
		keys = append(keys, string(it.Key()))
	}
	fmt.Println(strings.Join(keys, " "))
	keys = keys[:0]
	for it.SeekForPrev([]byte("u002/zzz")); it.Valid(); it.Prev() {
		keys = append(keys, string(it.Key()))
	}
	fmt.Println(strings.Join(keys, " "))
	// Output:
	// u001/apple u001/pear
	// u002/fig
}

func ExampleDB_SetOptions() {
	d, done := exampleDB(nil)
	defer done()
	err := d.SetOptions(map[string]string{
		"write_buffer_size": "4194304",
		"prefix_extractor":  "fixed:8",
	})
	fmt.Println("err:", err)
	v, _ := d.GetProperty(db.PropPrefixExtractor)
	fmt.Println("prefix extractor:", v)

	// A bad value is refused and changes nothing, not even the good entry.
	err = d.SetOptions(map[string]string{
		"prefix_extractor":  "capped:2",
		"write_buffer_size": "lots",
	})
	fmt.Println("invalid:", errors.Is(err, db.ErrInvalidArgument))
	v, _ = d.GetProperty(db.PropPrefixExtractor)
	fmt.Println("prefix extractor:", v)
	// Output:
	// err: <nil>
	// prefix extractor: rocksdb.FixedPrefix.8
	// invalid: true
	// prefix extractor: rocksdb.FixedPrefix.8
}

// A database opened with WALRecoveryPointInTime recovers every write before
// the first damage in its WALs and none after it.
func ExampleOptions_walRecoveryMode() {
	dir, err := os.MkdirTemp("", "strata-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, WALRecoveryMode: db.WALRecoveryPointInTime})
	if err != nil {
		panic(err)
	}
	if err := d.Put([]byte("k"), []byte("v"), &db.WriteOptions{Sync: true}); err != nil {
		panic(err)
	}
	fmt.Println(db.WALRecoveryPointInTime)
	fmt.Println(d.Close())
	// Output:
	// kPointInTimeRecovery
	// <nil>
}

// Refresh moves an iterator to the current state and keeps its position;
// SetBounds changes its bounds and unpositions it.
func ExampleIterator_Refresh() {
	dir, err := os.MkdirTemp("", "strata-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	for _, k := range []string{"a", "c", "e"} {
		if err := d.Put([]byte(k), []byte("1"), nil); err != nil {
			panic(err)
		}
	}
	it := d.NewIterator(nil)
	defer it.Close()
	it.Seek([]byte("c"))
	if err := d.Put([]byte("d"), []byte("2"), nil); err != nil {
		panic(err)
	}
	it.Next()
	fmt.Println("before Refresh, after c:", string(it.Key()))
	it.Prev()
	if err := it.Refresh(); err != nil {
		panic(err)
	}
	fmt.Println("after Refresh, at:", string(it.Key()))
	it.Next()
	fmt.Println("then:", string(it.Key()))

	it.SetBounds([]byte("b"), []byte("e"))
	fmt.Println("valid after SetBounds:", it.Valid())
	for it.SeekToFirst(); it.Valid(); it.Next() {
		fmt.Print(string(it.Key()), " ")
	}
	fmt.Println()
	// Output:
	// before Refresh, after c: e
	// after Refresh, at: c
	// then: d
	// valid after SetBounds: false
	// c d
}

// An EventListener hears of background work; Close delivers every event
// before it returns.
func ExampleEventListener() {
	dir, err := os.MkdirTemp("", "strata-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	var lines []string // written by the event goroutine only, read after Close
	l := &db.EventListener{
		FlushEnd: func(i db.FlushInfo) {
			lines = append(lines, fmt.Sprintf("flushed %d table(s) to L%d", len(i.Output), i.Output[0].Level))
		},
		TableCreated: func(i db.TableCreateInfo) {
			lines = append(lines, "table created by "+i.Reason)
		},
	}
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, EventListener: l})
	if err != nil {
		panic(err)
	}
	if err := d.Put([]byte("k"), []byte("v"), nil); err != nil {
		panic(err)
	}
	if err := d.Flush(); err != nil {
		panic(err)
	}
	if err := d.Close(); err != nil {
		panic(err)
	}
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// table created by flush
	// flushed 1 table(s) to L0
}

// Metrics returns typed counters; String renders them as a table.
func ExampleDB_Metrics() {
	dir, err := os.MkdirTemp("", "strata-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	for _, k := range []string{"a", "b", "c"} {
		if err := d.Put([]byte(k), []byte("v"), nil); err != nil {
			panic(err)
		}
	}
	if err := d.Flush(); err != nil {
		panic(err)
	}
	m := d.Metrics()
	fmt.Println("keys written:", m.Writes.Keys)
	fmt.Println("flushes:", m.Flush.Count, "L0 files:", m.Levels[0].NumFiles)
	fmt.Println(strings.SplitN(m.String(), "\n", 2)[0])
	// Output:
	// keys written: 3
	// flushes: 1 L0 files: 1
	// level | files      size  score  r-amp |       in     read  written    moved  comps  w-amp
}

// Options.Logger takes any *slog.Logger; by default the log goes to the
// file LOG in the database directory.
func ExampleLogger() {
	dir, err := os.MkdirTemp("", "strata-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	var buf strings.Builder
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		// Drop the time so that the output is stable.
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, Logger: logger})
	if err != nil {
		panic(err)
	}
	if err := d.Close(); err != nil {
		panic(err)
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, "name=wal_recovery_mode") {
			fmt.Println(line)
		}
	}
	// Output:
	// level=INFO msg=option section=DBOptions name=wal_recovery_mode value=kTolerateCorruptedTailRecords
}

// Iterating over the keys with one prefix, with no prefix extractor: the
// prefix is the lower bound and PrefixUpperBound the upper bound.
func ExamplePrefixUpperBound() {
	dir, _ := os.MkdirTemp("", "strata-example")
	defer os.RemoveAll(dir)
	d, _ := db.Open(dir, &db.Options{CreateIfMissing: true})
	defer d.Close()
	for _, k := range []string{"event:1", "event:2", "user:1", "user:2", "users"} {
		d.Put([]byte(k), nil, nil)
	}
	p := []byte("user:")
	it := d.NewIterator(&db.ReadOptions{LowerBound: p, UpperBound: db.PrefixUpperBound(p)})
	defer it.Close()
	for it.SeekToFirst(); it.Valid(); it.Next() {
		fmt.Println(string(it.Key()))
	}
	// Output:
	// user:1
	// user:2
}
