package raftetcd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"
)

// kvInput, kvOutput and kvModel are the register-per-key porcupine model
// (the same as raftstore's internal/kvcheck, which this module cannot
// import). A put whose outcome the client never learned has Return =
// math.MaxInt64: it may or may not have taken effect.
type kvInput struct {
	Put        bool
	Key, Value string
}

type kvOutput struct {
	Value string
	Found bool
}

var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(kvInput).Key
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
		if in.Put {
			return true, kvOutput{Value: in.Value, Found: true}
		}
		return output.(kvOutput) == st, st
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(kvInput)
		if in.Put {
			return fmt.Sprintf("put(%s, %s)", in.Key, in.Value)
		}
		return fmt.Sprintf("get(%s) -> %+v", in.Key, output)
	},
}

// TestKVModelRejectsStaleRead shows the checker catches a stale read.
func TestKVModelRejectsStaleRead(t *testing.T) {
	h := []porcupine.Operation{
		{ClientId: 0, Input: kvInput{Put: true, Key: "k", Value: "1"}, Call: 0, Return: 10},
		{ClientId: 1, Input: kvInput{Key: "k"}, Output: kvOutput{}, Call: 20, Return: 30},
	}
	require.False(t, porcupine.CheckOperations(kvModel, h))
	h[1].Output = kvOutput{Value: "1", Found: true}
	require.True(t, porcupine.CheckOperations(kvModel, h))
}

type procNode struct {
	id       uint64
	dir      string
	raftAddr string
	httpAddr string
	logPath  string
	cmd      *exec.Cmd
	exited   chan struct{}
}

type procCluster struct {
	t     *testing.T
	nodes []*procNode
}

// freeAddrs returns n distinct 127.0.0.1 addresses. The listeners stay open
// until all n are picked, so no port is handed out twice.
func freeAddrs(t *testing.T, n int) []string {
	addrs := make([]string, n)
	lns := make([]net.Listener, n)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	for _, ln := range lns {
		require.NoError(t, ln.Close())
	}
	return addrs
}

func newProcCluster(t *testing.T) *procCluster {
	c := &procCluster{t: t}
	dir := t.TempDir()
	addrs := freeAddrs(t, 6)
	for i := 0; i < 3; i++ {
		c.nodes = append(c.nodes, &procNode{id: uint64(i + 1), dir: filepath.Join(dir, fmt.Sprint("n", i+1)),
			raftAddr: addrs[2*i], httpAddr: addrs[2*i+1], logPath: filepath.Join(dir, fmt.Sprintf("n%d.log", i+1))})
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			if n.running() {
				_ = n.cmd.Process.Kill()
				<-n.exited
			}
			if t.Failed() {
				if b, err := os.ReadFile(n.logPath); err == nil && len(b) > 0 {
					t.Logf("node %d log tail:\n%s", n.id, b[max(0, len(b)-2000):])
				}
			}
		}
	})
	for _, n := range c.nodes {
		c.start(n)
	}
	return c
}

func (n *procNode) running() bool {
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

func (c *procCluster) start(n *procNode) {
	var raftAddrs []string
	for _, o := range c.nodes {
		raftAddrs = append(raftAddrs, o.raftAddr)
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(c.t, err)
	cmd := exec.Command(os.Args[0], strconv.FormatUint(n.id, 10), strings.Join(raftAddrs, ","), n.httpAddr, n.dir)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(c.t, cmd.Start())
	n.cmd, n.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		_ = cmd.Wait()
		_ = logf.Close()
		close(exited)
	}(n.exited)
	waitUntil(c.t, fmt.Sprintf("node %d to serve", n.id), func() bool { return c.state(n) != nil || !n.running() })
	require.True(c.t, n.running(), "node %d exited; see %s", n.id, n.logPath)
}

func (c *procCluster) kill(n *procNode) {
	require.NoError(c.t, n.cmd.Process.Signal(syscall.SIGKILL))
	<-n.exited
}

type nodeState struct {
	Applied uint64            `json:"applied"`
	KV      map[string]string `json:"kv"`
}

var stateClient = &http.Client{Timeout: 2 * time.Second}

func (c *procCluster) state(n *procNode) *nodeState {
	resp, err := stateClient.Get("http://" + n.httpAddr + "/state")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var st nodeState
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return nil
	}
	return &st
}

// waitUntil polls cond until it holds or a generous deadline passes: it
// bounds a wait for the cluster to make progress, no performance claim.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const clusterKeys = 5

// do sends one request; err is set when no response came back.
func do(client *http.Client, method, url, body string) (int, string, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	return resp.StatusCode, string(b), nil
}

// kvClient runs random puts and gets on random nodes until stop closes (or
// a bound on operations is reached), recording every operation whose effect
// is known or possible.
func kvClient(id int, seed int64, addrs []string, start time.Time, stop <-chan struct{}, done *atomic.Int64) []porcupine.Operation {
	rng := rand.New(rand.NewSource(seed + int64(id)))
	client := &http.Client{Timeout: 3 * time.Second}
	now := func() int64 { return int64(time.Since(start)) }
	var history []porcupine.Operation
	for seq := 0; seq < 1_000_000; seq++ {
		select {
		case <-stop:
			return history
		default:
		}
		key := fmt.Sprint("k", rng.Intn(clusterKeys))
		url := fmt.Sprintf("http://%s/kv/%s", addrs[rng.Intn(len(addrs))], key)
		if rng.Intn(2) == 0 {
			in := kvInput{Put: true, Key: key, Value: fmt.Sprintf("c%d-%d", id, seq)}
			call := now()
			code, _, err := do(client, http.MethodPut, url, in.Value)
			ret := now()
			switch {
			case errors.Is(err, syscall.ECONNREFUSED) || code == http.StatusConflict:
				// The node was down, or raft dropped the proposal
				// before it reached any log: no effect.
				time.Sleep(10 * time.Millisecond)
				continue
			case err != nil || code != http.StatusNoContent:
				ret = math.MaxInt64 // it may still commit
			default:
				done.Add(1)
			}
			history = append(history, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: kvOutput{}, Return: ret})
			continue
		}
		call := now()
		code, body, err := do(client, http.MethodGet, url, "")
		ret := now()
		if err != nil || (code != http.StatusOK && code != http.StatusNotFound) {
			time.Sleep(10 * time.Millisecond)
			continue // a failed read has no effect
		}
		out := kvOutput{}
		if code == http.StatusOK {
			out = kvOutput{Value: body, Found: true}
		}
		history = append(history, porcupine.Operation{ClientId: id, Input: kvInput{Key: key}, Call: call, Output: out, Return: ret})
		done.Add(1)
	}
	return history
}

// TestSIGKILLCluster runs three raftexample-style nodes (RawNode on a
// Storage, TCP between them) as child processes while four clients put and
// get through random nodes, and SIGKILLs a node (a random one: leader or follower) at random
// moments, restarting it from its directory. The history, with a final
// read of every key, must be linearizable (porcupine), and all nodes must
// end with the same state. STRATA_RAFT_KILLS sets the number of kills
// (default 10); STRATA_RAFT_SEED replays a schedule.
func TestSIGKILLCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	kills := envInt(t, "STRATA_RAFT_KILLS", 10)
	seed := int64(envInt(t, "STRATA_RAFT_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("seed %d (STRATA_RAFT_SEED), %d kills (STRATA_RAFT_KILLS)", seed, kills)
	rng := rand.New(rand.NewSource(seed))
	c := newProcCluster(t)
	var addrs []string
	for _, n := range c.nodes {
		addrs = append(addrs, n.httpAddr)
	}

	start := time.Now()
	stop := make(chan struct{})
	var done atomic.Int64
	const clients = 4
	histories := make([][]porcupine.Operation, clients)
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			histories[i] = kvClient(i, seed, addrs, start, stop, &done)
		}(i)
	}
	stopClients := func() {
		select {
		case <-stop:
		default:
			close(stop)
			wg.Wait()
		}
	}
	defer stopClients()

	waitUntil(t, "first writes", func() bool { return done.Load() >= 20 })
	for k := 0; k < kills; k++ {
		time.Sleep(time.Duration(rng.Intn(400)) * time.Millisecond)
		n := c.nodes[rng.Intn(len(c.nodes))]
		c.kill(n)
		// The other two make progress without it.
		before := done.Load()
		waitUntil(t, fmt.Sprintf("progress after kill %d", k+1), func() bool { return done.Load() >= before+10 })
		c.start(n)
	}
	before := done.Load()
	waitUntil(t, "progress with all nodes back", func() bool { return done.Load() >= before+10 })
	stopClients()

	// Final reads of every key, retried until one answers.
	client := &http.Client{Timeout: 3 * time.Second}
	var history []porcupine.Operation
	for _, h := range histories {
		history = append(history, h...)
	}
	final := map[string]kvOutput{}
	for k := 0; k < clusterKeys; k++ {
		key := fmt.Sprint("k", k)
		var ok bool
		for try := 0; try < 100 && !ok; try++ {
			call := int64(time.Since(start))
			code, body, err := do(client, http.MethodGet, fmt.Sprintf("http://%s/kv/%s", addrs[try%3], key), "")
			if err != nil || (code != http.StatusOK && code != http.StatusNotFound) {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			out := kvOutput{}
			if code == http.StatusOK {
				out = kvOutput{Value: body, Found: true}
			}
			final[key] = out
			history = append(history, porcupine.Operation{ClientId: clients, Input: kvInput{Key: key}, Call: call, Output: out, Return: int64(time.Since(start))})
			ok = true
		}
		require.True(t, ok, "no final read of %s", key)
	}
	res, info := porcupine.CheckOperationsVerbose(kvModel, history, 60*time.Second)
	if res != porcupine.Ok {
		f, err := os.CreateTemp("", "raftetcd-history-*.html")
		if err == nil {
			_ = porcupine.Visualize(kvModel, info, f)
			_ = f.Close()
			t.Logf("history visualised in %s", f.Name())
		}
	}
	t.Logf("%d operations, %d acknowledged, check: %v", len(history), done.Load(), res)
	require.Equal(t, porcupine.Ok, res, "history not linearizable")

	// Every node, the killed ones included, ends with the same state.
	var states []*nodeState
	waitUntil(t, "all nodes to apply the same log", func() bool {
		states = states[:0]
		for _, n := range c.nodes {
			st := c.state(n)
			if st == nil {
				return false
			}
			states = append(states, st)
		}
		return states[0].Applied == states[1].Applied && states[1].Applied == states[2].Applied
	})
	for _, st := range states {
		require.Equal(t, states[0].KV, st.KV)
	}
	installs := 0
	for _, n := range c.nodes {
		b, err := os.ReadFile(n.logPath)
		require.NoError(t, err)
		installs += strings.Count(string(b), "installed snapshot at")
		require.NotContains(t, string(b), "DATA RACE", "node %d (see its log)", n.id)
	}
	t.Logf("%d snapshots sent by a leader were installed", installs)
	for k, out := range final {
		v, found := states[0].KV[k]
		require.Equal(t, out, kvOutput{Value: v, Found: found}, "key %s", k)
	}
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, name)
	return n
}
