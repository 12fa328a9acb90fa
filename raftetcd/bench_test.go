package raftetcd

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/raft/v3/raftpb"
)

// The benchmarks run etcd raft's log on Strata (Storage) and on equivalent
// log stores on Pebble and on bbolt (etcd's own backend), which live in
// this test file only so that neither is a dependency of the library: each
// Ready's entries and HardState in one synced write, entries read back as
// raftpb.Entry. The Pebble store uses the same keys as Storage; the bbolt
// store keeps the log in a bucket keyed by big-endian index and the hard
// state in another, one synced transaction per Ready, as etcd's WAL-less
// bbolt users do.

type benchLog interface {
	save(hs pb.HardState, ents []pb.Entry) error
	entries(lo, hi uint64) ([]pb.Entry, error)
	close() error
}

type strataLog struct {
	s      *Storage
	noSync bool
}

func (l strataLog) save(hs pb.HardState, ents []pb.Entry) error {
	return l.s.SaveReady(hs, ents, pb.Snapshot{}, !l.noSync)
}
func (l strataLog) entries(lo, hi uint64) ([]pb.Entry, error) {
	return l.s.Entries(lo, hi, math.MaxUint64)
}
func (l strataLog) close() error { return l.s.Close() }

type pebbleLog struct {
	d      *pebble.DB
	noSync bool
	prefix []byte
	buf    []byte
}

func (l *pebbleLog) key(dst []byte, idx uint64) []byte {
	dst = append(append(dst, l.prefix...), suffixLog...)
	return binary.BigEndian.AppendUint64(dst, idx)
}

func (l *pebbleLog) save(hs pb.HardState, ents []pb.Entry) error {
	b := l.d.NewBatch()
	defer b.Close()
	for i := range ents {
		l.buf = l.key(l.buf[:0], ents[i].Index)
		k := len(l.buf)
		l.buf = slices.Grow(l.buf, ents[i].Size())[:k+ents[i].Size()]
		if _, err := ents[i].MarshalTo(l.buf[k:]); err != nil {
			return err
		}
		if err := b.Set(l.buf[:k], l.buf[k:], nil); err != nil { // Set copies
			return err
		}
	}
	v, err := hs.Marshal()
	if err != nil {
		return err
	}
	if err := b.Set(append(append([]byte(nil), l.prefix...), suffixHardState...), v, nil); err != nil {
		return err
	}
	if l.noSync {
		return b.Commit(pebble.NoSync)
	}
	return b.Commit(pebble.Sync)
}

func (l *pebbleLog) entries(lo, hi uint64) ([]pb.Entry, error) {
	it, err := l.d.NewIter(&pebble.IterOptions{LowerBound: l.key(nil, lo), UpperBound: l.key(nil, hi)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	ents := make([]pb.Entry, 0, hi-lo)
	for it.First(); it.Valid(); it.Next() {
		var e pb.Entry
		if err := e.Unmarshal(it.Value()); err != nil {
			return nil, err
		}
		ents = append(ents, e)
	}
	return ents, it.Error()
}

func (l *pebbleLog) close() error { return l.d.Close() }

var (
	boltLogBucket  = []byte("log")
	boltMetaBucket = []byte("meta")
)

type boltLog struct{ d *bolt.DB }

func (l boltLog) save(hs pb.HardState, ents []pb.Entry) error {
	return l.d.Update(func(tx *bolt.Tx) error {
		lb := tx.Bucket(boltLogBucket)
		for i := range ents {
			v, err := ents[i].Marshal()
			if err != nil {
				return err
			}
			if err := lb.Put(binary.BigEndian.AppendUint64(nil, ents[i].Index), v); err != nil {
				return err
			}
		}
		v, err := hs.Marshal()
		if err != nil {
			return err
		}
		return tx.Bucket(boltMetaBucket).Put([]byte("hardstate"), v)
	})
}

func (l boltLog) entries(lo, hi uint64) ([]pb.Entry, error) {
	ents := make([]pb.Entry, 0, hi-lo)
	err := l.d.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(boltLogBucket).Cursor()
		for k, v := c.Seek(binary.BigEndian.AppendUint64(nil, lo)); k != nil && binary.BigEndian.Uint64(k) < hi; k, v = c.Next() {
			var e pb.Entry
			if err := e.Unmarshal(v); err != nil {
				return err
			}
			ents = append(ents, e)
		}
		return nil
	})
	return ents, err
}

func (l boltLog) close() error { return l.d.Close() }

type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{})  {}
func (quietLogger) Errorf(string, ...interface{}) {}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	panic(fmt.Sprintf(format, args...))
}

// openBenchLog opens a log of the named store. "strata" is Storage with
// its default options; "strata-nocache" is Storage without its entry cache
// and "strata-cache" with one holding the whole log of BenchmarkEntries:
// the first measures the database against Pebble and bbolt, the second
// what the cache adds.
func openBenchLog(b *testing.B, store string) benchLog {
	dir := b.TempDir()
	switch store {
	case "strata", "strata-nocache", "strata-cache", "strata-norecycle":
		var opts Options
		var dbOpts *db.Options
		switch store {
		case "strata-nocache":
			opts.EntryCacheSize = -1
		case "strata-cache":
			opts.EntryCacheSize = 16 << 20
		case "strata-norecycle":
			dbOpts = &db.Options{}
		}
		s, err := Open(dir, dbOpts, &opts)
		require.NoError(b, err)
		return strataLog{s: s}
	case "pebble":
		d, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
		require.NoError(b, err)
		return &pebbleLog{d: d, prefix: RangePrefix(0)}
	default:
		d, err := bolt.Open(dir+"/raft.db", 0o600, nil)
		require.NoError(b, err)
		require.NoError(b, d.Update(func(tx *bolt.Tx) error {
			if _, err := tx.CreateBucketIfNotExists(boltLogBucket); err != nil {
				return err
			}
			_, err := tx.CreateBucketIfNotExists(boltMetaBucket)
			return err
		}))
		return boltLog{d}
	}
}

func benchEntries(first uint64, n, size int) []pb.Entry {
	ents := make([]pb.Entry, n)
	for i := range ents {
		ents[i] = pb.Entry{Index: first + uint64(i), Term: 1, Data: make([]byte, size)}
	}
	return ents
}

// BenchmarkAppend: one synced Ready of batch entries of 128 B and its
// HardState per op; Strata with its default entry cache (which copies
// the payloads) and without it.
//
// Before the timer starts, the Strata and Pebble stores take warmBytes of
// unsynced 256-entry Readies, a flush and a compaction, so that the timed appends go to
// WALs written over recycled files, as a long-running log's do (Strata's
// DefaultRecycleLogFileNum; Pebble recycles WAL files by default);
// strata-norecycle is Strata with RecycleLogFileNum 0. bbolt, which has no
// WAL, starts empty. Besides the wall time it reports the process's CPU
// time per op (cpu-ns/op): the store's own work and the kernel's for its
// system calls, without the wait for the device.
func BenchmarkAppend(b *testing.B) {
	for _, batch := range []int{1, 16, 256} {
		for _, store := range []string{"strata", "strata-nocache", "strata-norecycle", "pebble", "bbolt"} {
			b.Run(fmt.Sprintf("batch=%d/store=%s", batch, store), func(b *testing.B) {
				l := openBenchLog(b, store)
				defer l.close()
				first := warmUp(b, l)
				ents := benchEntries(1, batch, 128)
				b.SetBytes(int64(batch * 128))
				b.ResetTimer()
				cpu0, cpuOK := processCPU()
				for i := 0; i < b.N; i++ {
					for j := range ents {
						ents[j].Index = first + uint64(i*batch+j)
					}
					hs := pb.HardState{Term: 1, Vote: 1, Commit: ents[len(ents)-1].Index}
					if err := l.save(hs, ents); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if cpu1, ok := processCPU(); ok && cpuOK {
					b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}

// warmBytes is the WAL traffic of the warm-up: more than a Strata WAL
// holds before it rotates (the 64 MiB write buffer), so that the WAL the
// timed appends go to is written over a file as long.
const warmBytes = 80 << 20

// warmUp writes warmBytes of unsynced 256-entry Readies to the Strata and
// Pebble stores, flushes and compacts them, and returns the index of the next entry.
func warmUp(b *testing.B, l benchLog) uint64 {
	// settle flushes and compacts what the warm-up wrote, so that no
	// background work of it overlaps the timed appends.
	var settle func() error
	switch l := l.(type) {
	case strataLog:
		settle = func() error { return l.s.d.CompactRange(nil, nil) }
	case *pebbleLog:
		settle = func() error {
			if err := l.d.Flush(); err != nil {
				return err
			}
			return l.d.Compact(context.Background(), l.prefix, append(slices.Clone(l.prefix), 0xff), false)
		}
	default:
		return 1
	}
	u := unsynced(l)
	ents := benchEntries(1, 256, 128)
	next := uint64(1)
	for written := 0; written < warmBytes; written += 256 * 128 {
		for j := range ents {
			ents[j].Index = next
			next++
		}
		require.NoError(b, u.save(pb.HardState{Term: 1, Vote: 1, Commit: next - 1}, ents))
	}
	require.NoError(b, settle())
	if p, ok := l.(*pebbleLog); ok {
		p.noSync = false // unsynced set it on the store itself
	}
	return next
}

// unsynced returns l writing without syncing.
func unsynced(l benchLog) benchLog {
	switch l := l.(type) {
	case strataLog:
		l.noSync = true
		return l
	case *pebbleLog:
		l.noSync = true
		return l
	case boltLog:
		l.d.NoSync = true
		return l
	}
	panic("unknown log")
}

// BenchmarkAppendNoSync is BenchmarkAppend's 256-entry Ready unsynced
// (Strata without its entry cache, Pebble, bbolt with NoSync): what the
// stores spend besides the sync.
func BenchmarkAppendNoSync(b *testing.B) {
	for _, store := range []string{"strata-nocache", "pebble", "bbolt"} {
		b.Run("batch=256/store="+store, func(b *testing.B) {
			l := unsynced(openBenchLog(b, store))
			defer l.close()
			ents := benchEntries(1, 256, 128)
			b.SetBytes(256 * 128)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := range ents {
					ents[j].Index = uint64(i*256 + j + 1)
				}
				if err := l.save(pb.HardState{Term: 1, Vote: 1, Commit: ents[255].Index}, ents); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEntries: ranges of 256 consecutive entries of 128 B from a log
// of 20,000, at random starts; Strata with and without its entry cache.
// Besides the wall time it reports the process's CPU time per op
// (cpu-ns/op, where the platform gives it), the steadier figure on a
// machine that other work shares.
func BenchmarkEntries(b *testing.B) {
	const logLen, span = 20000, 256
	for _, store := range []string{"strata-nocache", "strata-cache", "pebble", "bbolt"} {
		b.Run("store="+store, func(b *testing.B) {
			l := openBenchLog(b, store)
			defer l.close()
			for i := 0; i < logLen; i += 1000 {
				require.NoError(b, l.save(pb.HardState{Term: 1, Commit: uint64(i + 1000)}, benchEntries(uint64(i+1), 1000, 128)))
			}
			rng := rand.New(rand.NewSource(1))
			b.ResetTimer()
			cpu0, cpuOK := processCPU()
			for i := 0; i < b.N; i++ {
				lo := 1 + uint64(rng.Intn(logLen-span))
				ents, err := l.entries(lo, lo+span)
				if err != nil || len(ents) != span {
					b.Fatalf("entries %d: %d, %v", lo, len(ents), err)
				}
			}
			b.StopTimer()
			if cpu1, ok := processCPU(); ok && cpuOK {
				b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
			}
			if sl, ok := l.(strataLog); ok {
				// The cached case is all cache, the other none of it.
				require.Equal(b, store == "strata-cache", len(sl.s.ents) == logLen)
			}
			b.ReportMetric(float64(b.N*span)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}
