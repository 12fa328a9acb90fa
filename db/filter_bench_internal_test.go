package db

import (
	"encoding/binary"
	"sort"
	"testing"
	"time"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// keepAll is a CompactionFilter that keeps every value: the filter's
// fixed cost per entry.
type keepAll struct{}

func (keepAll) Name() string                                        { return "bench.KeepAll" }
func (keepAll) Filter(int, []byte, []byte) (FilterDecision, []byte) { return FilterKeep, nil }

// compactionBenchInput is a database whose L0 holds 4 tables of 50,000
// 16-byte keys and 100-byte values each (every key in each table, so three
// quarters of the entries are dropped as shadowed), in memory, and the
// L0->L1 compaction of them.
func compactionBenchInput(b *testing.B, filter CompactionFilter, ttl time.Duration) (*DB, *compaction, int64) {
	d, err := Open("/db", &Options{FS: vfs.NewMem(), CreateIfMissing: true, WriteBufferSize: 64 << 20,
		DisableAutoCompactions: true, CompactionFilter: filter, TTL: ttl})
	require.NoError(b, err)
	key := make([]byte, 16)
	val := make([]byte, 100)
	wo := &WriteOptions{DisableWAL: true}
	const n = 50000
	for t := 0; t < 4; t++ {
		for i := 0; i < n; i++ {
			binary.BigEndian.PutUint64(key, uint64(i)*2654435761%n)
			binary.BigEndian.PutUint64(val, uint64(i+t))
			require.NoError(b, d.Put(key, val, wo))
		}
		require.NoError(b, d.Flush())
	}
	cf := d.def
	d.mu.Lock()
	defer d.mu.Unlock()
	ver := cf.mu.vf.Current()
	p := ver.PickRange(0, 1, nil, nil)
	require.NotNil(b, p)
	var in int64
	for _, f := range p.Inputs[0] {
		in += int64(f.Size)
	}
	return d, cf.newCompaction(ver, p, true), in
}

// runCompactionOnce runs c and deletes its outputs (not installed).
func runCompactionOnce(b *testing.B, d *DB, c *compaction) {
	metas, err := d.runCompaction(c, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range metas {
		if err := d.fs.Remove(d.path(base.MakeFilename(base.FileKindTable, m.FileNum))); err != nil {
			b.Fatal(err)
		}
		d.mu.Lock()
		delete(d.mu.pendingOutputs, m.FileNum)
		d.mu.Unlock()
	}
}

// BenchmarkCompactionFilter measures the L0->L1 compaction of
// compactionBenchInput without a filter ("none"), with one that keeps
// everything ("keep", on the same tables as none) and with TTL and no user filter ("ttl": the built-in
// filter decoding each value's write time; its values are 4 bytes longer).
// The same inputs are compacted every time and the outputs deleted, so the
// numbers are the merge and write cost itself. Each iteration runs the
// three in turn, so that the noise of a shared machine falls on all of
// them alike; the metrics are the mean ns per compaction of each and the
// cost of keep and ttl relative to none, in percent.
func BenchmarkCompactionFilter(b *testing.B) {
	variants := []struct {
		name   string
		filter CompactionFilter
		ttl    time.Duration
	}{{"none", nil, 0}, {"keep", keepAll{}, 0}, {"ttl", nil, time.Duration(1<<30) * time.Second}}
	// none and keep compact the very same tables: keep sets the filter
	// on the family before each of its runs, none clears it (nothing else
	// runs: automatic compactions are off).
	dbs := make([]*DB, len(variants))
	cs := make([]*compaction, len(variants))
	var in int64
	dbs[0], cs[0], in = compactionBenchInput(b, nil, 0)
	defer dbs[0].Close()
	b.SetBytes(in)
	dbs[1], cs[1] = dbs[0], cs[0]
	dbs[2], cs[2], _ = compactionBenchInput(b, nil, variants[2].ttl)
	defer dbs[2].Close()
	spent := make([]time.Duration, len(variants))
	// ratios[j] holds, per iteration, variant j's time over none's in the
	// same iteration: their median shrugs off the bursts of a shared
	// machine better than the ratio of the sums.
	ratios := make([][]float64, len(variants))
	round := make([]time.Duration, len(variants))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range variants {
			// Rotate the order too: the first of a round is not always
			// the same one.
			k := (i + j) % len(variants)
			dbs[k].def.opts.CompactionFilter = variants[k].filter
			start := time.Now()
			runCompactionOnce(b, dbs[k], cs[k])
			round[k] = time.Since(start)
			spent[k] += round[k]
		}
		for j := range variants {
			ratios[j] = append(ratios[j], float64(round[j])/float64(round[0]))
		}
	}
	b.StopTimer()
	for j, v := range variants {
		b.ReportMetric(float64(spent[j].Nanoseconds())/float64(b.N), v.name+"-ns/compaction")
	}
	b.ReportMetric(100*(median(ratios[1])-1), "keep-cost-%")
	b.ReportMetric(100*(median(ratios[2])-1), "ttl-cost-%")
}

// median returns the median of xs (which it sorts).
func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// BenchmarkEntryFilterCall is the cost of one entry's filter decision, the
// only work a keep-everything filter adds to a compaction (or TTL's
// built-in one, on a live value): per call, to set against a compaction's
// time per entry, which a shared machine's noise hides in
// BenchmarkCompactionFilter.
func BenchmarkEntryFilterCall(b *testing.B) {
	key := make([]byte, 16)
	val := make([]byte, 104)
	for _, v := range []struct {
		name string
		f    *entryFilter
	}{
		{"keep", &entryFilter{user: keepAll{}}},
		{"ttl", &entryFilter{ttl: 1 << 30, now: 1_700_000_000}},
		{"ttl+keep", &entryFilter{user: keepAll{}, ttl: 1 << 30, now: 1_700_000_000}},
	} {
		b.Run(v.name, func(b *testing.B) {
			binary.LittleEndian.PutUint32(val[100:], 1_700_000_000)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if d, _ := v.f.filter(key, val); d != FilterKeep {
					b.Fatal(d)
				}
			}
		})
	}
}
