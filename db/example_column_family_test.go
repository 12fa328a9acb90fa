package db_test

import (
	"fmt"
	"log"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/prefix"
	"github.com/stratadb/strata/vfs"
)

// A column family is a key space of its own, with its own options (here a
// prefix extractor), in the same database: one WAL, one sequence. The
// family is there when the database opens again, with the options its
// OPTIONS section records.
func ExampleDB_CreateColumnFamily() {
	fs := vfs.NewMem()
	d, err := db.Open("app", &db.Options{CreateIfMissing: true, FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	users, err := d.CreateColumnFamily("users", &db.ColumnFamilyOptions{
		PrefixExtractor: prefix.Fixed(4),
		BloomBitsPerKey: 10,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := users.Put([]byte("u001:name"), []byte("ada"), nil); err != nil {
		log.Fatal(err)
	}
	// The same key in the default family is another key.
	if err := d.Put([]byte("u001:name"), []byte("not a user"), nil); err != nil {
		log.Fatal(err)
	}
	if err := d.Close(); err != nil {
		log.Fatal(err)
	}

	d, err = db.Open("app", &db.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	for _, cf := range d.ColumnFamilies() {
		v, err := cf.Get([]byte("u001:name"), nil)
		if err != nil {
			log.Fatal(err)
		}
		ex, _ := cf.GetProperty(db.PropPrefixExtractor)
		fmt.Printf("%s (id %d, extractor %s): %s\n", cf.Name(), cf.ID(), ex, v)
	}
	// Output:
	// default (id 0, extractor nullptr): not a user
	// users (id 1, extractor rocksdb.FixedPrefix.4): ada
}

// A Batch may write to several families; it is applied atomically across
// them, and a snapshot sees all of them at one point.
func ExampleBatch_PutCF() {
	d, err := db.Open("bank", &db.Options{CreateIfMissing: true, FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	accounts, err := d.CreateColumnFamily("accounts", nil)
	if err != nil {
		log.Fatal(err)
	}
	journal, err := d.CreateColumnFamily("journal", nil)
	if err != nil {
		log.Fatal(err)
	}

	b := db.NewBatch()
	b.PutCF(accounts, []byte("alice"), []byte("90"))
	b.PutCF(accounts, []byte("bob"), []byte("10"))
	b.PutCF(journal, []byte("0001"), []byte("alice->bob 10"))
	if err := d.Write(b, &db.WriteOptions{Sync: true}); err != nil {
		log.Fatal(err)
	}
	snap := d.NewSnapshot()
	defer snap.Release()

	b = db.NewBatch()
	b.PutCF(accounts, []byte("alice"), []byte("0"))
	b.PutCF(accounts, []byte("bob"), []byte("100"))
	b.PutCF(journal, []byte("0002"), []byte("alice->bob 90"))
	if err := d.Write(b, nil); err != nil {
		log.Fatal(err)
	}

	for _, ro := range []*db.ReadOptions{{Snapshot: snap}, nil} {
		alice, err := accounts.Get([]byte("alice"), ro)
		if err != nil {
			log.Fatal(err)
		}
		it := journal.NewIterator(ro)
		n := 0
		for it.SeekToFirst(); it.Valid(); it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("alice has %s, journal has %d entries\n", alice, n)
	}
	// Output:
	// alice has 90, journal has 1 entries
	// alice has 0, journal has 2 entries
}
