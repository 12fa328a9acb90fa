// Command raftkv is a replicated key-value store: hashicorp/raft over TCP,
// with raftstore.Store as every node's log and stable store and
// raftstore.FSM as its state machine, and a small HTTP API.
//
//	PUT    /kv/KEY   (body: value)  replicate a write
//	GET    /kv/KEY                  linearizable read (?stale=true: local)
//	DELETE /kv/KEY                  replicate a delete
//	POST   /join?id=HTTP&addr=RAFT  add a voter
//	POST   /leave?id=HTTP           remove a server
//	GET    /status                  raft's statistics
//
// A node's raft server ID is its HTTP address, so a follower answers a
// write or a linearizable read with a redirect to the leader's API.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/raftstore"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.dir, "dir", "", "data directory (required)")
	flag.StringVar(&cfg.raftAddr, "raft", "127.0.0.1:7001", "raft TCP address")
	flag.StringVar(&cfg.httpAddr, "http", "127.0.0.1:8001", "HTTP API address; also this node's raft server ID")
	flag.BoolVar(&cfg.bootstrap, "bootstrap", false, "start a new cluster with this node as its only voter")
	flag.StringVar(&cfg.join, "join", "", "HTTP address of a cluster member to join through")
	flag.StringVar(&cfg.store, "store", "strata", "raft log and stable store: strata (raftstore.Store) or boltdb (raft-boltdb/v2, for comparison)")
	flag.Parse()
	if cfg.dir == "" {
		fmt.Fprintln(os.Stderr, "raftkv: -dir is required")
		os.Exit(2)
	}
	n, err := start(cfg, hclog.Info)
	if err != nil {
		log.Fatalf("raftkv: %v", err)
	}
	log.Printf("raftkv: node %s serving HTTP on %s, raft on %s", n.id, n.httpAddr, n.raftAddr)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	if err := n.close(); err != nil {
		log.Fatalf("raftkv: %v", err)
	}
}

type config struct {
	dir, raftAddr, httpAddr, join string
	store                         string // "strata" (the default when empty) or "boltdb"
	bootstrap                     bool
}

// logStore is what a node needs of its raft log and stable store.
type logStore interface {
	raft.LogStore
	raft.StableStore
	Close() error
}

// openLogStore opens the raft log and stable store cfg.store names under
// cfg.dir. Each kind has a directory or file of its own, so a directory
// never mixes the two.
func openLogStore(cfg config) (logStore, error) {
	switch cfg.store {
	case "", "strata":
		s, err := raftstore.Open(filepath.Join(cfg.dir, "raft"), nil, nil)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return s, nil
	case "boltdb":
		if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
			return nil, err
		}
		s, err := raftboltdb.NewBoltStore(filepath.Join(cfg.dir, "raft.bolt"))
		if err != nil {
			return nil, err
		}
		return s, nil
	default:
		return nil, fmt.Errorf("unknown -store %q: use strata or boltdb", cfg.store)
	}
}

type node struct {
	id                 raft.ServerID
	httpAddr, raftAddr string
	r                  *raft.Raft
	store              logStore
	fsm                *raftstore.FSM
	trans              *raft.NetworkTransport
	srv                *http.Server
}

// start opens a node's stores, starts raft and the HTTP API, and joins or
// bootstraps a cluster as cfg says. Port 0 in an address picks a free port.
func start(cfg config, level hclog.Level) (*node, error) {
	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return nil, err
	}
	var logOut io.Writer = os.Stderr
	if level == hclog.Off {
		logOut = io.Discard
	}
	n := &node{httpAddr: ln.Addr().String()}
	n.id = raft.ServerID(n.httpAddr)
	fail := func(err error) (*node, error) {
		ln.Close()
		n.closeStores()
		return nil, err
	}
	if n.store, err = openLogStore(cfg); err != nil {
		return fail(err)
	}
	if n.fsm, err = raftstore.OpenFSM(filepath.Join(cfg.dir, "fsm"), nil); err != nil {
		return fail(err)
	}
	snaps, err := raft.NewFileSnapshotStore(filepath.Join(cfg.dir, "snapshots"), 2, logOut)
	if err != nil {
		return fail(err)
	}
	n.trans, err = raft.NewTCPTransport(cfg.raftAddr, nil, 3, 10*time.Second, logOut)
	if err != nil {
		return fail(err)
	}
	n.raftAddr = string(n.trans.LocalAddr())
	rc := raft.DefaultConfig()
	rc.LocalID = n.id
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: level, Output: logOut})
	if cfg.bootstrap {
		has, err := raft.HasExistingState(n.store, n.store, snaps)
		if err != nil {
			return fail(err)
		}
		if !has {
			conf := raft.Configuration{Servers: []raft.Server{{ID: n.id, Address: n.trans.LocalAddr()}}}
			if err := raft.BootstrapCluster(rc, n.store, n.store, snaps, n.trans, conf); err != nil {
				return fail(err)
			}
		}
	}
	if n.r, err = raft.NewRaft(rc, n.fsm, n.store, n.store, snaps, n.trans); err != nil {
		return fail(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/kv/", n.handleKV)
	mux.HandleFunc("/join", n.handleJoin)
	mux.HandleFunc("/leave", n.handleLeave)
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(n.r.Stats())
	})
	n.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = n.srv.Serve(ln) }()
	if cfg.join != "" {
		if err := joinCluster(cfg.join, n.id, n.raftAddr); err != nil {
			_ = n.close()
			return nil, err
		}
	}
	return n, nil
}

// joinCluster asks a member to add this node, retrying while the cluster
// elects a leader.
func joinCluster(member string, id raft.ServerID, raftAddr string) error {
	u := fmt.Sprintf("http://%s/join?id=%s&addr=%s", member, id, raftAddr)
	var last error
	for attempt := 0; attempt < 50; attempt++ {
		resp, err := http.Post(u, "text/plain", nil)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("join through %s: %s: %s", member, resp.Status, bytes.TrimSpace(body))
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	return last
}

func (n *node) closeStores() {
	if n.store != nil {
		_ = n.store.Close()
	}
	if n.fsm != nil {
		_ = n.fsm.Close()
	}
}

func (n *node) close() error {
	_ = n.srv.Close()
	err := n.r.Shutdown().Error()
	n.closeStores()
	return err
}

// toLeader redirects a request a follower cannot serve to the leader's
// API. It reports whether it answered.
func (n *node) toLeader(w http.ResponseWriter, req *http.Request) bool {
	if n.r.State() == raft.Leader {
		return false
	}
	// A node that just joined, or a cluster in an election, may not know
	// the leader for a moment.
	_, leader := n.r.LeaderWithID()
	for wait := 0; leader == "" && wait < 50; wait++ {
		time.Sleep(100 * time.Millisecond)
		_, leader = n.r.LeaderWithID()
	}
	if n.r.State() == raft.Leader {
		return false
	}
	if leader == "" {
		http.Error(w, "no leader", http.StatusServiceUnavailable)
		return true
	}
	u := *req.URL
	u.Scheme, u.Host = "http", string(leader)
	http.Redirect(w, req, u.String(), http.StatusTemporaryRedirect)
	return true
}

func (n *node) handleKV(w http.ResponseWriter, req *http.Request) {
	key := []byte(strings.TrimPrefix(req.URL.Path, "/kv/"))
	switch req.Method {
	case http.MethodGet:
		var v []byte
		var err error
		if req.URL.Query().Get("stale") == "true" {
			v, err = n.fsm.Get(key)
		} else {
			if n.toLeader(w, req) {
				return
			}
			v, err = n.fsm.LinearizableGet(n.r, key, 5*time.Second)
		}
		if errors.Is(err, db.ErrNotFound) {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(v)
	case http.MethodPut, http.MethodDelete:
		if n.toLeader(w, req) {
			return
		}
		cmd := raftstore.EncodeDelete(key)
		if req.Method == http.MethodPut {
			v, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			cmd = raftstore.EncodePut(key, v)
		}
		f := n.r.Apply(cmd, 10*time.Second)
		err := f.Error()
		if err == nil {
			if e, ok := f.Response().(error); ok {
				err = e
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "use GET, PUT or DELETE", http.StatusMethodNotAllowed)
	}
}

func (n *node) handleJoin(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	if n.toLeader(w, req) {
		return
	}
	id, addr := req.URL.Query().Get("id"), req.URL.Query().Get("addr")
	if id == "" || addr == "" {
		http.Error(w, "join needs id and addr", http.StatusBadRequest)
		return
	}
	err := n.r.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, 10*time.Second).Error()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = fmt.Fprintln(w, "joined")
}

func (n *node) handleLeave(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	if n.toLeader(w, req) {
		return
	}
	id := req.URL.Query().Get("id")
	if id == "" {
		http.Error(w, "leave needs id", http.StatusBadRequest)
		return
	}
	if err := n.r.RemoveServer(raft.ServerID(id), 0, 10*time.Second).Error(); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = fmt.Fprintln(w, "removed")
}
