package memtable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stratadb/strata/internal/base"
)

// newPrefaulted returns New(size) with every page of its arena touched, so
// that insert benchmarks measure the skiplist rather than page faults.
func newPrefaulted(size int) *MemTable {
	m := New(size)
	for i := 0; i < len(m.arena.buf); i += 4096 {
		m.arena.buf[i] = 0
	}
	return m
}

// benchInsert adds keys[i%len(keys)] with sequence number i+1 and a 100-byte
// value, b.N times, into 64 MiB memtables (a fresh one whenever one fills,
// outside the timer), as the db's write path does with the default write
// buffer size. The keys are 16 bytes, like db_bench's.
func benchInsert(b *testing.B, keys [][]byte) {
	benchInsertWith(b, keys, (*MemTable).Add)
}

func benchInsertWith(b *testing.B, keys [][]byte, add func(*MemTable, base.InternalKey, []byte) error) {
	value := make([]byte, 100)
	// The summary prefix the db would pass after the first memtable: the
	// keys' common prefix.
	lo, hi := slices.MinFunc(keys, bytes.Compare), slices.MaxFunc(keys, bytes.Compare)
	newPrefaulted := func(size int) *MemTable {
		m := newPrefaulted(size)
		m.SetSummaryPrefix(lo[:base.SharedPrefixLen(lo, hi)])
		return m
	}
	m := newPrefaulted(64 << 20)
	b.SetBytes(int64(len(keys[0]) + len(value)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := base.MakeInternalKey(keys[i%len(keys)], base.SeqNum(i+1), base.KindSet)
		err := add(m, k, value)
		if err == ErrArenaFull {
			b.StopTimer()
			m = newPrefaulted(64 << 20)
			b.StartTimer()
			err = add(m, k, value)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// benchInsertKeys returns n distinct 16-byte keys in ascending order.
func benchInsertKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "%016d", i)
	}
	return keys
}

// BenchmarkInsertAscending is db_bench's fillseq at the memtable: every key
// sorts after all the others.
func BenchmarkInsertAscending(b *testing.B) {
	benchInsert(b, benchInsertKeys(1<<20))
}

// BenchmarkInsertDescending: every key sorts before all the others.
func BenchmarkInsertDescending(b *testing.B) {
	keys := benchInsertKeys(1 << 20)
	slices.Reverse(keys)
	benchInsert(b, keys)
}

// BenchmarkInsertRandom is db_bench's fillrandom at the memtable: keys in a
// fixed random order.
func BenchmarkInsertRandom(b *testing.B) {
	keys := benchInsertKeys(1 << 20)
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	benchInsert(b, keys)
}

// BenchmarkInsertRandomConcurrentPath is BenchmarkInsertRandom through
// AddConcurrent from one goroutine: what the concurrent path costs.
func BenchmarkInsertRandomConcurrentPath(b *testing.B) {
	keys := benchInsertKeys(1 << 20)
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	benchInsertWith(b, keys, (*MemTable).AddConcurrent)
}

// BenchmarkInsertConcurrentRandom is BenchmarkInsertRandom with AddConcurrent
// from GOMAXPROCS goroutines (-cpu sets how many) into one memtable large
// enough for every insert.
func BenchmarkInsertConcurrentRandom(b *testing.B) {
	keys := benchInsertKeys(1 << 20)
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	value := make([]byte, 100)
	m := newPrefaulted(int(min(uint64(b.N)*(maxEntryBytes(16, 100)+8)+EmptySize, MaxArenaSize)))
	var next atomic.Uint64
	b.SetBytes(int64(len(keys[0]) + len(value)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			k := base.MakeInternalKey(keys[i%uint64(len(keys))], base.SeqNum(i), base.KindSet)
			if err := m.AddConcurrent(k, value); err != nil {
				panic(err) // b.Fatal may not run off the benchmark goroutine
			}
		}
	})
}

// BenchmarkInsertRandomBinary is BenchmarkInsertRandom with db_bench's key
// shape: a big-endian integer below 1M, padded with '0' to 16 bytes. The
// link summaries decide most of its comparisons (BenchmarkInsertRandom's
// decimal text keys all share their summary, so keys decide there).
func BenchmarkInsertRandomBinary(b *testing.B) {
	keys := make([][]byte, 1<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range keys {
		keys[i] = []byte("0000000000000000")
		binary.BigEndian.PutUint64(keys[i], uint64(rng.IntN(1000000)))
	}
	benchInsert(b, keys)
}
