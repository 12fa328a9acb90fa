package raftstore

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/hashicorp/raft"
	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// kvInput and kvOutput are the operations of the register-per-key model.
type kvInput struct {
	put        bool
	key, value string
}

type kvOutput struct {
	value string
	found bool
}

// kvModel is a map of registers, checked one key at a time.
var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(kvInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return kvOutput{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		in, st := input.(kvInput), state.(kvOutput)
		if in.put {
			return true, kvOutput{value: in.value, found: true}
		}
		return output.(kvOutput) == st, st
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(kvInput)
		if in.put {
			return fmt.Sprintf("put(%s, %s)", in.key, in.value)
		}
		return fmt.Sprintf("get(%s) -> %+v", in.key, output)
	},
}

// TestKVModelRejectsStaleRead makes sure the checker the fault test relies
// on can fail: a read that misses a write acknowledged before it began.
func TestKVModelRejectsStaleRead(t *testing.T) {
	history := []porcupine.Operation{
		{ClientId: 0, Input: kvInput{put: true, key: "k", value: "1"}, Call: 0, Output: kvOutput{}, Return: 10},
		{ClientId: 1, Input: kvInput{key: "k"}, Call: 20, Output: kvOutput{}, Return: 30},
	}
	require.Equal(t, porcupine.Illegal, porcupine.CheckOperationsTimeout(kvModel, history, 10*time.Second))
	history[1].Output = kvOutput{value: "1", found: true}
	require.Equal(t, porcupine.Ok, porcupine.CheckOperationsTimeout(kvModel, history, 10*time.Second))
	// A put whose outcome is unknown may or may not have happened.
	history = append(history,
		porcupine.Operation{ClientId: 2, Input: kvInput{put: true, key: "k", value: "2"}, Call: 40, Output: kvOutput{}, Return: math.MaxInt64},
		porcupine.Operation{ClientId: 1, Input: kvInput{key: "k"}, Call: 50, Output: kvOutput{value: "2", found: true}, Return: 60},
	)
	require.Equal(t, porcupine.Ok, porcupine.CheckOperationsTimeout(kvModel, history, 10*time.Second))
}

// faultRounds is how many rounds of faults TestClusterFaultsLinearizable
// injects; RAFTSTORE_FAULT_ROUNDS raises it for a longer run.
func faultRounds(t *testing.T) int {
	if s := os.Getenv("RAFTSTORE_FAULT_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "RAFTSTORE_FAULT_ROUNDS")
		return n
	}
	return 1
}

// client runs random puts and linearizable gets against whichever node is
// leader until stop closes, recording every operation.
func (c *testCluster) client(id int, start time.Time, stop <-chan struct{}, done *atomic.Int64) []porcupine.Operation {
	rng := rand.New(rand.NewSource(int64(id)))
	now := func() int64 { return int64(time.Since(start)) }
	var history []porcupine.Operation
	for seq := 0; ; seq++ {
		select {
		case <-stop:
			return history
		default:
		}
		var r *raft.Raft
		var fsm *FSM
		c.mu.Lock()
		for _, nd := range c.nodes {
			if nd.r != nil && nd.r.State() == raft.Leader {
				r, fsm = nd.r, nd.fsm
				break
			}
		}
		c.mu.Unlock()
		if r == nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		key := fmt.Sprintf("k%d", rng.Intn(5))
		if rng.Intn(2) == 0 {
			in := kvInput{put: true, key: key, value: fmt.Sprintf("c%d-%d", id, seq)}
			call := now()
			f := r.Apply(EncodePut([]byte(in.key), []byte(in.value)), 2*time.Second)
			err := f.Error()
			if err == nil {
				if e, ok := f.Response().(error); ok {
					err = e
				}
			}
			ret := now()
			if err != nil {
				// The outcome is unknown: the entry may still commit.
				ret = math.MaxInt64
			}
			history = append(history, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: kvOutput{}, Return: ret})
		} else {
			call := now()
			v, err := fsm.LinearizableGet(r, []byte(key), 2*time.Second)
			ret := now()
			if err != nil && !errors.Is(err, db.ErrNotFound) {
				continue // a failed read has no effect
			}
			history = append(history, porcupine.Operation{ClientId: id, Input: kvInput{key: key}, Call: call,
				Output: kvOutput{value: string(v), found: err == nil}, Return: ret})
		}
		done.Add(1)
	}
}

// TestClusterFaultsLinearizable runs clients against a three-node cluster
// while the leader is stopped and restarted from its Strata directory,
// the leader and a follower are partitioned and healed, and every node
// takes snapshots; the client history must be linearizable and the final
// reads must see every acknowledged write.
func TestClusterFaultsLinearizable(t *testing.T) {
	c := newCluster(t, 3, func(cfg *raft.Config) { cfg.TrailingLogs = 20 })
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
			results <- c.client(id, start, stop, &done)
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
	partition := func(nd *testNode, connect bool) {
		for _, o := range c.nodes {
			if o == nd {
				continue
			}
			if connect {
				nd.trans.Connect(o.addr, o.trans)
				o.trans.Connect(nd.addr, nd.trans)
			} else {
				nd.trans.Disconnect(o.addr)
				o.trans.Disconnect(nd.addr)
			}
		}
	}
	follower := func() *testNode {
		l := c.leader()
		for _, nd := range c.nodes {
			if nd != l {
				return nd
			}
		}
		panic("no follower")
	}
	for round := 0; round < faultRounds(t); round++ {
		progress("before faults")

		l := c.leader()
		c.stop(l)
		progress("with the leader stopped")
		c.restart(l)
		progress("after the old leader restarted")

		l = c.leader()
		partition(l, false)
		progress("with the leader partitioned")
		partition(l, true)
		progress("after healing the leader")

		f := follower()
		partition(f, false)
		progress("with a follower partitioned")
		partition(f, true)

		for _, nd := range c.nodes {
			require.NoError(t, nd.r.Snapshot().Error(), "snapshot on %s", nd.id)
		}
		progress("after snapshots")

		f = follower()
		c.stop(f)
		progress("with a follower stopped")
		c.restart(f)
		progress("after the follower restarted")
	}
	stopClients()
	close(results)
	var history []porcupine.Operation
	for h := range results {
		history = append(history, h...)
	}

	// Final reads: every acknowledged write must be visible.
	want := map[string]string{}
	for k := 0; k < 5; k++ {
		key := fmt.Sprintf("k%d", k)
		var v []byte
		var err error
		for attempt := 0; attempt < 50; attempt++ {
			l := c.leader()
			call := int64(time.Since(start))
			v, err = l.fsm.LinearizableGet(l.r, []byte(key), 5*time.Second)
			if err == nil || errors.Is(err, db.ErrNotFound) {
				history = append(history, porcupine.Operation{ClientId: clients, Input: kvInput{key: key}, Call: call,
					Output: kvOutput{value: string(v), found: err == nil}, Return: int64(time.Since(start))})
				break
			}
		}
		if err == nil {
			want[key] = string(v)
		} else {
			require.ErrorIs(t, err, db.ErrNotFound, "final read of %s", key)
		}
	}
	t.Logf("%d operations", len(history))
	res := porcupine.CheckOperationsTimeout(kvModel, history, time.Minute)
	require.NotEqual(t, porcupine.Illegal, res, "the client history is not linearizable")
	if res == porcupine.Unknown {
		t.Logf("linearizability check timed out undecided")
	}
	// Every node ends with the same state.
	c.converge(want)
}
