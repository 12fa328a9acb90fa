package vfs_test

import (
	"fmt"
	"log"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/vfs"
)

// An application's test runs on a database in memory: no temporary
// directory, nothing to clean up. The database survives Close: opening the
// same MemFS again finds it.
func ExampleNewMem() {
	fs := vfs.NewMem()
	d, err := db.Open("app", &db.Options{CreateIfMissing: true, FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	if err := d.Put([]byte("user:1"), []byte("ada"), nil); err != nil {
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
	v, err := d.Get([]byte("user:1"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("user:1 = %s\n", v)
	// Output: user:1 = ada
}

// CrashClone shows what a power loss would leave: a write acknowledged
// with Sync survives, one without it may not (in a MemFS it never does,
// until something syncs the WAL after it).
func ExampleMemFS_CrashClone() {
	fs := vfs.NewMem()
	d, err := db.Open("app", &db.Options{CreateIfMissing: true, FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	if err := d.Put([]byte("synced"), []byte("1"), &db.WriteOptions{Sync: true}); err != nil {
		log.Fatal(err)
	}
	if err := d.Put([]byte("unsynced"), []byte("2"), nil); err != nil {
		log.Fatal(err)
	}

	// The power goes out; the machine restarts on what was on disk.
	crashed := fs.CrashClone()
	after, err := db.Open("app", &db.Options{FS: crashed})
	if err != nil {
		log.Fatal(err)
	}
	defer after.Close()
	for _, k := range []string{"synced", "unsynced"} {
		_, err := after.Get([]byte(k), nil)
		switch {
		case errors.Is(err, db.ErrNotFound):
			fmt.Printf("%s: lost\n", k)
		case err != nil:
			log.Fatal(err)
		default:
			fmt.Printf("%s: survived\n", k)
		}
	}
	// Output:
	// synced: survived
	// unsynced: lost
}

// countingFS is a wrapper FS: it counts the bytes written to every file it
// creates, and forwards everything else to the FS it embeds. Embedding the
// interface promotes FS's methods only, so the engine sees none of the
// inner FS's optional capabilities but those the wrapper forwards itself
// (here Linker): every byte the engine writes reaches countingFile.Write.
type countingFS struct {
	vfs.FS
	written atomic.Int64
}

func (fs *countingFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, written: &fs.written}, nil
}

// Link forwards hard links (vfs.Linker), so that checkpoints and ingestion
// link table files rather than copy them when the inner FS can. A link
// writes no bytes.
func (fs *countingFS) Link(oldname, newname string) error {
	l, ok := fs.FS.(vfs.Linker)
	if !ok {
		return errors.Newf("strata: link %s: the inner file system has no hard links", newname)
	}
	return l.Link(oldname, newname)
}

type countingFile struct {
	vfs.File
	written *atomic.Int64
}

func (f *countingFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.written.Add(int64(n))
	return n, err
}

// A wrapper FS sees every file operation of the engine; this one counts the
// bytes written.
func Example_wrapper() {
	fs := &countingFS{FS: vfs.NewMem()}
	d, err := db.Open("app", &db.Options{CreateIfMissing: true, FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	before := fs.written.Load()
	if err := d.Put([]byte("user:1"), make([]byte, 1000), nil); err != nil {
		log.Fatal(err)
	}
	fmt.Println("the write reached the WAL:", fs.written.Load()-before > 1000)
	if err := d.Close(); err != nil {
		log.Fatal(err)
	}
	// Output: the write reached the WAL: true
}
