// This file is not built with raftstore: TestHashicorpRaftSuite copies it
// into a copy of hashicorp/raft's package (package raft, under another
// import path) made at test time, where testing.go's MakeCluster is
// rewritten to give every node a strataStore instead of NewInmemStore().
//
// The copy's types (Log, LogType, ErrLogNotFound...) are distinct from the
// real hashicorp/raft's that raftstore implements, so strataStore converts
// entries field by field between the two; the store underneath is the real
// raftstore.Store on a Strata database on disk, with synced writes.

package raft

import (
	"errors"
	"os"
	"sync"
	"testing"

	upstream "github.com/hashicorp/raft"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/raftstore"
)

type strataStore struct {
	s *raftstore.Store
}

var (
	_ LogStore          = (*strataStore)(nil)
	_ MonotonicLogStore = (*strataStore)(nil)
	_ StableStore       = (*strataStore)(nil)
)

// Stores are closed and their directories removed when the test binary's
// tests are done, not when the test that made them ends: some of raft's
// tests leave a node running past their end (TestRaft_NoRestoreOnStart
// starts a raft it never shuts down), which the in-memory store tolerates
// and which would panic ("failed to save current term") on a closed
// database in the middle of a later test.
var (
	dirsMu sync.Mutex
	dirs   []string
)

func TestMain(m *testing.M) {
	code := m.Run()
	dirsMu.Lock()
	defer dirsMu.Unlock()
	// A node left running may still write: its database is left open (the
	// process exits next); the directories go.
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
	os.Exit(code)
}

// newStrataStore opens a raftstore.Store, synced, in a new directory.
func newStrataStore(t testing.TB) *strataStore {
	dir, err := os.MkdirTemp("", "raftstore-hraft-")
	if err != nil {
		t.Fatalf("MkdirTemp: %v", err)
	}
	s, err := raftstore.Open(dir, &db.Options{WriteBufferSize: 4 << 20}, nil)
	if err != nil {
		t.Fatalf("raftstore.Open: %v", err)
	}
	dirsMu.Lock()
	dirs = append(dirs, dir)
	dirsMu.Unlock()
	return &strataStore{s: s}
}

func toUpstream(l *Log) *upstream.Log {
	return &upstream.Log{
		Index:      l.Index,
		Term:       l.Term,
		Type:       upstream.LogType(l.Type),
		Data:       l.Data,
		Extensions: l.Extensions,
		AppendedAt: l.AppendedAt,
	}
}

func (a *strataStore) FirstIndex() (uint64, error) { return a.s.FirstIndex() }
func (a *strataStore) LastIndex() (uint64, error)  { return a.s.LastIndex() }
func (a *strataStore) IsMonotonic() bool           { return a.s.IsMonotonic() }

func (a *strataStore) GetLog(index uint64, log *Log) error {
	var l upstream.Log
	if err := a.s.GetLog(index, &l); err != nil {
		if errors.Is(err, upstream.ErrLogNotFound) {
			return ErrLogNotFound
		}
		return err
	}
	*log = Log{
		Index:      l.Index,
		Term:       l.Term,
		Type:       LogType(l.Type),
		Data:       l.Data,
		Extensions: l.Extensions,
		AppendedAt: l.AppendedAt,
	}
	return nil
}

func (a *strataStore) StoreLog(log *Log) error {
	return a.s.StoreLog(toUpstream(log))
}

func (a *strataStore) StoreLogs(logs []*Log) error {
	ul := make([]*upstream.Log, len(logs))
	for i, l := range logs {
		ul[i] = toUpstream(l)
	}
	return a.s.StoreLogs(ul)
}

func (a *strataStore) DeleteRange(min, max uint64) error { return a.s.DeleteRange(min, max) }

func (a *strataStore) Set(key, val []byte) error            { return a.s.Set(key, val) }
func (a *strataStore) Get(key []byte) ([]byte, error)       { return a.s.Get(key) }
func (a *strataStore) SetUint64(key []byte, v uint64) error { return a.s.SetUint64(key, v) }
func (a *strataStore) GetUint64(key []byte) (uint64, error) { return a.s.GetUint64(key) }
