package db_test

import (
	"encoding/binary"
	"math/rand"
	"os"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/prefix"
	"github.com/stretchr/testify/require"
)

// The database of BenchmarkPrefixSeek: RocksDB PR 9407's scenario scaled
// down, a FIFO database of many L0 files each spanning the whole key space,
// with 16 bloom bits per key and a 12-byte fixed prefix extractor.
const (
	prefixBenchKeys   = 500_000
	prefixBenchBuffer = 2 << 20 // about 30 table files for 500k keys
)

// prefixBenchOptions are the options of PR 9407's command line:
// -compaction_style=2 -fifo_compaction_allow_compaction=0 -bloom_bits=16
// -prefix_size=12, snappy (db_bench's default), 8 MiB block cache.
func prefixBenchOptions(e prefix.Extractor) *db.Options {
	return &db.Options{CreateIfMissing: true, CompactionStyle: db.FIFOCompaction, DisableAutoCompactions: true,
		FIFOMaxTableFilesSize: 10000 << 20, WriteBufferSize: prefixBenchBuffer, BloomBitsPerKey: 16,
		PrefixExtractor: e, Compression: db.SnappyCompression}
}

// dbBenchKey writes db_bench's key for v with -prefix_size=12 and
// -keys_per_prefix=0: 8 bytes of v big-endian, then '0' to 16 bytes.
func dbBenchKey(key []byte, v uint64) {
	binary.BigEndian.PutUint64(key, v)
	for i := 8; i < 16; i++ {
		key[i] = '0'
	}
}

// prefixBenchDir fills a benchmark database, on /dev/shm when there is
// one, with fillrandom's keys and DisableWAL; it is removed when b ends.
func prefixBenchDir(b *testing.B) string {
	parent := "/dev/shm"
	if _, err := os.Stat(parent); err != nil {
		parent = os.TempDir()
	}
	dir, err := os.MkdirTemp(parent, "strata-prefixbench-")
	require.NoError(b, err)
	b.Cleanup(func() { os.RemoveAll(dir) })
	d, err := db.Open(dir, prefixBenchOptions(prefix.Fixed(12)))
	require.NoError(b, err)
	rng := rand.New(rand.NewSource(1))
	key, val := make([]byte, 16), make([]byte, 100)
	batch := db.NewBatch()
	wo := &db.WriteOptions{DisableWAL: true}
	for i := 0; i < prefixBenchKeys; i++ {
		dbBenchKey(key, uint64(rng.Int63n(prefixBenchKeys)))
		rng.Read(val[:50]) // half random, half zeros: about 2:1 compressible
		batch.Put(key, val)
		if batch.Count() == 100 {
			require.NoError(b, d.Write(batch, wo))
			batch.Reset()
		}
	}
	require.NoError(b, d.Write(batch, wo))
	require.NoError(b, d.Close())
	return dir
}

// prefixSeeks runs n db_bench seekrandom operations: a new iterator, one
// Seek to a random key, close. PrefixSameAsStart stands for RocksDB's
// prefix seek mode, as in cmd/dbbench. It returns how many seeks found
// their key. each, if not nil, runs before every NewIterator.
func prefixSeeks(b *testing.B, d *db.DB, rng *rand.Rand, n int, each func()) int {
	key := make([]byte, 16)
	ro := &db.ReadOptions{PrefixSameAsStart: true}
	found := 0
	for i := 0; i < n; i++ {
		dbBenchKey(key, uint64(rng.Int63n(prefixBenchKeys)))
		if each != nil {
			each()
		}
		it := d.NewIterator(ro)
		it.Seek(key)
		if it.Valid() && string(it.Key()) == string(key) {
			found++
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
	}
	return found
}

// BenchmarkPrefixSeek measures seekrandom on PR 9407's FIFO database in the
// cases of that PR:
//
//	unchanged      the extractor the tables were built with
//	compatible     a new instance with the same Name, installed after the
//	               readers opened: one Name comparison per reader, then the
//	               fast path (must run at the speed of unchanged)
//	incompatible   fixed:8: no table's filter is usable
//	compare-always the regression: Names compared on every check (a
//	               new extractor handle, same Name, before every seek)
//	no-check       the floor: the check skipped entirely (unsafe); only in
//	               a build tagged strata_noprefixcheck, which runs no other
//	               case:
//	               go test -tags strata_noprefixcheck -run '^$' -bench PrefixSeek ./db
//
// Run the cases interleaved (-count) and compare ratios within a run.
func BenchmarkPrefixSeek(b *testing.B) {
	dir := prefixBenchDir(b)
	for _, c := range []struct {
		name  string
		setup func(d *db.DB) (each func())
	}{
		{"unchanged", func(d *db.DB) func() { return nil }},
		{"compatible", func(d *db.DB) func() { db.SwapPrefixExtractor(d, prefix.Fixed(12)); return nil }},
		{"incompatible", func(d *db.DB) func() {
			require.NoError(b, d.SetOptions(map[string]string{"prefix_extractor": "fixed:8"}))
			return nil
		}},
		{"compare-always", func(d *db.DB) func() { return db.NewPrefixHandleRotator(d) }},
		{"no-check", func(d *db.DB) func() { return nil }},
	} {
		b.Run(c.name, func(b *testing.B) {
			if (c.name == "no-check") != db.PrefixCheckSkipped {
				b.Skip("no-check runs alone, in a build tagged strata_noprefixcheck")
			}
			opts := prefixBenchOptions(prefix.Fixed(12))
			opts.ReadOnly = true
			d, err := db.Open(dir, opts)
			require.NoError(b, err)
			defer d.Close()
			rng := rand.New(rand.NewSource(2))
			prefixSeeks(b, d, rng, 2000, nil) // open every reader, warm the caches
			each := c.setup(d)
			before := readCounters(b, d)
			b.ReportAllocs()
			b.ResetTimer()
			found := prefixSeeks(b, d, rng, b.N, each)
			b.StopTimer()
			after := readCounters(b, d).sub(before)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			b.ReportMetric(float64(after.checks)/float64(b.N), "checks/op")
			b.ReportMetric(float64(after.useful)/float64(b.N), "skipped/op")
			b.ReportMetric(float64(after.slow)/float64(b.N), "slow/op")
			if b.N >= 1000 && found == 0 {
				b.Fatal("no seek found its key")
			}
			files, _ := d.GetProperty(db.PropNumFilesAtLevelPrefix + "0")
			b.Logf("%s: %s L0 files, %d of %d found, counters %+v", c.name, files, found, b.N, after)
		})
	}
}

// BenchmarkPrefixCheck measures one prefix-filter usability check, the
// cost a seek pays per table file: the fast path and the regression (a Name
// comparison every time: two handles of one extractor, passed alternately).
// In a build tagged strata_noprefixcheck, fast-path measures no check at all.
func BenchmarkPrefixCheck(b *testing.B) {
	d, err := db.Open("/db", &db.Options{CreateIfMissing: true, FS: vfs.NewMem(), PrefixExtractor: prefix.Fixed(12)})
	require.NoError(b, err)
	defer d.Close()
	for _, c := range []struct {
		name  string
		check func() bool
	}{
		{"fast-path", db.NewPrefixCheck(d)},
		{"compare-always", db.NewPrefixCheckAlternating(d)},
	} {
		check := c.check
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if !check() {
					b.Fatal("check failed")
				}
			}
		})
	}
}
