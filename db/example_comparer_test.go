package db_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log"

	"github.com/stratadb/strata/db"
)

// Newest first: with RocksDB's reverse bytewise comparator, iteration from
// SeekToFirst starts at the largest key, so keys of big-endian timestamps
// come back latest first. The bounds are in that order too: LowerBound is
// where iteration starts.
func ExampleReverseBytewiseComparer() {
	d, cleanup := exampleDB(&db.Options{Comparer: db.ReverseBytewiseComparer()})
	defer cleanup()
	for _, k := range []string{"2026-01-03", "2026-01-01", "2026-01-02", "2025-12-31"} {
		if err := d.Put([]byte(k), []byte("event"), nil); err != nil {
			log.Fatal(err)
		}
	}
	it := d.NewIterator(&db.ReadOptions{LowerBound: []byte("2026-01-02"), UpperBound: []byte("2025")})
	defer it.Close()
	for it.SeekToFirst(); it.Valid(); it.Next() {
		fmt.Println(string(it.Key()))
	}
	// Output:
	// 2026-01-02
	// 2026-01-01
	// 2025-12-31
}

// uint64LE orders 8-byte little-endian unsigned numbers numerically, which
// bytewise order does not. Its Name is recorded in the database: reopening
// it needs the same comparer. Separator and Successor are optional; they
// let table indexes hold shorter keys (here they only pick rounder numbers
// of the same width, keeping the index correct: a <= sep < b).
type uint64LE struct{}

func (uint64LE) Name() string { return "example.Uint64LittleEndian" }

func (uint64LE) Compare(a, b []byte) int {
	if len(a) != 8 || len(b) != 8 {
		// Not numbers (an application's mistake): still a total order,
		// shorter first.
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return bytes.Compare(a, b)
	}
	x, y := binary.LittleEndian.Uint64(a), binary.LittleEndian.Uint64(b)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// Separator returns a key k with a <= k < b: the smallest multiple of 1024
// at or above a when it is below b, else a.
func (uint64LE) Separator(dst, a, b []byte) []byte {
	if len(a) != 8 || len(b) != 8 {
		return append(dst, a...)
	}
	x, y := binary.LittleEndian.Uint64(a), binary.LittleEndian.Uint64(b)
	if r := (x + 1023) &^ 1023; r >= x && r < y {
		x = r
	}
	return binary.LittleEndian.AppendUint64(dst, x)
}

// Successor returns a key at or above a (here a itself).
func (uint64LE) Successor(dst, a []byte) []byte { return append(dst, a...) }

// A user Comparer: keys are little-endian uint64s, ordered numerically in
// a column family of their own.
func ExampleComparer() {
	d, cleanup := exampleDB(&db.Options{CreateMissingColumnFamilies: true,
		ColumnFamilies: map[string]*db.ColumnFamilyOptions{"ids": {Comparer: uint64LE{}}}})
	defer cleanup()
	ids := d.ColumnFamily("ids")
	for _, n := range []uint64{300, 2, 70000, 1} {
		if err := ids.Put(binary.LittleEndian.AppendUint64(nil, n), nil, nil); err != nil {
			log.Fatal(err)
		}
	}
	if err := ids.Flush(); err != nil {
		log.Fatal(err)
	}
	it := ids.NewIterator(nil)
	defer it.Close()
	for it.Seek(binary.LittleEndian.AppendUint64(nil, 2)); it.Valid(); it.Next() {
		fmt.Println(binary.LittleEndian.Uint64(it.Key()))
	}
	// Output:
	// 2
	// 300
	// 70000
}
