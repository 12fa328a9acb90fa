package db_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/table"
)

// ExampleDB_Ingest builds an external table file with table.ExternalWriter
// and ingests it: the keys appear atomically, newer than every earlier
// write, and a snapshot taken before does not see them.
func ExampleDB_Ingest() {
	d, cleanup := exampleDB(nil)
	defer cleanup()
	if err := d.Put([]byte("apple"), []byte("old"), nil); err != nil {
		log.Fatal(err)
	}
	snap := d.NewSnapshot()
	defer snap.Release()

	dir, err := os.MkdirTemp("", "strata-ingest")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "fruit.sst")
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	w := table.NewExternalWriter(f, table.ExternalWriterOptions{BloomBitsPerKey: 10})
	for _, kv := range [][2]string{{"apple", "new"}, {"banana", "yellow"}, {"cherry", "red"}} {
		if err := w.Put([]byte(kv[0]), []byte(kv[1])); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		log.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}

	// Move: link the file into the database and remove path afterwards.
	if err := d.Ingest([]string{path}, &db.IngestOptions{Move: true}); err != nil {
		log.Fatal(err)
	}
	it := d.NewIterator(nil)
	for it.SeekToFirst(); it.Valid(); it.Next() {
		fmt.Printf("%s=%s\n", it.Key(), it.Value())
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	v, err := d.Get([]byte("apple"), &db.ReadOptions{Snapshot: snap})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("apple at the earlier snapshot=%s\n", v)
	_, err = os.Stat(path)
	fmt.Println("source removed:", os.IsNotExist(err))
	// Output:
	// apple=new
	// banana=yellow
	// cherry=red
	// apple at the earlier snapshot=old
	// source removed: true
}
