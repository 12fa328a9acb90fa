package db_test

import (
	"fmt"
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
