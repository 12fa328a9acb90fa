package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stratadb/strata/raftstore/internal/kvcheck"
	"github.com/stretchr/testify/require"
)

const killKeys = 5

// envInt reads a positive integer knob from the environment.
func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, name)
	return n
}

// httpClient runs random puts and linearizable gets through the HTTP API
// of random nodes (a follower redirects to the leader) until stop closes,
// recording every operation whose effect is known or possible.
func httpClient(id int, addrs []string, start time.Time, stop <-chan struct{}, done *atomic.Int64) []porcupine.Operation {
	rng := rand.New(rand.NewSource(int64(id)))
	client := &http.Client{Timeout: 5 * time.Second}
	now := func() int64 { return int64(time.Since(start)) }
	var history []porcupine.Operation
	for seq := 0; ; seq++ {
		select {
		case <-stop:
			return history
		default:
		}
		url := fmt.Sprintf("http://%s/kv/k%d", addrs[rng.Intn(len(addrs))], rng.Intn(killKeys))
		key := url[len(url)-2:]
		if rng.Intn(2) == 0 {
			in := kvcheck.Input{Put: true, Key: key, Value: fmt.Sprintf("c%d-%d", id, seq)}
			call := now()
			code, _, err := request(client, http.MethodPut, url, in.Value)
			ret := now()
			switch {
			case errors.Is(err, syscall.ECONNREFUSED):
				// No node took the request (it was down): no effect.
				time.Sleep(10 * time.Millisecond)
				continue
			case err != nil || code != http.StatusNoContent:
				// A timeout, a node killed mid-request or an Apply
				// error: the entry may still commit.
				ret = math.MaxInt64
			default:
				done.Add(1)
			}
			history = append(history, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: kvcheck.Output{}, Return: ret})
			continue
		}
		call := now()
		code, body, err := request(client, http.MethodGet, url, "")
		ret := now()
		if err != nil || (code != http.StatusOK && code != http.StatusNotFound) {
			time.Sleep(10 * time.Millisecond)
			continue // a failed read has no effect
		}
		history = append(history, porcupine.Operation{ClientId: id, Input: kvcheck.Input{Key: key}, Call: call,
			Output: getOutput(code, body), Return: ret})
		done.Add(1)
	}
}

// getOutput is the model's output for a GET's answer: a 404's body is an
// error message, not a value.
func getOutput(code int, body string) kvcheck.Output {
	if code != http.StatusOK {
		return kvcheck.Output{}
	}
	return kvcheck.Output{Value: body, Found: true}
}

// TestSIGKILLLinearizable runs three raftkv nodes as child processes on
// localhost TCP ports while clients write and read through the HTTP API;
// at random moments it SIGKILLs the leader, and in a second step a
// follower, and restarts each from its Strata directories. The client
// history must be linearizable (porcupine), the final linearizable reads
// must see every acknowledged write, and every node must end with the
// same state. RAFTKV_KILL_ROUNDS sets the number of rounds (default 1,
// two kills); RAFTKV_KILL_SEED replays a schedule; RAFTKV_KILL_STORE=boltdb
// runs the same test on raft-boltdb.
func TestSIGKILLLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	rounds := envInt(t, "RAFTKV_KILL_ROUNDS", 1)
	seed := int64(envInt(t, "RAFTKV_KILL_SEED", int(time.Now().UnixNano()%1e9)))
	store := os.Getenv("RAFTKV_KILL_STORE")
	if store == "" {
		store = "strata"
	}
	t.Logf("seed %d (RAFTKV_KILL_SEED), %d rounds, store %s", seed, rounds, store)
	rng := rand.New(rand.NewSource(seed))

	c := newProcCluster(t, store)
	var addrs []string
	for _, n := range c.nodes {
		addrs = append(addrs, n.httpAddr)
	}
	start := time.Now()
	stop := make(chan struct{})
	var done atomic.Int64
	const clients = 4
	results := make(chan []porcupine.Operation, clients)
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			results <- httpClient(id, addrs, start, stop, &done)
		}(i)
	}
	stopped := false
	stopClients := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopClients()

	progress := func(what string) {
		target := done.Load() + 20
		waitFor(t, "client progress "+what, func() bool { return done.Load() >= target })
	}
	// killAtRandom lets the clients run for a random moment, then
	// SIGKILLs the node pick chooses.
	kills := 0
	killAtRandom := func(role string, pick func() *procNode) {
		time.Sleep(time.Duration(rng.Intn(1000)) * time.Millisecond)
		var victim *procNode
		waitFor(t, "a "+role+" to kill", func() bool { victim = pick(); return victim != nil })
		c.kill(victim)
		kills++
		t.Logf("killed the %s, node %d, after %d acknowledged operations", role, victim.i, done.Load())
		progress("with the " + role + " killed")
		c.restart(victim)
		progress("after the " + role + " restarted")
	}
	for round := 0; round < rounds; round++ {
		progress("before the kills")
		killAtRandom("leader", c.leader)
		killAtRandom("follower", func() *procNode { return c.follower(rng) })
	}
	stopClients()
	close(results)
	var history []porcupine.Operation
	for h := range results {
		history = append(history, h...)
	}

	// Final reads through the leader: every acknowledged write must show.
	final := map[string]kvcheck.Output{}
	client := &http.Client{Timeout: 10 * time.Second}
	for k := 0; k < killKeys; k++ {
		key := fmt.Sprintf("k%d", k)
		waitFor(t, "a final read of "+key, func() bool {
			l := c.leader()
			if l == nil {
				return false
			}
			call := int64(time.Since(start))
			code, body, err := request(client, http.MethodGet, "http://"+l.httpAddr+"/kv/"+key, "")
			if err != nil || (code != http.StatusOK && code != http.StatusNotFound) {
				return false
			}
			out := getOutput(code, body)
			history = append(history, porcupine.Operation{ClientId: clients, Input: kvcheck.Input{Key: key},
				Call: call, Output: out, Return: int64(time.Since(start))})
			final[key] = out
			return true
		})
	}
	t.Logf("%d kills, %d operations recorded, %d acknowledged", kills, len(history), done.Load())
	res := porcupine.CheckOperationsTimeout(kvcheck.Model, history, time.Minute)
	if res == porcupine.Illegal {
		logIllegalKeys(t, history)
	}
	require.NotEqual(t, porcupine.Illegal, res, "the client history is not linearizable (seed %d)", seed)
	if res == porcupine.Unknown {
		t.Logf("linearizability check timed out undecided")
	}

	// Every node, the restarted ones included, converges on the final
	// state (a stale read is local).
	for _, n := range c.nodes {
		for key, want := range final {
			waitFor(t, fmt.Sprintf("node %d to apply %s", n.i, key), func() bool {
				code, body, err := request(client, http.MethodGet, "http://"+n.httpAddr+"/kv/"+key+"?stale=true", "")
				return err == nil && (code == http.StatusOK) == want.Found && (!want.Found || body == want.Value)
			})
		}
	}
}

// logIllegalKeys logs, for each key whose history alone is not
// linearizable, its operations in call order.
func logIllegalKeys(t *testing.T, history []porcupine.Operation) {
	for _, part := range kvcheck.Model.Partition(history) {
		if porcupine.CheckOperationsTimeout(kvcheck.Model, part, 10*time.Second) != porcupine.Illegal {
			continue
		}
		sort.Slice(part, func(i, j int) bool { return part[i].Call < part[j].Call })
		for _, op := range part {
			ret := "?"
			if op.Return != math.MaxInt64 {
				ret = time.Duration(op.Return).String()
			}
			t.Logf("client %d [%v, %s] %s", op.ClientId, time.Duration(op.Call), ret,
				kvcheck.Model.DescribeOperation(op.Input, op.Output))
		}
	}
}
