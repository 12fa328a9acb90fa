package db

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
)

// lockManager holds the key locks of pessimistic transactions: exclusive,
// per (family, key), held until the transaction commits or rolls back, as
// RocksDB's TransactionDB point locks (write-committed). The table is
// striped by a hash of the key so that transactions on different keys do
// not meet on one mutex.
//
// Waits: a transaction that finds a key locked by another records the edge
// "waiter -> holder" in the wait-for graph and waits, up to its
// LockTimeout, for the holder to release the key. Before waiting it follows
// the edges from the holder: reaching itself means the wait would close a
// cycle (a deadlock), and the call fails at once with ErrConflict. Edges are
// set and checked under one mutex (waitMu), so of two transactions that
// begin to wait on each other the second to take waitMu sees the first's
// edge: a cycle never forms unseen. Every lock has one holder, so each
// waiter has one outgoing edge and the check is a walk along a chain.
type lockManager struct {
	seed    maphash.Seed
	stripes [lockStripes]lockStripe

	waitMu  sync.Mutex
	waitFor map[*Transaction]*Transaction // under waitMu
}

const lockStripes = 64

type lockStripe struct {
	mu    sync.Mutex
	locks map[lockKey]*keyLock
}

type lockKey struct {
	cf  uint32
	key string
}

// keyLock is a held lock; released is closed when its holder lets it go.
type keyLock struct {
	holder   *Transaction
	released chan struct{}
}

// defaultLockTimeout is TransactionOptions.LockTimeout's 0.
const defaultLockTimeout = time.Second

func (m *lockManager) stripe(k lockKey) *lockStripe {
	// The seed is set once, before any transaction (see DB.lockManager).
	return &m.stripes[maphash.String(m.seed, k.key)%lockStripes]
}

// lockManager returns the database's lock manager, made on first use.
func (d *DB) lockManager() *lockManager {
	d.txnLocksOnce.Do(func() {
		m := &lockManager{seed: maphash.MakeSeed(), waitFor: map[*Transaction]*Transaction{}}
		for i := range m.stripes {
			m.stripes[i].locks = map[lockKey]*keyLock{}
		}
		d.txnLocks = m
	})
	return d.txnLocks
}

// lock takes k for t, waiting up to timeout. It returns nil when t holds k
// (already or now), and an error wrapping ErrConflict on a timeout or a
// deadlock.
func (m *lockManager) lock(t *Transaction, k lockKey, timeout time.Duration) error {
	s := m.stripe(k)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s.mu.Lock()
		l := s.locks[k]
		if l == nil {
			s.locks[k] = &keyLock{holder: t, released: make(chan struct{})}
			s.mu.Unlock()
			t.locks = append(t.locks, k)
			return nil
		}
		if l.holder == t {
			s.mu.Unlock()
			return nil
		}
		holder := l.holder
		m.waitMu.Lock()
		// Every edge is a live wait or one about to be removed by a waiter
		// that woke, and no cycle forms unseen, so the walk ends; the bound
		// keeps it finite whatever a bug elsewhere left in the map.
		for h, n := holder, 0; h != nil && n <= len(m.waitFor); h, n = m.waitFor[h], n+1 {
			if h == t {
				m.waitMu.Unlock()
				s.mu.Unlock()
				return errors.Wrapf(ErrConflict, "strata: deadlock: waiting for the lock on key %q would close a cycle of waiting transactions", k.key)
			}
		}
		m.waitFor[t] = holder
		m.waitMu.Unlock()
		s.mu.Unlock()

		if timer == nil {
			timer = time.NewTimer(timeout)
		}
		var timedOut bool
		select {
		case <-l.released:
		case <-timer.C:
			timedOut = true
		}
		m.waitMu.Lock()
		delete(m.waitFor, t)
		m.waitMu.Unlock()
		if timedOut {
			return errors.Wrapf(ErrConflict, "strata: lock wait on key %q timed out after %s", k.key, timeout)
		}
	}
}

// unlockAll releases every lock t holds.
func (m *lockManager) unlockAll(t *Transaction) {
	for _, k := range t.locks {
		s := m.stripe(k)
		s.mu.Lock()
		if l := s.locks[k]; l != nil && l.holder == t {
			delete(s.locks, k)
			close(l.released)
		}
		s.mu.Unlock()
	}
	t.locks = nil
}
