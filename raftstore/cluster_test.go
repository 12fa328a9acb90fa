package raftstore

import (
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// waitFor polls cond until it holds or a generous deadline passes. It
// bounds a wait for the cluster to make progress, not a performance claim.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type testNode struct {
	id    raft.ServerID
	addr  raft.ServerAddress
	dir   string
	store *Store
	fsm   *FSM
	snaps raft.SnapshotStore
	trans *raft.InmemTransport
	r     *raft.Raft
}

type testCluster struct {
	t *testing.T
	// mu guards each node's r, store and fsm, which client goroutines read
	// while the test goroutine stops and restarts nodes.
	mu    sync.Mutex
	nodes []*testNode
	conf  func(*raft.Config)
}

func testConfig(id raft.ServerID) *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = id
	c.HeartbeatTimeout = 50 * time.Millisecond
	c.ElectionTimeout = 50 * time.Millisecond
	c.LeaderLeaseTimeout = 50 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	// Snapshots only when a test asks for one.
	c.SnapshotThreshold = 1 << 40
	c.SnapshotInterval = time.Hour
	c.Logger = hclog.New(&hclog.LoggerOptions{Name: string(id), Level: hclog.Off, Output: io.Discard})
	return c
}

// newCluster starts n nodes, each with a Store, an FSM and a file snapshot
// store in its own directory, connected by raft's in-memory transport.
func newCluster(t *testing.T, n int, conf func(*raft.Config)) *testCluster {
	c := &testCluster{t: t, conf: conf}
	base := t.TempDir()
	var servers []raft.Server
	for i := 0; i < n; i++ {
		nd := &testNode{
			id:  raft.ServerID(fmt.Sprintf("node%d", i)),
			dir: filepath.Join(base, fmt.Sprintf("node%d", i)),
		}
		nd.addr, nd.trans = raft.NewInmemTransport(raft.ServerAddress(nd.id))
		c.nodes = append(c.nodes, nd)
		servers = append(servers, raft.Server{ID: nd.id, Address: nd.addr})
	}
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			if nd.r != nil {
				c.stop(nd)
			}
		}
	})
	for _, nd := range c.nodes {
		c.start(nd, &raft.Configuration{Servers: servers})
	}
	return c
}

func (c *testCluster) start(nd *testNode, bootstrap *raft.Configuration) {
	t := c.t
	store, err := Open(filepath.Join(nd.dir, "raft"), nil, nil)
	require.NoError(t, err)
	fsm, err := OpenFSM(filepath.Join(nd.dir, "fsm"), nil)
	require.NoError(t, err)
	nd.snaps, err = raft.NewFileSnapshotStore(filepath.Join(nd.dir, "snaps"), 2, io.Discard)
	require.NoError(t, err)
	cfg := testConfig(nd.id)
	if c.conf != nil {
		c.conf(cfg)
	}
	if bootstrap != nil {
		require.NoError(t, raft.BootstrapCluster(cfg, store, store, nd.snaps, nd.trans, *bootstrap))
	}
	r, err := raft.NewRaft(cfg, fsm, store, store, nd.snaps, nd.trans)
	require.NoError(t, err)
	c.mu.Lock()
	nd.store, nd.fsm, nd.r = store, fsm, r
	c.mu.Unlock()
}

// stop shuts a node down and closes its stores, as a clean process exit.
func (c *testCluster) stop(nd *testNode) {
	c.mu.Lock()
	r, store, fsm := nd.r, nd.store, nd.fsm
	nd.r = nil
	c.mu.Unlock()
	require.NoError(c.t, r.Shutdown().Error())
	require.NoError(c.t, store.Close())
	require.NoError(c.t, fsm.Close())
	for _, o := range c.nodes {
		if o != nd {
			o.trans.Disconnect(nd.addr)
		}
	}
}

// restart brings a stopped node back from its directories on a fresh
// transport.
func (c *testCluster) restart(nd *testNode) {
	nd.addr, nd.trans = raft.NewInmemTransport(nd.addr)
	for _, o := range c.nodes {
		if o != nd {
			o.trans.Connect(nd.addr, nd.trans)
			nd.trans.Connect(o.addr, o.trans)
		}
	}
	c.start(nd, nil)
}

func (c *testCluster) leader() *testNode {
	var l *testNode
	waitFor(c.t, "a leader", func() bool {
		for _, nd := range c.nodes {
			if nd.r != nil && nd.r.State() == raft.Leader {
				l = nd
				return true
			}
		}
		return false
	})
	return l
}

func (c *testCluster) put(k, v string) {
	c.t.Helper()
	for attempt := 0; ; attempt++ {
		f := c.leader().r.Apply(EncodePut([]byte(k), []byte(v)), 10*time.Second)
		err := f.Error()
		if err == raft.ErrNotLeader || err == raft.ErrLeadershipLost {
			require.Less(c.t, attempt, 20, "put %s: %v", k, err)
			continue
		}
		require.NoError(c.t, err, "put %s", k)
		require.Nil(c.t, f.Response())
		return
	}
}

// converge waits until every running node has applied everything the
// leader has, then checks all state machines hold want.
func (c *testCluster) converge(want map[string]string) {
	l := c.leader()
	require.NoError(c.t, l.r.Barrier(10*time.Second).Error())
	applied := l.r.AppliedIndex()
	for _, nd := range c.nodes {
		if nd.r == nil {
			continue
		}
		waitFor(c.t, fmt.Sprintf("%s to apply index %d", nd.id, applied), func() bool {
			return nd.r.AppliedIndex() >= applied
		})
		// raft moves AppliedIndex when it hands entries to the FSM
		// goroutine, before the FSM applies them: poll the state a while
		// before judging it.
		got := fsmContents(c.t, nd.fsm)
		for deadline := time.Now().Add(10 * time.Second); !reflect.DeepEqual(got, want) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			got = fsmContents(c.t, nd.fsm)
		}
		require.Equal(c.t, want, got, "state machine of %s", nd.id)
	}
}

func TestClusterReplicates(t *testing.T) {
	c := newCluster(t, 3, nil)
	want := map[string]string{}
	for i := 0; i < 100; i++ {
		k, v := fmt.Sprintf("k%03d", i%40), fmt.Sprintf("v%d", i)
		c.put(k, v)
		want[k] = v
	}
	c.converge(want)

	// Every node's log store holds the same entries.
	l := c.leader()
	last, err := l.store.LastIndex()
	require.NoError(t, err)
	for _, nd := range c.nodes {
		nl, err := nd.store.LastIndex()
		require.NoError(t, err)
		require.Equal(t, last, nl, "last index of %s", nd.id)
		var a, b raft.Log
		for i := uint64(1); i <= last; i++ {
			require.NoError(t, l.store.GetLog(i, &a))
			require.NoError(t, nd.store.GetLog(i, &b))
			require.Equal(t, a.Term, b.Term)
			require.Equal(t, a.Type, b.Type)
			require.Equal(t, a.Data, b.Data)
		}
	}

	// The whole cluster restarts from its directories and goes on.
	for _, nd := range c.nodes {
		c.stop(nd)
	}
	for _, nd := range c.nodes {
		c.restart(nd)
	}
	c.put("after", "restart")
	want["after"] = "restart"
	c.converge(want)
}

func TestClusterSnapshotInstall(t *testing.T) {
	c := newCluster(t, 3, func(cfg *raft.Config) { cfg.TrailingLogs = 10 })
	want := map[string]string{}
	put := func(i int) {
		k, v := fmt.Sprintf("k%03d", i%150), fmt.Sprintf("v%d", i)
		c.put(k, v)
		want[k] = v
	}
	for i := 0; i < 30; i++ {
		put(i)
	}
	c.converge(want)

	// A follower goes away; the cluster moves on and compacts its log past
	// everything the follower has.
	var lagging *testNode
	for _, nd := range c.nodes {
		if nd.r.State() != raft.Leader {
			lagging = nd
			break
		}
	}
	c.stop(lagging)
	for i := 30; i < 300; i++ {
		put(i)
	}
	for _, nd := range c.nodes {
		if nd.r != nil {
			require.NoError(t, nd.r.Snapshot().Error(), "snapshot on %s", nd.id)
		}
	}
	first, err := c.leader().store.FirstIndex()
	require.NoError(t, err)

	// Brought back from its Strata directory, it can only catch up by
	// installing the leader's snapshot.
	c.restart(lagging)
	lastBefore, err := lagging.store.LastIndex()
	require.NoError(t, err)
	require.Less(t, lastBefore+1, first, "the leader's log must have moved past the follower")
	put(300)
	c.converge(want)
	snaps, err := lagging.snaps.List()
	require.NoError(t, err)
	require.NotEmpty(t, snaps, "the follower installed no snapshot")
	// A monotonic store drops every entry older than the installed snapshot.
	lf, err := lagging.store.FirstIndex()
	require.NoError(t, err)
	require.Greater(t, lf, lastBefore)
}
