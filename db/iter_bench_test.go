package db_test

import (
	"encoding/binary"
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
