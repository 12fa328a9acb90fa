// Package raftstore makes a Strata database the storage of a
// hashicorp/raft node: Store is a raft.LogStore (and
// raft.MonotonicLogStore) and a raft.StableStore, and FSM is a key-value
// state machine whose snapshots are Strata checkpoints.
//
// The package lives in a module of its own so that hashicorp/raft is not
// downloaded by users of the storage engine alone.
package raftstore

import (
	"bytes"
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/hashicorp/raft"
	"github.com/stratadb/strata/db"
)

// ErrKeyNotFound is returned by Get and GetUint64 for a key that was never
// set. hashicorp/raft recognises a missing key by the error text "not
// found" (the convention of raft-boltdb and raft's InmemStore), so this
// error is returned as is, never wrapped.
var ErrKeyNotFound = errors.New("not found")

// Key layout. Every key starts with the store's namespace; then one tag
// byte: log entries sort before stable keys, and a log entry's key ends
// with its index in big-endian, so a range of the log is one contiguous
// scan and the first and last entries are one seek each.
const (
	tagLog    = 'l'
	tagStable = 's'
)

// Options configure a Store.
type Options struct {
	// Namespace is prepended to every key the store writes, so several
	// raft groups (or a group and other data) can share one database.
	// Two stores on one database must use namespaces neither of which is a
	// prefix of the other. Empty means none.
	Namespace []byte
	// NoSync makes StoreLogs and Set return before the WAL is synced. Unsafe:
	// raft assumes what it stored survives a crash. For benchmarks only.
	NoSync bool
}

// Store is a raft.LogStore, raft.MonotonicLogStore and raft.StableStore on a
// Strata database. It is safe for concurrent use.
type Store struct {
	d      *db.DB
	owned  bool // Close closes d
	wo     *db.WriteOptions
	logLo  []byte // namespace + tagLog: first possible log key
	logHi  []byte // namespace + tagLog+1: just past every log key
	stable []byte // namespace + tagStable

	// first and last cache the first and last log index (0 when the log is
	// empty). They change only under wmu, after the write that changes
	// them is durable.
	first, last atomic.Uint64

	wmu   sync.Mutex // serialises writes to the log
	batch *db.Batch
	buf   []byte
}

var (
	_ raft.LogStore          = (*Store)(nil)
	_ raft.MonotonicLogStore = (*Store)(nil)
	_ raft.StableStore       = (*Store)(nil)
)

// Open opens (creating if missing) a Strata database in dir and returns a
// Store on it that owns the database: Close closes it.
func Open(dir string, dbOpts *db.Options, opts *Options) (*Store, error) {
	var o db.Options
	if dbOpts != nil {
		o = *dbOpts
	}
	o.CreateIfMissing = true
	d, err := db.Open(dir, &o)
	if err != nil {
		return nil, err
	}
	s, err := New(d, opts)
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New returns a Store on an open database. The caller keeps ownership of
// d: Close leaves it open.
func New(d *db.DB, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	ns := append([]byte(nil), o.Namespace...)
	s := &Store{
		d:      d,
		wo:     &db.WriteOptions{Sync: !o.NoSync},
		logLo:  append(append([]byte(nil), ns...), tagLog),
		logHi:  append(append([]byte(nil), ns...), tagLog+1),
		stable: append(append([]byte(nil), ns...), tagStable),
		batch:  db.NewBatch(),
	}
	if err := s.loadBounds(); err != nil {
		return nil, err
	}
	return s, nil
}

// DB returns the database the store writes to.
func (s *Store) DB() *db.DB { return s.d }

// Close closes the database if the store opened it.
func (s *Store) Close() error {
	if s.owned {
		return s.d.Close()
	}
	return nil
}

// logKey appends the key of log entry idx to dst.
func (s *Store) logKey(dst []byte, idx uint64) []byte {
	dst = append(dst, s.logLo...)
	return binary.BigEndian.AppendUint64(dst, idx)
}

// loadBounds sets the cached first and last index from the database: one
// seek to each end of the log's key range.
func (s *Store) loadBounds() error {
	it := s.d.NewIterator(&db.ReadOptions{LowerBound: s.logLo, UpperBound: s.logHi})
	defer it.Close()
	var first, last uint64
	it.SeekToFirst()
	if it.Valid() {
		idx, err := s.indexOf(it.Key())
		if err != nil {
			return err
		}
		first = idx
		it.SeekToLast()
		if !it.Valid() {
			return errors.Wrap(db.ErrCorruption, "raftstore: log has a first entry but no last")
		}
		if last, err = s.indexOf(it.Key()); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return errors.Wrap(err, "raftstore: reading log bounds")
	}
	s.first.Store(first)
	s.last.Store(last)
	return nil
}

func (s *Store) indexOf(key []byte) (uint64, error) {
	if len(key) != len(s.logLo)+8 || !bytes.HasPrefix(key, s.logLo) {
		return 0, errors.Wrapf(db.ErrCorruption, "raftstore: malformed log key %x", key)
	}
	return binary.BigEndian.Uint64(key[len(s.logLo):]), nil
}

// FirstIndex returns the first index in the log, or 0 if it is empty.
func (s *Store) FirstIndex() (uint64, error) { return s.first.Load(), nil }

// LastIndex returns the last index in the log, or 0 if it is empty.
func (s *Store) LastIndex() (uint64, error) { return s.last.Load(), nil }

// IsMonotonic reports that the store never holds a gap in the log: raft
// then removes every old entry after restoring a snapshot (one range
// deletion here) instead of relying on a gap to mark the discontinuity.
func (s *Store) IsMonotonic() bool { return true }

// GetLog reads the entry at index into log, or returns raft.ErrLogNotFound.
func (s *Store) GetLog(index uint64, log *raft.Log) error {
	var kb [64]byte
	v, err := s.d.Get(s.logKey(kb[:0], index), nil)
	if err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return raft.ErrLogNotFound
		}
		return errors.Wrapf(err, "raftstore: reading log entry %d", index)
	}
	if err := decodeLog(v, log); err != nil {
		return errors.Wrapf(err, "raftstore: log entry %d", index)
	}
	log.Index = index
	return nil
}

// StoreLog stores one entry.
func (s *Store) StoreLog(log *raft.Log) error {
	return s.StoreLogs([]*raft.Log{log})
}

// StoreLogs stores the entries in one atomic, synced write.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// Size the buffer once: the batch may keep referring to the slices it
	// was given until Write returns, so the buffer must not move.
	n := 0
	for _, l := range logs {
		n += len(s.logLo) + 8 + encodedLogSize(l)
	}
	if cap(s.buf) < n {
		s.buf = make([]byte, 0, n)
	}
	buf := s.buf[:0]
	b := s.batch
	b.Reset()
	lo, hi := logs[0].Index, logs[0].Index
	for _, l := range logs {
		k := len(buf)
		buf = s.logKey(buf, l.Index)
		v := len(buf)
		buf = appendLog(buf, l)
		b.Put(buf[k:v], buf[v:])
		lo, hi = min(lo, l.Index), max(hi, l.Index)
	}
	err := s.d.Write(b, s.wo)
	b.Reset()
	s.buf = buf[:0]
	if err != nil {
		return errors.Wrapf(err, "raftstore: storing log entries %d-%d", lo, hi)
	}
	if f := s.first.Load(); f == 0 || lo < f {
		s.first.Store(lo)
	}
	if hi > s.last.Load() {
		s.last.Store(hi)
	}
	return nil
}

// DeleteRange deletes the entries from min to max, inclusive, with one
// range deletion.
func (s *Store) DeleteRange(min, max uint64) error {
	if min > max {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	start := s.logKey(nil, min)
	end := s.logHi
	if max < ^uint64(0) {
		end = s.logKey(nil, max+1)
	}
	if err := s.d.DeleteRange(start, end, s.wo); err != nil {
		return errors.Wrapf(err, "raftstore: deleting log entries %d-%d", min, max)
	}
	first, last := s.first.Load(), s.last.Load()
	switch {
	case first == 0 || max < first || min > last:
		// Nothing cached was touched.
		return nil
	case min <= first && max >= last:
		s.first.Store(0)
		s.last.Store(0)
		return nil
	}
	// An end of the log was cut off: find the new ends with two seeks.
	return s.loadBounds()
}

// Set stores a key-value pair outside the log, synced.
func (s *Store) Set(key, val []byte) error {
	k := append(append(make([]byte, 0, len(s.stable)+len(key)), s.stable...), key...)
	if err := s.d.Put(k, val, s.wo); err != nil {
		return errors.Wrapf(err, "raftstore: setting %q", key)
	}
	return nil
}

// Get returns the value Set under key, or ErrKeyNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	k := append(append(make([]byte, 0, len(s.stable)+len(key)), s.stable...), key...)
	v, err := s.d.Get(k, nil)
	if err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return nil, ErrKeyNotFound
		}
		return nil, errors.Wrapf(err, "raftstore: getting %q", key)
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// SetUint64 stores val under key as 8 big-endian bytes.
func (s *Store) SetUint64(key []byte, val uint64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], val)
	return s.Set(key, b[:])
}

// GetUint64 returns the value SetUint64 stored under key, or 0 and
// ErrKeyNotFound.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, errors.Wrapf(db.ErrCorruption, "raftstore: value of %q has %d bytes, want 8", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
