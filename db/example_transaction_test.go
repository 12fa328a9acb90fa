package db_test

import (
	"errors"
	"fmt"
	"log"
	"strconv"
	"sync"

	"github.com/stratadb/strata/db"
)

// An event log that allocates the next event number: a read-then-write that
// needs no mutex of the application's. Update retries the transactions
// that lose a race (ErrConflict), so every event gets its own number.
func ExampleDB_Update() {
	d, cleanup := exampleDB(nil)
	defer cleanup()
	appendEvent := func(payload string) error {
		return d.Update(func(tx *db.Transaction) error {
			n := 0
			v, err := tx.GetForUpdate([]byte("next"))
			switch {
			case err == nil:
				n, _ = strconv.Atoi(string(v))
			case !errors.Is(err, db.ErrNotFound):
				return err
			}
			if err := tx.Put([]byte(fmt.Sprintf("event/%06d", n)), []byte(payload)); err != nil {
				return err
			}
			return tx.Put([]byte("next"), []byte(strconv.Itoa(n+1)))
		})
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				if err := appendEvent("hello"); err != nil {
					log.Fatal(err)
				}
			}
		}()
	}
	wg.Wait()
	err := d.View(func(tx *db.Transaction) error {
		it := tx.NewIterator(&db.ReadOptions{LowerBound: []byte("event/"), UpperBound: []byte("event0")})
		defer it.Close()
		events := 0
		for it.SeekToFirst(); it.Valid(); it.Next() {
			events++
		}
		next, err := tx.Get([]byte("next"))
		fmt.Println(events, "events, next is", string(next))
		return errors.Join(it.Err(), err)
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output: 100 events, next is 100
}

// A Serializable transaction also conflicts on what it read: here, on the
// range its iterator scanned, into which another writer inserted.
func ExampleTransaction_NewIterator() {
	d, cleanup := exampleDB(nil)
	defer cleanup()
	if err := d.Put([]byte("item/1"), []byte("x"), nil); err != nil {
		log.Fatal(err)
	}
	tx := d.NewTransaction(&db.TransactionOptions{Isolation: db.Serializable})
	it := tx.NewIterator(&db.ReadOptions{LowerBound: []byte("item/"), UpperBound: []byte("item0")})
	n := 0
	for it.SeekToFirst(); it.Valid(); it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	// Someone adds an item before the count is recorded.
	if err := d.Put([]byte("item/2"), []byte("y"), nil); err != nil {
		log.Fatal(err)
	}
	if err := tx.Put([]byte("count"), []byte(strconv.Itoa(n))); err != nil {
		log.Fatal(err)
	}
	fmt.Println(errors.Is(tx.Commit(), db.ErrConflict))
	// Output: true
}

// An indexed batch reads its own writes over the database.
func ExampleDB_NewIndexedBatch() {
	d, cleanup := exampleDB(nil)
	defer cleanup()
	if err := d.Put([]byte("a"), []byte("db"), nil); err != nil {
		log.Fatal(err)
	}
	b := d.NewIndexedBatch()
	b.Put([]byte("b"), []byte("batch"))
	b.Delete([]byte("a"))
	it := b.NewIterator(nil)
	for it.SeekToFirst(); it.Valid(); it.Next() {
		fmt.Printf("%s=%s\n", it.Key(), it.Value())
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	if err := d.Write(b, nil); err != nil {
		log.Fatal(err)
	}
	// Output: b=batch
}
