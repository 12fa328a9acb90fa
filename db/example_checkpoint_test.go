package db_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"errors"
	"github.com/stratadb/strata/db"
)

func ExampleDB_Checkpoint() {
	d, cleanup := exampleDB(nil)
	defer cleanup()
	if err := d.Put([]byte("k"), []byte("v1"), nil); err != nil {
		log.Fatal(err)
	}
	parent, err := os.MkdirTemp("", "strata-checkpoint")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(parent)
	ckpt := filepath.Join(parent, "ckpt") // must not exist yet
	if err := d.Checkpoint(ckpt); err != nil {
		log.Fatal(err)
	}
	// Later writes to the source do not reach the checkpoint.
	if err := d.Put([]byte("k"), []byte("v2"), nil); err != nil {
		log.Fatal(err)
	}
	c, err := db.Open(ckpt, nil)
	if err != nil {
		log.Fatal(err)
	}
	v, err := c.Get([]byte("k"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("checkpoint: k=%s\n", v)
	if err := c.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("again:", errors.Is(d.Checkpoint(ckpt), db.ErrInvalidArgument))
	// Output:
	// checkpoint: k=v1
	// again: true
}

func ExampleDB_ApproximateSize() {
	d, cleanup := exampleDB(nil)
	defer cleanup()
	// 1000 entries stay in the first memtable, which starts small.
	for i := 0; i < 1000; i++ {
		if err := d.Put([]byte(fmt.Sprintf("key%05d", i)), make([]byte, 100), nil); err != nil {
			log.Fatal(err)
		}
	}
	mem, err := d.ApproximateSize([]byte("key00000"), []byte("key00500"),
		&db.ApproximateSizeOptions{IncludeMemtables: true, ExcludeFiles: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("memtable bytes in the lower half:", mem) // 500 × (8-byte key + 8-byte trailer + 100)
	if err := d.Flush(); err != nil {
		log.Fatal(err)
	}
	half, _ := d.ApproximateSize([]byte("key00000"), []byte("key00500"), nil)
	all, _ := d.ApproximateSize(nil, nil, nil)
	fmt.Printf("on disk, the lower half is about %.1f of the whole\n", float64(half)/float64(all))
	keys, _ := d.GetProperty(db.PropEstimateNumKeys)
	fmt.Println("estimated keys:", keys)
	_, err = d.ApproximateSize([]byte("b"), []byte("a"), nil)
	fmt.Println("start > end:", errors.Is(err, db.ErrInvalidArgument))
	// Output:
	// memtable bytes in the lower half: 58000
	// on disk, the lower half is about 0.5 of the whole
	// estimated keys: 1000
	// start > end: true
}
