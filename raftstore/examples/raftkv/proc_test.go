package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// childEnv marks a re-executed test binary that runs one raftkv node (main
// with the command line it was given) instead of the tests.
const childEnv = "RAFTKV_TEST_NODE"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// procNode is a raftkv node running as a child process, so that it can be
// SIGKILLed. Its addresses stay the same across restarts: its raft server
// ID is its HTTP address.
type procNode struct {
	i                  int
	dir                string
	raftAddr, httpAddr string
	logPath            string
	cmd                *exec.Cmd
	exited             chan struct{} // closed when cmd has been waited for
}

// procCluster is a three-node raftkv cluster of child processes on
// localhost.
type procCluster struct {
	t     *testing.T
	store string
	nodes []*procNode
}

// freeAddrs returns n distinct localhost addresses with ports nothing
// listens on now. The listeners stay open until all n are taken: a port
// closed at once can be handed out again by the next Listen, and two
// nodes then fight over it ("bind: address already in use").
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

func newProcCluster(t *testing.T, store string) *procCluster {
	c := &procCluster{t: t, store: store}
	dir := t.TempDir()
	addrs := freeAddrs(t, 6)
	for i := 0; i < 3; i++ {
		c.nodes = append(c.nodes, &procNode{
			i:        i,
			dir:      filepath.Join(dir, fmt.Sprint("n", i)),
			raftAddr: addrs[2*i],
			httpAddr: addrs[2*i+1],
			logPath:  filepath.Join(dir, fmt.Sprintf("n%d.log", i)),
		})
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			if n.running() {
				_ = n.cmd.Process.Kill()
				<-n.exited
			}
			if t.Failed() {
				if b, err := os.ReadFile(n.logPath); err == nil {
					if len(b) > 4000 {
						b = b[len(b)-4000:]
					}
					t.Logf("node %d log tail:\n%s", n.i, b)
				}
			}
		}
	})
	c.start(c.nodes[0], "-bootstrap")
	waitFor(t, "node 0 to lead", func() bool { return c.status(c.nodes[0])["state"] == "Leader" })
	for _, n := range c.nodes[1:] {
		c.start(n, "-join", c.nodes[0].httpAddr)
	}
	waitFor(t, "three voters", func() bool {
		l := c.leader()
		return l != nil && c.status(l)["num_peers"] == "2"
	})
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

// start runs node n, with extra arguments after the common ones.
func (c *procCluster) start(n *procNode, extra ...string) {
	require.False(c.t, n.running(), "node %d is running", n.i)
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(c.t, err)
	args := append([]string{"-dir", n.dir, "-raft", n.raftAddr, "-http", n.httpAddr, "-store", c.store}, extra...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(c.t, cmd.Start())
	n.cmd, n.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		_ = cmd.Wait()
		_ = logf.Close()
		close(exited)
	}(n.exited)
	// The HTTP API answers once the node has opened its stores.
	waitFor(c.t, fmt.Sprintf("node %d to serve", n.i), func() bool { return c.status(n) != nil || !n.running() })
	require.True(c.t, n.running(), "node %d exited; see %s", n.i, n.logPath)
}

// kill SIGKILLs node n and waits for it to exit.
func (c *procCluster) kill(n *procNode) {
	require.NoError(c.t, n.cmd.Process.Signal(syscall.SIGKILL))
	<-n.exited
}

// restart starts a killed node again from its directory.
func (c *procCluster) restart(n *procNode) { c.start(n) }

var statusClient = &http.Client{Timeout: 2 * time.Second}

// status returns node n's raft statistics, or nil if it does not answer.
func (c *procCluster) status(n *procNode) map[string]string {
	resp, err := statusClient.Get("http://" + n.httpAddr + "/status")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var st map[string]string
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return nil
	}
	return st
}

// leader returns a running node that says it leads, or nil.
func (c *procCluster) leader() *procNode {
	for _, n := range c.nodes {
		if n.running() && c.status(n)["state"] == "Leader" {
			return n
		}
	}
	return nil
}

// follower returns a random running node other than the leader, or nil
// while there is no leader.
func (c *procCluster) follower(rng *rand.Rand) *procNode {
	l := c.leader()
	if l == nil {
		return nil
	}
	var fs []*procNode
	for _, n := range c.nodes {
		if n != l && n.running() {
			fs = append(fs, n)
		}
	}
	if len(fs) == 0 {
		return nil
	}
	return fs[rng.Intn(len(fs))]
}

// waitFor polls cond until it holds or a generous deadline passes. It
// bounds a wait for the cluster to make progress, not a performance claim.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// request sends one request and returns the status and body; err is set
// when no response came back.
func request(client *http.Client, method, url, body string) (int, string, error) {
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
