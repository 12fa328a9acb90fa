package db_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stretchr/testify/require"
)

// BenchmarkPut measures one-thread Puts of 16-byte keys and 100-byte values
// (db_bench's defaults) with the WAL on, the way fillseq and fillrandom
// write: each Put is a commit group of its own.
func BenchmarkPut(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts db.Options
		wo   *db.WriteOptions
		rnd  bool
	}{
		{name: "seq/mapped"},
		{name: "seq/syscalls", opts: db.Options{WALWriteSyscalls: true}},
		{name: "seq/nowal", wo: &db.WriteOptions{DisableWAL: true}},
		{name: "random/mapped", rnd: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			o := bc.opts
			o.CreateIfMissing = true
			d, err := db.Open(b.TempDir(), &o)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			key := make([]byte, 16)
			val := make([]byte, 100)
			b.SetBytes(int64(len(key) + len(val)))
			b.ReportAllocs()
			b.ResetTimer()
			x := uint64(1)
			for i := 0; i < b.N; i++ {
				k := uint64(i)
				if bc.rnd {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
					k = x
				}
				binary.BigEndian.PutUint64(key[8:], k)
				if err := d.Put(key, val, bc.wo); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPutDoesNotAllocate: a Put that fits in the memtable allocates nothing,
// with the WAL on (mapped or not) or off. (The commit queue once outgrew its
// backing array every few writes.)
func TestPutDoesNotAllocate(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	for _, syscalls := range []bool{false, true} {
		d, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true, WALWriteSyscalls: syscalls})
		require.NoError(t, err)
		key := make([]byte, 16)
		val := make([]byte, 100)
		i := uint64(0)
		put := func() {
			i++
			binary.BigEndian.PutUint64(key[8:], i)
			if err := d.Put(key, val, nil); err != nil {
				panic(err)
			}
		}
		for j := 0; j < 50; j++ {
			put() // warm the pools
		}
		require.Zero(t, testing.AllocsPerRun(500, put), "syscalls=%v", syscalls)
		require.NoError(t, d.Close())
	}
}

// BenchmarkPutConcurrent is fillrandom with -threads: 1, 2 and 4 goroutines
// share b.N random Puts (16-byte keys, 100-byte values, WAL on), so that
// writers meet in the commit pipeline and insert into the memtable side by
// side. Run it with -cpu to set the cores.
func BenchmarkPutConcurrent(b *testing.B) {
	for _, goroutines := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
			o := &db.Options{CreateIfMissing: true}
			if os.Getenv("STRATA_BENCH_BIG_MEMTABLE") != "" {
				o.WriteBufferSize = 1 << 30
			}
			d, err := db.Open(b.TempDir(), o)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			b.SetBytes(16 + 100)
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					key := make([]byte, 16)
					val := make([]byte, 100)
					x := uint64(g + 1)
					for i := g; i < b.N; i += goroutines {
						x ^= x << 13
						x ^= x >> 7
						x ^= x << 17
						binary.BigEndian.PutUint64(key[8:], x)
						if err := d.Put(key, val, nil); err != nil {
							errs <- err
							return
						}
					}
				}(g)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
		})
	}
}
