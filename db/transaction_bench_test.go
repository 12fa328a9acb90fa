package db_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// BenchmarkTransactionCommit compares a transaction's commit (validation
// included) with a plain batch of the same writes, over a database with a
// flushed and a memtable part.
func BenchmarkTransactionCommit(b *testing.B) {
	var d *db.DB
	fresh := func(b *testing.B) {
		var err error
		d, err = db.Open(b.TempDir(), &db.Options{CreateIfMissing: true, WriteBufferSize: 64 << 20})
		require.NoError(b, err)
		for i := 0; i < 100000; i++ {
			require.NoError(b, d.Put([]byte(fmt.Sprintf("key%06d", i)), []byte("value"), nil))
			if i == 50000 {
				require.NoError(b, d.Flush())
			}
		}
		dd := d
		b.Cleanup(func() { _ = dd.Close() })
		b.ResetTimer()
	}
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%06d", (i*7919)%100000)) }
	b.Run("plain-batch-10-writes", func(b *testing.B) {
		fresh(b)
		for i := 0; i < b.N; i++ {
			bt := db.NewBatch()
			for j := 0; j < 10; j++ {
				bt.Put(key(i*10+j), []byte("v"))
			}
			require.NoError(b, d.Write(bt, nil))
		}
	})
	for _, iso := range []db.Isolation{db.SnapshotIsolation, db.Serializable} {
		for _, pess := range []bool{false, true} {
			o := &db.TransactionOptions{Isolation: iso, Pessimistic: pess}
			b.Run(fmt.Sprintf("txn-10-writes/iso=%d/pessimistic=%v", iso, pess), func(b *testing.B) {
				fresh(b)
				for i := 0; i < b.N; i++ {
					tx := d.NewTransaction(o)
					for j := 0; j < 10; j++ {
						require.NoError(b, tx.Put(key(i*10+j), []byte("v")))
					}
					require.NoError(b, tx.Commit())
				}
			})
		}
		b.Run(fmt.Sprintf("txn-scan-100-then-write/iso=%d", iso), func(b *testing.B) {
			o := &db.TransactionOptions{Isolation: iso}
			fresh(b)
			for i := 0; i < b.N; i++ {
				tx := d.NewTransaction(o)
				it := tx.NewIterator(nil)
				n := 0
				for it.Seek(key(i)); it.Valid() && n < 100; it.Next() {
					n++
				}
				require.NoError(b, it.Close())
				require.NoError(b, tx.Put([]byte("count"), []byte("v")))
				require.NoError(b, tx.Commit())
			}
		})
	}
}

// BenchmarkTransactionCommitDBSize: the same transaction (10 GetForUpdate
// reads and 10 writes of random existing keys, Serializable) on databases
// of 10K and 1M keys, all in tables (flushed and compacted): validation
// looks up each key of the read and write sets once, so its cost grows
// with the depth of the tree, not with the number of keys. end=rollback
// runs the same reads and writes and rolls back: the difference is what
// Commit (validation and the write) costs.
func BenchmarkTransactionCommitDBSize(b *testing.B) {
	for _, n := range []int{10000, 1000000} {
		for _, pess := range []bool{false, true} {
			for _, end := range []string{"commit", "rollback"} {
				b.Run(fmt.Sprintf("keys=%d/pessimistic=%v/end=%s", n, pess, end), func(b *testing.B) {
					d, err := db.Open(b.TempDir(), &db.Options{CreateIfMissing: true})
					require.NoError(b, err)
					defer d.Close()
					bt := db.NewBatch()
					for i := 0; i < n; i++ {
						bt.Put([]byte(fmt.Sprintf("key%08d", i)), []byte("value-value-value"))
						if bt.Count() == 1000 {
							require.NoError(b, d.Write(bt, nil))
							bt = db.NewBatch()
						}
					}
					require.NoError(b, d.Write(bt, nil))
					require.NoError(b, d.Flush())
					require.NoError(b, d.CompactRange(nil, nil))
					o := &db.TransactionOptions{Isolation: db.Serializable, Pessimistic: pess}
					rng := rand.New(rand.NewSource(1))
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						tx := d.NewTransaction(o)
						for j := 0; j < 10; j++ {
							k := []byte(fmt.Sprintf("key%08d", rng.Intn(n)))
							if _, err := tx.GetForUpdate(k); err != nil {
								b.Fatal(err)
							}
							if err := tx.Put(k, []byte("v")); err != nil {
								b.Fatal(err)
							}
						}
						if end == "rollback" {
							if err := tx.Rollback(); err != nil {
								b.Fatal(err)
							}
						} else if err := tx.Commit(); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
