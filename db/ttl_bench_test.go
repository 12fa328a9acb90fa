package db_test

import (
	"encoding/binary"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/vfs"
	"github.com/stretchr/testify/require"
)

// ttlBenchDB holds n 16-byte keys and 100-byte values in one table, in
// memory, with the given TTL (0: none; else long enough that nothing
// expires) and clock (nil: time.Now).
func ttlBenchDB(b *testing.B, n int, ttl time.Duration, clock func() time.Time) *db.DB {
	d, err := db.Open("/db", &db.Options{FS: vfs.NewMem(), CreateIfMissing: true, WriteBufferSize: 256 << 20,
		BlockCacheSize: 256 << 20, DisableAutoCompactions: true, TTL: ttl, Clock: clock})
	require.NoError(b, err)
	key := make([]byte, 16)
	val := make([]byte, 100)
	wo := &db.WriteOptions{DisableWAL: true}
	for i := 0; i < n; i++ {
		binary.BigEndian.PutUint64(key, uint64(i))
		binary.BigEndian.PutUint64(val, uint64(i))
		require.NoError(b, d.Put(key, val, wo))
	}
	require.NoError(b, d.Flush())
	return d
}

// BenchmarkTTLRead compares reads of a database without TTL ("off") and
// with one ("on": each value carries its write time, which reads check
// against the clock and strip): Get of random keys, and Iterator.Next. Each
// iteration does one operation on each database in turn, so that a shared
// machine's noise falls on both alike; the metrics are the mean ns per
// operation of each and the cost of "on" relative to "off", in percent.
// "get-coarse-clock" is get with Options.Clock a clock that costs an
// atomic load (what a coarse clock a ticker moves would cost), to tell the
// clock read of each Get apart from the rest of TTL's cost.
func BenchmarkTTLRead(b *testing.B) {
	const n = 100000
	var coarse atomic.Int64
	coarse.Store(time.Now().Unix())
	dbs := []*db.DB{ttlBenchDB(b, n, 0, nil), ttlBenchDB(b, n, 24*time.Hour, nil)}
	coarseDBs := []*db.DB{dbs[0], ttlBenchDB(b, n, 24*time.Hour, func() time.Time { return time.Unix(coarse.Load(), 0) })}
	for _, d := range append(dbs, coarseDBs[1]) {
		defer d.Close()
	}
	// report gives the mean ns per operation of each and the median, over
	// rounds, of on's time over off's in the same round (robust to the
	// bursts of a shared machine), as a cost in percent.
	report := func(b *testing.B, spent []time.Duration, ratios []float64) {
		b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "off-ns/op")
		b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "on-ns/op")
		sort.Float64s(ratios)
		if n := len(ratios); n > 0 {
			b.ReportMetric(100*(ratios[n/2]-1), "ttl-cost-%")
		}
	}
	get := func(b *testing.B, dbs []*db.DB) {
		key := make([]byte, 16)
		spent := make([]time.Duration, 2)
		var ratios []float64
		var round [2]time.Duration
		// Time batches of Gets: a clock read per Get would be a large
		// part of what is measured.
		const batch = 64
		b.ResetTimer()
		for i := 0; i < b.N; i += batch {
			for j := range dbs {
				k := (i/batch + j) % 2
				start := time.Now()
				for x := i; x < i+batch && x < b.N; x++ {
					binary.BigEndian.PutUint64(key, uint64(x)*7919%n)
					if _, err := dbs[k].Get(key, nil); err != nil {
						b.Fatal(err)
					}
				}
				round[k] = time.Since(start)
				spent[k] += round[k]
			}
			ratios = append(ratios, float64(round[1])/float64(round[0]))
		}
		b.StopTimer()
		report(b, spent, ratios)
	}
	b.Run("get", func(b *testing.B) { get(b, dbs) })
	b.Run("get-coarse-clock", func(b *testing.B) { get(b, coarseDBs) })
	b.Run("next", func(b *testing.B) {
		its := []*db.Iterator{dbs[0].NewIterator(nil), dbs[1].NewIterator(nil)}
		for _, it := range its {
			defer it.Close()
			it.SeekToFirst()
		}
		spent := make([]time.Duration, 2)
		var ratios []float64
		var round [2]time.Duration
		const batch = 1024
		b.ResetTimer()
		for i := 0; i < b.N; i += batch {
			for j := range its {
				k := (i/batch + j) % 2
				it := its[k]
				start := time.Now()
				for x := i; x < i+batch && x < b.N; x++ {
					if !it.Valid() {
						it.SeekToFirst()
					}
					_ = it.Value()
					it.Next()
				}
				round[k] = time.Since(start)
				spent[k] += round[k]
			}
			ratios = append(ratios, float64(round[1])/float64(round[0]))
		}
		b.StopTimer()
		report(b, spent, ratios)
	})
}
