package main

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMeasureClusterWrites measures committed writes per second of the
// three-node cluster over TCP (child processes on localhost), once with
// raftstore and once with raft-boltdb as every node's log and stable
// store, under the same client load, the two interleaved round by round.
// It is a measurement, not a check: it runs only when RAFTKV_MEASURE sets
// the number of rounds, and RAFTKV_MEASURE_SECONDS the length of a run
// (default 5). Clients PUT 128-byte values to the leader; a write counts
// when the leader answered 204 (committed on a quorum and applied).
func TestMeasureClusterWrites(t *testing.T) {
	rounds := envInt(t, "RAFTKV_MEASURE", 0)
	if rounds == 0 {
		t.Skip("set RAFTKV_MEASURE=rounds to measure")
	}
	secs := envInt(t, "RAFTKV_MEASURE_SECONDS", 5)
	clients := envInt(t, "RAFTKV_MEASURE_CLIENTS", 32)
	results := map[string][]float64{}
	stores := []string{"strata", "boltdb"}
	for round := 0; round < rounds; round++ {
		for i := range stores {
			// Alternate which store goes first.
			store := stores[(i+round)%len(stores)]
			t.Run(fmt.Sprintf("round=%d/store=%s", round, store), func(t *testing.T) {
				c := newProcCluster(t, store)
				l := c.leader()
				if l == nil {
					t.Fatal("no leader")
				}
				rate := measureWrites(l.httpAddr, clients, time.Duration(secs)*time.Second)
				t.Logf("%s: %.0f committed writes/s (%d clients, %ds)", store, rate, clients, secs)
				results[store] = append(results[store], rate)
			})
		}
	}
	for _, store := range stores {
		rs := append([]float64(nil), results[store]...)
		sort.Float64s(rs)
		if len(rs) > 0 {
			t.Logf("%s: median %.0f writes/s over %d runs %v", store, rs[len(rs)/2], len(rs), rs)
		}
	}
}

// measureWrites runs clients concurrent PUT loops against addr for a
// warm-up second and then for d, and returns the writes per second
// acknowledged in d.
func measureWrites(addr string, clients int, d time.Duration) float64 {
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	value := string(make([]byte, 128))
	var counting atomic.Bool
	var acked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				url := fmt.Sprintf("http://%s/kv/c%d-%d", addr, id, seq%1000)
				code, _, err := request(client, http.MethodPut, url, value)
				if err == nil && code == http.StatusNoContent && counting.Load() {
					acked.Add(1)
				}
			}
		}(i)
	}
	time.Sleep(time.Second)
	counting.Store(true)
	begin := time.Now()
	time.Sleep(d)
	counting.Store(false)
	elapsed := time.Since(begin)
	close(stop)
	wg.Wait()
	return float64(acked.Load()) / elapsed.Seconds()
}
