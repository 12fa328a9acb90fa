package raftetcd

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// This file is a raftexample-style key-value node: raft.RawNode on a
// Storage, a length-prefixed TCP transport for raft messages, and an HTTP
// API for clients. The cluster test runs three of them as child processes
// of the test binary (see TestMain) and SIGKILLs them.
//
// Every client operation, reads included, is a log entry: a get answers
// with the value at its place in the log, so reads are linearizable
// without leases. The state machine is a map rebuilt on start from the
// last snapshot and the log (raft hands back every committed entry past
// the snapshot); every snapEvery applied entries the node snapshots the
// map and compacts its log, so a restarted or lagging node may be sent a
// snapshot.

const (
	childEnv  = "RAFTETCD_TEST_NODE"
	tickEvery = 20 * time.Millisecond
	snapEvery = 100
	keepAfter = 5 // entries kept before a snapshot's index
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := runNode(os.Args[1:]); err != nil {
			log.Fatal(err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// op is one client command in the log.
type op struct {
	ID    uint64 `json:"id"`
	Put   bool   `json:"put,omitempty"`
	Key   string `json:"k"`
	Value string `json:"v,omitempty"`
}

type result struct {
	value string
	found bool
}

type kvNode struct {
	id      uint64
	peers   []string // raft addresses, peers[i] is node i+1
	storage *Storage
	rn      *raft.RawNode

	recvc     chan pb.Message
	propc     chan proposal
	sendc     []chan pb.Message // per peer (index id-1), nil for self
	snapc     chan snapReport
	mu        sync.Mutex // guards kv, applied and pending
	kv        map[string]string
	applied   uint64
	pending   map[uint64]chan result
	confState pb.ConfState
}

type proposal struct {
	data []byte
	errc chan error
}

type snapReport struct {
	to     uint64
	failed bool
}

// runNode runs one node: args are id, the comma-separated raft addresses
// of all nodes, the HTTP address and the directory.
func runNode(args []string) error {
	if len(args) != 4 {
		return fmt.Errorf("usage: id raft-addrs http-addr dir, got %q", args)
	}
	id, err := strconv.ParseUint(args[0], 10, 64)
	if err != nil {
		return err
	}
	n := &kvNode{id: id, peers: strings.Split(args[1], ","), recvc: make(chan pb.Message, 1024),
		propc: make(chan proposal, 256), snapc: make(chan snapReport, 16),
		kv: map[string]string{}, pending: map[uint64]chan result{}}
	if n.storage, err = Open(args[3], nil, nil); err != nil {
		return err
	}
	snap, err := n.storage.Snapshot()
	if err != nil {
		return err
	}
	if raft.IsEmptySnap(snap) {
		// A fresh node: the log starts after a snapshot at index 1 that
		// holds the three voters, the same on every node.
		voters := pb.ConfState{}
		for i := range n.peers {
			voters.Voters = append(voters.Voters, uint64(i+1))
		}
		snap = pb.Snapshot{Metadata: pb.SnapshotMetadata{Index: 1, Term: 1, ConfState: voters}, Data: []byte("{}")}
		if err := n.storage.ApplySnapshot(snap); err != nil {
			return err
		}
	}
	if err := n.restore(snap); err != nil {
		return err
	}
	n.rn, err = raft.NewRawNode(&raft.Config{
		ID: id, ElectionTick: 10, HeartbeatTick: 1, Storage: n.storage, Applied: snap.Metadata.Index,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, CheckQuorum: true, PreVote: true,
		Logger: &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)},
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", n.peers[id-1])
	if err != nil {
		return err
	}
	go n.acceptRaft(ln)
	n.sendc = make([]chan pb.Message, len(n.peers))
	for i, addr := range n.peers {
		if uint64(i+1) != id {
			n.sendc[i] = make(chan pb.Message, 1024)
			go n.sendLoop(addr, n.sendc[i])
		}
	}
	hln, err := net.Listen("tcp", args[2])
	if err != nil {
		return err
	}
	go func() { _ = http.Serve(hln, n) }()
	return n.loop()
}

func (n *kvNode) restore(snap pb.Snapshot) error {
	kv := map[string]string{}
	if err := json.Unmarshal(snap.Data, &kv); err != nil {
		return err
	}
	n.mu.Lock()
	n.kv, n.applied, n.confState = kv, snap.Metadata.Index, snap.Metadata.ConfState
	n.mu.Unlock()
	return nil
}

// loop is the raft goroutine: ticks, steps, proposals and Readies.
func (n *kvNode) loop() error {
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			n.rn.Tick()
		case m := <-n.recvc:
			_ = n.rn.Step(m)
		case p := <-n.propc:
			p.errc <- n.rn.Propose(p.data)
		case r := <-n.snapc:
			st := raft.SnapshotFinish
			if r.failed {
				st = raft.SnapshotFailure
			}
			n.rn.ReportSnapshot(r.to, st)
		}
		for n.rn.HasReady() {
			rd := n.rn.Ready()
			if err := n.storage.SaveReady(rd.HardState, rd.Entries, rd.Snapshot, rd.MustSync); err != nil {
				return err
			}
			if !raft.IsEmptySnap(rd.Snapshot) {
				if err := n.restore(rd.Snapshot); err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "installed snapshot at %d\n", rd.Snapshot.Metadata.Index)
			}
			for _, m := range rd.Messages {
				n.send(m)
			}
			if err := n.apply(rd.CommittedEntries); err != nil {
				return err
			}
			n.rn.Advance(rd)
		}
	}
}

func (n *kvNode) send(m pb.Message) {
	if m.To == 0 || m.To > uint64(len(n.peers)) || m.To == n.id {
		return
	}
	select {
	case n.sendc[m.To-1] <- m:
	default:
		// The peer is slow or down: drop, raft resends.
		if m.Type == pb.MsgSnap {
			n.rn.ReportSnapshot(m.To, raft.SnapshotFailure)
		}
		n.rn.ReportUnreachable(m.To)
	}
}

func (n *kvNode) apply(ents []pb.Entry) error {
	for _, e := range ents {
		n.mu.Lock()
		if e.Index <= n.applied {
			n.mu.Unlock()
			continue
		}
		if e.Type == pb.EntryNormal && len(e.Data) > 0 {
			var o op
			if err := json.Unmarshal(e.Data, &o); err != nil {
				n.mu.Unlock()
				return fmt.Errorf("entry %d: %w", e.Index, err)
			}
			var r result
			if o.Put {
				n.kv[o.Key] = o.Value
			} else {
				r.value, r.found = n.kv[o.Key]
			}
			if c, ok := n.pending[o.ID]; ok {
				c <- r
				delete(n.pending, o.ID)
			}
		}
		n.applied = e.Index
		applied := n.applied
		var data []byte
		if applied%snapEvery == 0 {
			data, _ = json.Marshal(n.kv)
		}
		n.mu.Unlock()
		if data != nil {
			if _, err := n.storage.CreateSnapshot(applied, &n.confState, data); err != nil && err != raft.ErrSnapOutOfDate {
				return err
			}
			if applied > keepAfter {
				if err := n.storage.Compact(applied - keepAfter); err != nil && err != raft.ErrCompacted {
					return err
				}
			}
		}
	}
	return nil
}

// ServeHTTP: GET /kv/K and PUT /kv/K (body: value) go through the log;
// GET /state returns the applied index and the map.
func (n *kvNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/state" {
		n.mu.Lock()
		b, _ := json.Marshal(map[string]any{"applied": n.applied, "kv": n.kv})
		n.mu.Unlock()
		_, _ = w.Write(b)
		return
	}
	key, ok := strings.CutPrefix(r.URL.Path, "/kv/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	o := op{ID: rand.Uint64(), Key: key}
	if r.Method == http.MethodPut {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		o.Put, o.Value = true, string(b)
	}
	data, _ := json.Marshal(o)
	resc := make(chan result, 1)
	n.mu.Lock()
	n.pending[o.ID] = resc
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.pending, o.ID)
		n.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(r.Context(), 1500*time.Millisecond)
	defer cancel()
	p := proposal{data: data, errc: make(chan error, 1)}
	select {
	case n.propc <- p:
	case <-ctx.Done():
		http.Error(w, "timeout", http.StatusServiceUnavailable)
		return
	}
	if err := <-p.errc; err != nil {
		// Not in any log (no leader known): a definite no.
		http.Error(w, "dropped: "+err.Error(), http.StatusConflict)
		return
	}
	select {
	case res := <-resc:
		switch {
		case o.Put:
			w.WriteHeader(http.StatusNoContent)
		case res.found:
			_, _ = io.WriteString(w, res.value)
		default:
			http.Error(w, "not found", http.StatusNotFound)
		}
	case <-ctx.Done():
		http.Error(w, "timeout", http.StatusServiceUnavailable)
	}
}

// The transport: each message is a 4-byte big-endian length and the
// marshalled raftpb.Message. A failed connection drops what was queued
// (raft retransmits) and is dialled again.

func (n *kvNode) acceptRaft(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			br := bufio.NewReader(c)
			var hdr [4]byte
			for {
				if _, err := io.ReadFull(br, hdr[:]); err != nil {
					return
				}
				sz := binary.BigEndian.Uint32(hdr[:])
				if sz > 64<<20 {
					return
				}
				buf := make([]byte, sz)
				if _, err := io.ReadFull(br, buf); err != nil {
					return
				}
				var m pb.Message
				if m.Unmarshal(buf) != nil {
					return
				}
				n.recvc <- m
			}
		}()
	}
}

func (n *kvNode) sendLoop(addr string, ch chan pb.Message) {
	var c net.Conn
	var bw *bufio.Writer
	var batch []pb.Message
	for m := range ch {
		// Write out whatever else is queued before flushing.
		batch = append(batch[:0], m)
		for more := true; more && len(batch) < 256; {
			select {
			case m2 := <-ch:
				batch = append(batch, m2)
			default:
				more = false
			}
		}
		var err error
		if c == nil {
			if c, err = net.DialTimeout("tcp", addr, 200*time.Millisecond); err != nil {
				c = nil
			} else {
				bw = bufio.NewWriter(c)
			}
		}
		if c != nil {
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			for i := 0; err == nil && i < len(batch); i++ {
				err = writeMsg(bw, batch[i])
			}
			if err == nil {
				err = bw.Flush()
			}
			if err != nil {
				_ = c.Close()
				c = nil
			}
		}
		for _, m := range batch {
			n.report(m, c == nil)
		}
	}
}

// report tells raft how a snapshot message fared.
func (n *kvNode) report(m pb.Message, failed bool) {
	if m.Type != pb.MsgSnap {
		return
	}
	select {
	case n.snapc <- snapReport{to: m.To, failed: failed}:
	default:
	}
}

func writeMsg(w *bufio.Writer, m pb.Message) error {
	b, err := m.Marshal()
	if err != nil {
		return err
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
