package table_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"

	"github.com/stratadb/strata/table"
)

// ExampleNewExternalWriter writes an external table file: puts and
// deletes in ascending key order, range deletions in any order. Finish
// describes the file.
func ExampleNewExternalWriter() {
	var buf bytes.Buffer // usually an *os.File, synced and closed after Finish
	w := table.NewExternalWriter(&buf, table.ExternalWriterOptions{
		BlockSize:       16 << 10,
		Compression:     table.SnappyCompression,
		BloomBitsPerKey: 10,
	})
	for _, k := range []string{"a", "b", "c"} {
		if err := w.Put([]byte(k), []byte("value-"+k)); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Delete([]byte("d")); err != nil {
		log.Fatal(err)
	}
	if err := w.DeleteRange([]byte("m"), []byte("p")); err != nil {
		log.Fatal(err)
	}
	err := w.Put([]byte("b"), nil) // out of order
	fmt.Println("out of order is ErrInvalidArgument:", errors.Is(err, table.ErrInvalidArgument))
	info, err := w.Finish()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("points %q..%q: %d; range deletions %q..%q: %d; size matches: %v\n",
		info.Smallest, info.Largest, info.NumEntries,
		info.SmallestRangeDel, info.LargestRangeDel, info.NumRangeDeletions,
		info.Size == uint64(buf.Len()))
	// Output:
	// out of order is ErrInvalidArgument: true
	// points "a".."d": 4; range deletions "m".."p": 1; size matches: true
}
