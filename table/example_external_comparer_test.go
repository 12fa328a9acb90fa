package table_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/table"
)

// ExampleExternalWriterOptions_comparer builds an external file for a
// column family ordered by db.ReverseBytewiseComparer: keys are added in
// that order (largest first), and the file records the comparator's name,
// so Ingest accepts it into the reverse family only.
func ExampleExternalWriterOptions_comparer() {
	dir, err := os.MkdirTemp("", "strata-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	rev := db.ReverseBytewiseComparer()
	d, err := db.Open(filepath.Join(dir, "db"), &db.Options{CreateIfMissing: true, Comparer: rev})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	path := filepath.Join(dir, "rev.sst")
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	w := table.NewExternalWriter(f, table.ExternalWriterOptions{Comparer: rev})
	for _, k := range []string{"c", "b", "a"} {
		if err := w.Put([]byte(k), []byte("v-"+k)); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("ascending refused:", w.Put([]byte("z"), nil) != nil)
	info, err := w.Finish()
	if err != nil {
		log.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("smallest %q, largest %q\n", info.Smallest, info.Largest)
	if err := d.Ingest([]string{path}, nil); err != nil {
		log.Fatal(err)
	}
	it := d.NewIterator(nil)
	for it.SeekToFirst(); it.Valid(); it.Next() {
		fmt.Printf("%s ", it.Key())
	}
	fmt.Println()
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// ascending refused: true
	// smallest "c", largest "a"
	// c b a
}
