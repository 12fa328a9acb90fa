package db_test

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// benchDB fills a database with n 16-byte keys and 100-byte values, in
// memtables only (flush=false) or in tables.
func benchDB(b *testing.B, n int, flush bool) *db.DB {
	d, err := db.Open(b.TempDir(), &db.Options{CreateIfMissing: true, WriteBufferSize: 256 << 20,
		BlockCacheSize: 256 << 20, DisableAutoCompactions: true})
	require.NoError(b, err)
	key := make([]byte, 16)
	val := make([]byte, 100)
	batch := db.NewBatch()
	for i := 0; i < n; i++ {
		binary.BigEndian.PutUint64(key, uint64(i)*2654435761%uint64(n))
		binary.BigEndian.PutUint64(val, uint64(i))
		batch.Put(key, val)
		if batch.Count() == 1000 {
			require.NoError(b, d.Write(batch, &db.WriteOptions{DisableWAL: true}))
			batch.Reset()
		}
	}
	require.NoError(b, d.Write(batch, &db.WriteOptions{DisableWAL: true}))
	if flush {
		require.NoError(b, d.Flush())
	}
	return d
}

// BenchmarkIterNext reports the cost of one Iterator.Next (ns per key),
// over memtables and over tables.
func BenchmarkIterNext(b *testing.B) {
	const n = 200000
	for _, src := range []struct {
		name  string
		flush bool
	}{{"memtable", false}, {"tables", true}} {
		b.Run(src.name, func(b *testing.B) {
			d := benchDB(b, n, src.flush)
			defer d.Close()
			it := d.NewIterator(nil)
			defer it.Close()
			it.SeekToFirst()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if !it.Valid() {
					it.SeekToFirst()
				}
				_ = it.Key()
				_ = it.Value()
				it.Next()
			}
		})
	}
}

// BenchmarkIterPrev is BenchmarkIterNext backwards.
func BenchmarkIterPrev(b *testing.B) {
	d := benchDB(b, 200000, true)
	defer d.Close()
	it := d.NewIterator(nil)
	defer it.Close()
	it.SeekToLast()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !it.Valid() {
			it.SeekToLast()
		}
		it.Prev()
	}
}

// BenchmarkGet reports point lookups of existing keys from tables.
func BenchmarkGet(b *testing.B) {
	const n = 200000
	d := benchDB(b, n, true)
	defer d.Close()
	key := make([]byte, 16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		binary.BigEndian.PutUint64(key, uint64(i)*7919%n)
		if _, err := d.Get(key, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBoundedScanLog reads ranges of consecutive keys (16 or 256 at a
// random start, with an iterator bounded to the range, as a raft log's
// Entries reads them) from a log-shaped database: 20,000 keys written in
// order, flushed into l0 disjoint L0 tables, the newest keys in the
// memtable. A new iterator per range.
func BenchmarkBoundedScanLog(b *testing.B) {
	const n = 20000
	for _, l0 := range []int{3, 12} {
		for _, span := range []int{16, 256} {
			b.Run(fmt.Sprintf("l0=%d/span=%d", l0, span), func(b *testing.B) {
				d, err := db.Open(b.TempDir(), &db.Options{CreateIfMissing: true, DisableAutoCompactions: true})
				require.NoError(b, err)
				defer d.Close()
				key := func(i int) []byte { return binary.BigEndian.AppendUint64([]byte("log/"), uint64(i)) }
				val := make([]byte, 128)
				per := n / (l0 + 1)
				for i := 0; i < n; i++ {
					require.NoError(b, d.Put(key(i), val, &db.WriteOptions{DisableWAL: true}))
					if (i+1)%per == 0 && (i+1)/per <= l0 {
						require.NoError(b, d.Flush())
					}
				}
				rng := rand.New(rand.NewSource(1))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					lo := rng.Intn(n - span)
					it := d.NewIterator(&db.ReadOptions{LowerBound: key(lo), UpperBound: key(lo + span)})
					got := 0
					for it.SeekToFirst(); it.Valid(); it.Next() {
						got++
					}
					if got != span {
						b.Fatalf("range at %d: %d keys", lo, got)
					}
					require.NoError(b, it.Close())
				}
			})
		}
	}
}
