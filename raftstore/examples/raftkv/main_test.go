package main

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestThreeNodes starts three nodes on localhost with raft's TCP transport,
// writes through a follower (redirected to the leader), reads from every
// node, and removes a node.
func TestThreeNodes(t *testing.T) {
	dir := t.TempDir()
	var nodes []*node
	for i := 0; i < 3; i++ {
		cfg := config{
			dir:       filepath.Join(dir, fmt.Sprint("n", i)),
			raftAddr:  "127.0.0.1:0",
			httpAddr:  "127.0.0.1:0",
			bootstrap: i == 0,
		}
		if i > 0 {
			cfg.join = nodes[0].httpAddr
		}
		n, err := start(cfg, hclog.Off)
		require.NoError(t, err, "node %d", i)
		defer n.close()
		nodes = append(nodes, n)
	}
	fut := nodes[0].r.GetConfiguration()
	require.NoError(t, fut.Error())
	require.Len(t, fut.Configuration().Servers, 3)

	var follower *node
	for _, n := range nodes {
		if n.r.State() != raft.Leader {
			follower = n
		}
	}
	require.NotNil(t, follower)
	code, body := do(t, http.MethodPut, "http://"+follower.httpAddr+"/kv/greeting", "hello")
	require.Equal(t, http.StatusNoContent, code, body)
	code, body = do(t, http.MethodPut, "http://"+follower.httpAddr+"/kv/gone", "x")
	require.Equal(t, http.StatusNoContent, code, body)
	code, body = do(t, http.MethodDelete, "http://"+follower.httpAddr+"/kv/gone", "")
	require.Equal(t, http.StatusNoContent, code, body)

	for _, n := range nodes {
		code, body = do(t, http.MethodGet, "http://"+n.httpAddr+"/kv/greeting", "")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "hello", body)
		code, _ = do(t, http.MethodGet, "http://"+n.httpAddr+"/kv/gone", "")
		require.Equal(t, http.StatusNotFound, code)
	}
	// A stale read on a follower sees the write once it has been applied
	// there.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body = do(t, http.MethodGet, "http://"+follower.httpAddr+"/kv/greeting?stale=true", "")
		if code == http.StatusOK {
			require.Equal(t, "hello", body)
			break
		}
		require.True(t, time.Now().Before(deadline), "follower never applied the write")
		time.Sleep(20 * time.Millisecond)
	}

	code, body = do(t, http.MethodPost, fmt.Sprintf("http://%s/leave?id=%s", follower.httpAddr, follower.id), "")
	require.Equal(t, http.StatusOK, code, body)
	var leader *node
	for _, n := range nodes {
		if n.r.State() == raft.Leader {
			leader = n
		}
	}
	require.NotNil(t, leader)
	fut = leader.r.GetConfiguration()
	require.NoError(t, fut.Error())
	require.Len(t, fut.Configuration().Servers, 2)
}
