package db_test

import (
	"bytes"
	"fmt"
	"log"
	"time"

	"github.com/stratadb/strata/db"
)

// dropTemp removes every key under "tmp/" when compactions rewrite it,
// and redacts values of keys under "card/".
type dropTemp struct{}

func (dropTemp) Name() string { return "example.DropTemp" }

func (dropTemp) Filter(level int, key, value []byte) (db.FilterDecision, []byte) {
	switch {
	case bytes.HasPrefix(key, []byte("tmp/")):
		return db.FilterRemove, nil
	case bytes.HasPrefix(key, []byte("card/")):
		return db.FilterChangeValue, []byte("****")
	}
	return db.FilterKeep, nil
}

// A compaction filter garbage-collects in the background: here CompactRange
// runs it over everything, and removes the temporary keys and redacts the
// card numbers.
func ExampleCompactionFilter() {
	d, cleanup := exampleDB(&db.Options{CompactionFilter: dropTemp{}})
	defer cleanup()
	for _, kv := range [][2]string{{"card/alice", "4111-1111"}, {"tmp/upload-1", "partial"}, {"user/alice", "Alice"}} {
		if err := d.Put([]byte(kv[0]), []byte(kv[1]), nil); err != nil {
			log.Fatal(err)
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		log.Fatal(err)
	}
	it := d.NewIterator(nil)
	defer it.Close()
	for it.SeekToFirst(); it.Valid(); it.Next() {
		fmt.Printf("%s=%s\n", it.Key(), it.Value())
	}
	// Output:
	// card/alice=****
	// user/alice=Alice
}

// With Options.TTL values are stored in RocksDB's DBWithTTL format and read
// back without their timestamp; a value older than the TTL reads as absent
// until a compaction drops it.
func ExampleOptions_ttl() {
	d, cleanup := exampleDB(&db.Options{TTL: 24 * time.Hour})
	defer cleanup()
	if err := d.Put([]byte("session"), []byte("token"), nil); err != nil {
		log.Fatal(err)
	}
	v, err := d.Get([]byte("session"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(v))
	// Output: token
}
