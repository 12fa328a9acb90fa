package raftstore

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/stretchr/testify/require"
)

// benchStores opens each log store the benchmarks compare, synced as raft
// uses them.
var benchStores = []struct {
	name string
	open func(b *testing.B, dir string) (raft.LogStore, func() error)
}{
	{"strata", func(b *testing.B, dir string) (raft.LogStore, func() error) {
		s, err := Open(filepath.Join(dir, "strata"), nil, nil)
		require.NoError(b, err)
		return s, s.Close
	}},
	{"boltdb", func(b *testing.B, dir string) (raft.LogStore, func() error) {
		require.NoError(b, os.MkdirAll(dir, 0o755))
		s, err := raftboltdb.NewBoltStore(filepath.Join(dir, "bolt.db"))
		require.NoError(b, err)
		return s, s.Close
	}},
}

func benchLogs(start uint64, n, size int, rng *rand.Rand) []*raft.Log {
	logs := make([]*raft.Log, n)
	for i := range logs {
		data := make([]byte, size)
		rng.Read(data)
		logs[i] = &raft.Log{Index: start + uint64(i), Term: 1, Type: raft.LogCommand, Data: data}
	}
	return logs
}

// BenchmarkStoreLogs stores batches of entries, each batch one synced
// write, as a raft leader or follower does.
func BenchmarkStoreLogs(b *testing.B) {
	// The stores are the innermost level, so the two run back to back and
	// see the same load on the disk.
	for _, size := range []int{128, 4096} {
		for _, batch := range []int{1, 16, 256} {
			for _, st := range benchStores {
				b.Run(fmt.Sprintf("size=%d/batch=%d/store=%s", size, batch, st.name), func(b *testing.B) {
					s, closeFn := st.open(b, b.TempDir())
					defer func() { require.NoError(b, closeFn()) }()
					rng := rand.New(rand.NewSource(1))
					logs := benchLogs(1, batch, size, rng)
					b.SetBytes(int64(batch * size))
					b.ResetTimer()
					next := uint64(1)
					for i := 0; i < b.N; i++ {
						for j, l := range logs {
							l.Index = next + uint64(j)
						}
						next += uint64(batch)
						if err := s.StoreLogs(logs); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer() // not the Close the defer runs
					b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "entries/s")
				})
			}
		}
	}
}

const benchReadEntries = 20000

func benchFilled(b *testing.B, open func(b *testing.B, dir string) (raft.LogStore, func() error)) (raft.LogStore, func() error) {
	s, closeFn := open(b, b.TempDir())
	rng := rand.New(rand.NewSource(1))
	for i := uint64(1); i <= benchReadEntries; i += 256 {
		require.NoError(b, s.StoreLogs(benchLogs(i, 256, 128, rng)))
	}
	return s, closeFn
}

// BenchmarkGetLog reads single entries at random indices.
func BenchmarkGetLog(b *testing.B) {
	for _, st := range benchStores {
		b.Run("store="+st.name, func(b *testing.B) {
			s, closeFn := benchFilled(b, st.open)
			defer func() { require.NoError(b, closeFn()) }()
			rng := rand.New(rand.NewSource(2))
			var l raft.Log
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.GetLog(1+uint64(rng.Intn(benchReadEntries)), &l); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
		})
	}
}

// BenchmarkGetLogsRange reads 256 consecutive entries, as raft's
// replication does when it sends a follower a run of the log.
func BenchmarkGetLogsRange(b *testing.B) {
	for _, st := range benchStores {
		b.Run("store="+st.name, func(b *testing.B) {
			s, closeFn := benchFilled(b, st.open)
			defer func() { require.NoError(b, closeFn()) }()
			rng := rand.New(rand.NewSource(3))
			var l raft.Log
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := 1 + uint64(rng.Intn(benchReadEntries-256))
				for j := uint64(0); j < 256; j++ {
					if err := s.GetLog(start+j, &l); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*256)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

// BenchmarkClusterApply measures committed writes per second of a
// three-node cluster (raft's in-memory transport, raftstore.FSM on every
// node) whose log and stable stores are Strata or raft-boltdb, with many
// clients applying 128-byte puts at once.
func BenchmarkClusterApply(b *testing.B) {
	for _, st := range benchStores {
		b.Run("store="+st.name, func(b *testing.B) {
			base := b.TempDir()
			type member struct {
				addr  raft.ServerAddress
				trans *raft.InmemTransport
				r     *raft.Raft
			}
			ms := make([]*member, 3)
			var servers []raft.Server
			for i := range ms {
				m := &member{}
				m.addr, m.trans = raft.NewInmemTransport("")
				ms[i] = m
				servers = append(servers, raft.Server{ID: raft.ServerID(m.addr), Address: m.addr})
			}
			for _, a := range ms {
				for _, o := range ms {
					if a != o {
						a.trans.Connect(o.addr, o.trans)
					}
				}
			}
			for i, m := range ms {
				dir := filepath.Join(base, fmt.Sprint(i))
				logs, closeLogs := st.open(b, dir)
				stable := logs.(raft.StableStore)
				fsm, err := OpenFSM(filepath.Join(dir, "fsm"), nil)
				require.NoError(b, err)
				// raft's default timeouts: the tests' short ones make a
				// leader step down when a sync on a busy disk is slow.
				cfg := raft.DefaultConfig()
				cfg.LocalID = raft.ServerID(m.addr)
				cfg.Logger = testConfig("").Logger
				require.NoError(b, raft.BootstrapCluster(cfg, logs, stable, raft.NewInmemSnapshotStore(), m.trans,
					raft.Configuration{Servers: servers}))
				m.r, err = raft.NewRaft(cfg, fsm, logs, stable, raft.NewInmemSnapshotStore(), m.trans)
				require.NoError(b, err)
				defer func() {
					require.NoError(b, m.r.Shutdown().Error())
					require.NoError(b, closeLogs())
					require.NoError(b, fsm.Close())
				}()
			}
			var leader *raft.Raft
			for leader == nil {
				for _, m := range ms {
					if m.r.State() == raft.Leader {
						leader = m.r
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
			value := make([]byte, 128)
			var seq atomic.Int64
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := fmt.Sprintf("key%08d", seq.Add(1))
					if err := leader.Apply(EncodePut([]byte(key), value), 10*time.Second).Error(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer() // not the shutdown the defers run
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}
