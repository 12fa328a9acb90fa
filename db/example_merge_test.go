package db_test

import (
	"encoding/binary"
	"fmt"
	"log"

	"github.com/stratadb/strata/db"
)

// A counter kept with RocksDB's uint64add operator: each Merge adds an
// 8-byte little-endian number without reading the value first.
func ExampleDB_Merge() {
	d, cleanup := exampleDB(&db.Options{MergeOperator: db.MergeOperatorByName("uint64add")})
	defer cleanup()
	one := binary.LittleEndian.AppendUint64(nil, 1)
	for i := 0; i < 3; i++ {
		if err := d.Merge([]byte("visits"), one, nil); err != nil {
			log.Fatal(err)
		}
	}
	v, err := d.Get([]byte("visits"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(binary.LittleEndian.Uint64(v))
	// Output: 3
}

// RocksDB's stringappend operator joins operands with a delimiter; a Put
// starts over, and snapshots keep reading the operands they saw.
func ExampleNewStringAppendOperator() {
	d, cleanup := exampleDB(&db.Options{MergeOperator: db.NewStringAppendOperator(",")})
	defer cleanup()
	must := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	must(d.Merge([]byte("tags"), []byte("red"), nil))
	must(d.Merge([]byte("tags"), []byte("green"), nil))
	s := d.NewSnapshot()
	defer s.Release()
	b := db.NewBatch()
	b.Merge([]byte("tags"), []byte("blue"))
	must(d.Write(b, nil))
	must(d.Flush())
	must(d.CompactRange(nil, nil))
	now, err := d.Get([]byte("tags"), nil)
	must(err)
	then, err := d.Get([]byte("tags"), &db.ReadOptions{Snapshot: s})
	must(err)
	fmt.Printf("%s | %s\n", now, then)
	must(d.Put([]byte("tags"), []byte("black"), nil))
	must(d.Merge([]byte("tags"), []byte("white"), nil))
	now, err = d.Get([]byte("tags"), nil)
	must(err)
	fmt.Printf("%s\n", now)
	// Output:
	// red,green,blue | red,green
	// black,white
}

// SingleDelete removes a key written once with Put; compaction drops both.
func ExampleDB_SingleDelete() {
	d, cleanup := exampleDB(nil)
	defer cleanup()
	if err := d.Put([]byte("session"), []byte("open"), nil); err != nil {
		log.Fatal(err)
	}
	if err := d.SingleDelete([]byte("session"), nil); err != nil {
		log.Fatal(err)
	}
	_, err := d.Get([]byte("session"), nil)
	fmt.Println(err == db.ErrNotFound)
	// Output: true
}
