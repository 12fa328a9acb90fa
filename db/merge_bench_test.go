package db_test

import (
	"encoding/binary"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// mergeBenchDB holds n uint64add counters, each a Put base with ops merge
// operands above it, split between a table and the memtable.
func mergeBenchDB(b *testing.B, n, ops int) *db.DB {
	d, err := db.Open(b.TempDir(), &db.Options{CreateIfMissing: true, WriteBufferSize: 64 << 20,
		DisableAutoCompactions: true, MergeOperator: db.NewUInt64AddOperator()})
	require.NoError(b, err)
	key := make([]byte, 16)
	one := binary.LittleEndian.AppendUint64(nil, 1)
	wo := &db.WriteOptions{DisableWAL: true}
	for i := 0; i < n; i++ {
		binary.BigEndian.PutUint64(key, uint64(i))
		require.NoError(b, d.Put(key, one, wo))
	}
	for j := 0; j < ops; j++ {
		if j == ops/2 {
			require.NoError(b, d.Flush())
		}
		for i := 0; i < n; i++ {
			binary.BigEndian.PutUint64(key, uint64(i))
			require.NoError(b, d.Merge(key, one, wo))
		}
	}
	return d
}

// BenchmarkMergeGet reports Get of a key with 4 operands over a base.
func BenchmarkMergeGet(b *testing.B) {
	const n = 10000
	d := mergeBenchDB(b, n, 4)
	defer d.Close()
	key := make([]byte, 16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		binary.BigEndian.PutUint64(key, uint64(i)*7919%n)
		v, err := d.Get(key, nil)
		if err != nil || binary.LittleEndian.Uint64(v) != 5 {
			b.Fatal(err, v)
		}
	}
}

// BenchmarkMergeIter reports the cost per key of scanning keys with 4
// operands over a base, forward and backward.
func BenchmarkMergeIter(b *testing.B) {
	d := mergeBenchDB(b, 10000, 4)
	defer d.Close()
	for _, dir := range []string{"next", "prev"} {
		b.Run(dir, func(b *testing.B) {
			it := d.NewIterator(nil)
			defer it.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if !it.Valid() {
					if dir == "next" {
						it.SeekToFirst()
					} else {
						it.SeekToLast()
					}
				}
				_ = it.Value()
				if dir == "next" {
					it.Next()
				} else {
					it.Prev()
				}
			}
		})
	}
}
