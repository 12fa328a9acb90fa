package db_test

import (
	"encoding/binary"
	"math/rand"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// BenchmarkGetParallel reports point lookups of existing keys from tables
// whose blocks are all in the block cache, by b.RunParallel goroutines
// (run with -cpu 1,2,4: ns/op is wall time per lookup over all of them, so
// a read path that scales halves it from -cpu 1 to 2 on two cores). The
// values are 1 KB, as YCSB's records. uniform spreads the lookups over
// every key; zipf draws them YCSB-like (s=1.1, so a few keys, and the
// blocks and cache shards holding them, take most lookups); hot reads one
// key, the worst case for any shared counter or lock on the hit path.
// cpu-ns/op is the process's CPU time (user and system) per lookup: on a
// machine shared with other work, wall time per op follows the CPU left
// over, while CPU time per op follows what a lookup costs, contention for
// shared cache lines included.
func BenchmarkGetParallel(b *testing.B) {
	const n = 50000
	d, err := db.Open(b.TempDir(), &db.Options{CreateIfMissing: true, WriteBufferSize: 256 << 20,
		BlockCacheSize: 256 << 20, DisableAutoCompactions: true})
	require.NoError(b, err)
	defer d.Close()
	val := make([]byte, 1000)
	batch := db.NewBatch()
	for i := 0; i < n; i++ {
		binary.BigEndian.PutUint64(val, uint64(i))
		batch.Put(getParallelKey(nil, uint64(i)), val)
		if batch.Count() == 1000 {
			require.NoError(b, d.Write(batch, &db.WriteOptions{DisableWAL: true}))
			batch.Reset()
		}
	}
	require.NoError(b, d.Write(batch, &db.WriteOptions{DisableWAL: true}))
	require.NoError(b, d.Flush())
	// Warm the cache: every block read once.
	for i := 0; i < n; i++ {
		_, err := d.Get(getParallelKey(nil, uint64(i)), nil)
		require.NoError(b, err)
	}
	for _, dist := range []string{"uniform", "zipf", "hot"} {
		b.Run(dist, func(b *testing.B) {
			b.ReportAllocs()
			cpu0, cpuOK := processCPU(b)
			b.ResetTimer()
			defer func() {
				b.StopTimer()
				if cpu1, ok := processCPU(b); ok && cpuOK {
					b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
				}
			}()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewSource(rand.Int63()))
				z := rand.NewZipf(rng, 1.1, 1, n-1)
				key := make([]byte, 0, 16)
				for pb.Next() {
					var i uint64
					switch dist {
					case "uniform":
						i = uint64(rng.Intn(n))
					case "zipf":
						// Scatter the hot ranks over the key space, as
						// YCSB's hashed keys do.
						i = z.Uint64() * 2654435761 % n
					}
					key = getParallelKey(key[:0], i)
					if _, err := d.Get(key, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func getParallelKey(dst []byte, i uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, "user"...), i)
}
