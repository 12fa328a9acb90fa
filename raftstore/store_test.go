package raftstore

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/hashicorp/raft"
	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

func openStore(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir, nil, nil)
	require.NoError(t, err)
	return s
}

func testLog(idx uint64, data string) *raft.Log {
	return &raft.Log{
		Index:      idx,
		Term:       idx/3 + 1,
		Type:       raft.LogCommand,
		Data:       []byte(data),
		Extensions: []byte("ext-" + data),
		AppendedAt: time.Unix(1700000000+int64(idx), int64(idx)*1000),
	}
}

func requireLogEqual(t *testing.T, want, got *raft.Log) {
	t.Helper()
	require.Equal(t, want.Index, got.Index)
	require.Equal(t, want.Term, got.Term)
	require.Equal(t, want.Type, got.Type)
	require.Equal(t, want.Data, got.Data)
	require.Equal(t, want.Extensions, got.Extensions)
	require.True(t, want.AppendedAt.Equal(got.AppendedAt), "AppendedAt %v != %v", want.AppendedAt, got.AppendedAt)
}

func TestStoreFirstLastIndex(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	for _, f := range []func() (uint64, error){s.FirstIndex, s.LastIndex} {
		idx, err := f()
		require.NoError(t, err)
		require.Zero(t, idx, "empty log")
	}
	require.NoError(t, s.StoreLogs([]*raft.Log{testLog(1, "a"), testLog(2, "b"), testLog(3, "c")}))
	first, err := s.FirstIndex()
	require.NoError(t, err)
	last, err := s.LastIndex()
	require.NoError(t, err)
	require.Equal(t, uint64(1), first)
	require.Equal(t, uint64(3), last)

	// The bounds come back from disk after a reopen.
	require.NoError(t, s.Close())
	s = openStore(t, dir)
	defer s.Close()
	first, _ = s.FirstIndex()
	last, _ = s.LastIndex()
	require.Equal(t, uint64(1), first)
	require.Equal(t, uint64(3), last)
}

func TestStoreGetLog(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	var got raft.Log
	require.ErrorIs(t, s.GetLog(1, &got), raft.ErrLogNotFound)
	logs := []*raft.Log{testLog(1, "a"), testLog(2, "b"), testLog(3, "c")}
	require.NoError(t, s.StoreLogs(logs))
	for _, want := range logs {
		require.NoError(t, s.GetLog(want.Index, &got))
		requireLogEqual(t, want, &got)
	}
	require.ErrorIs(t, s.GetLog(4, &got), raft.ErrLogNotFound)
	require.ErrorIs(t, s.GetLog(0, &got), raft.ErrLogNotFound)
}

func TestStoreSetLog(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	want := testLog(1, "log1")
	require.NoError(t, s.StoreLog(want))
	var got raft.Log
	require.NoError(t, s.GetLog(1, &got))
	requireLogEqual(t, want, &got)

	// Every field round-trips, including the zero values.
	zero := &raft.Log{Index: 2}
	require.NoError(t, s.StoreLog(zero))
	require.NoError(t, s.GetLog(2, &got))
	require.Equal(t, raft.Log{Index: 2}, got)

	// Overwriting an entry (raft does it after truncating a conflicting
	// suffix) replaces it.
	repl := testLog(2, "replaced")
	repl.Type = raft.LogConfiguration
	require.NoError(t, s.StoreLog(repl))
	require.NoError(t, s.GetLog(2, &got))
	requireLogEqual(t, repl, &got)
}

func TestStoreSetLogs(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	logs := []*raft.Log{testLog(1, "log1"), testLog(2, "log2")}
	require.NoError(t, s.StoreLogs(logs))
	require.NoError(t, s.Close())
	s = openStore(t, dir)
	defer s.Close()
	var got raft.Log
	for _, want := range logs {
		require.NoError(t, s.GetLog(want.Index, &got))
		requireLogEqual(t, want, &got)
	}
	require.NoError(t, s.StoreLogs(nil))
}

func TestStoreDeleteRange(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, testLog(i, fmt.Sprint("log", i)))
	}
	require.NoError(t, s.StoreLogs(logs))
	bounds := func() (uint64, uint64) {
		f, err := s.FirstIndex()
		require.NoError(t, err)
		l, err := s.LastIndex()
		require.NoError(t, err)
		return f, l
	}

	// Compaction of the head, as raft does after a snapshot.
	require.NoError(t, s.DeleteRange(1, 3))
	f, l := bounds()
	require.Equal(t, [2]uint64{4, 10}, [2]uint64{f, l})
	var got raft.Log
	for i := uint64(1); i <= 3; i++ {
		require.ErrorIs(t, s.GetLog(i, &got), raft.ErrLogNotFound)
	}
	require.NoError(t, s.GetLog(4, &got))

	// Truncation of the tail, as raft does on a conflicting suffix.
	require.NoError(t, s.DeleteRange(8, 10))
	f, l = bounds()
	require.Equal(t, [2]uint64{4, 7}, [2]uint64{f, l})

	// A range that touches neither end leaves the bounds.
	require.NoError(t, s.DeleteRange(5, 5))
	f, l = bounds()
	require.Equal(t, [2]uint64{4, 7}, [2]uint64{f, l})
	require.ErrorIs(t, s.GetLog(5, &got), raft.ErrLogNotFound)

	// The whole log, with the maximum index as the upper bound.
	require.NoError(t, s.DeleteRange(0, ^uint64(0)))
	f, l = bounds()
	require.Equal(t, [2]uint64{0, 0}, [2]uint64{f, l})

	// The log grows again after being emptied.
	require.NoError(t, s.StoreLogs([]*raft.Log{testLog(20, "x"), testLog(21, "y")}))
	f, l = bounds()
	require.Equal(t, [2]uint64{20, 21}, [2]uint64{f, l})
}

func TestStoreSetGet(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	_, err := s.Get([]byte("bad"))
	require.Error(t, err)
	// raft recognises a missing key by this exact text.
	require.Equal(t, "not found", err.Error())
	require.ErrorIs(t, err, ErrKeyNotFound)

	k, v := []byte("hello"), []byte("world")
	require.NoError(t, s.Set(k, v))
	got, err := s.Get(k)
	require.NoError(t, err)
	require.Equal(t, v, got)

	require.NoError(t, s.Set([]byte("empty"), nil))
	got, err = s.Get([]byte("empty"))
	require.NoError(t, err)
	require.NotNil(t, got, "an empty value is not a missing key")
	require.Empty(t, got)

	require.NoError(t, s.Close())
	s = openStore(t, dir)
	defer s.Close()
	got, err = s.Get(k)
	require.NoError(t, err)
	require.Equal(t, v, got)
}

func TestStoreSetGetUint64(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	v, err := s.GetUint64([]byte("bad"))
	require.Zero(t, v)
	require.Error(t, err)
	require.Equal(t, "not found", err.Error())

	k := []byte("abc")
	require.NoError(t, s.SetUint64(k, 123))
	v, err = s.GetUint64(k)
	require.NoError(t, err)
	require.Equal(t, uint64(123), v)
	require.NoError(t, s.SetUint64(k, ^uint64(0)))
	v, err = s.GetUint64(k)
	require.NoError(t, err)
	require.Equal(t, ^uint64(0), v)

	// A stable key never shows up as a log entry and vice versa.
	first, _ := s.FirstIndex()
	require.Zero(t, first)
}

func TestStoreNamespaces(t *testing.T) {
	d, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	defer d.Close()
	a, err := New(d, &Options{Namespace: []byte("g1/")})
	require.NoError(t, err)
	b, err := New(d, &Options{Namespace: []byte("g2/")})
	require.NoError(t, err)
	require.NoError(t, a.StoreLogs([]*raft.Log{testLog(1, "a1"), testLog(2, "a2")}))
	require.NoError(t, b.StoreLogs([]*raft.Log{testLog(7, "b7")}))
	require.NoError(t, a.SetUint64([]byte("term"), 5))
	_, err = b.GetUint64([]byte("term"))
	require.ErrorIs(t, err, ErrKeyNotFound)
	require.NoError(t, a.DeleteRange(0, ^uint64(0)))
	var got raft.Log
	require.NoError(t, b.GetLog(7, &got))
	require.Equal(t, []byte("b7"), got.Data)

	// Reopening a namespace finds only its own bounds.
	b2, err := New(d, &Options{Namespace: []byte("g2/")})
	require.NoError(t, err)
	f, _ := b2.FirstIndex()
	l, _ := b2.LastIndex()
	require.Equal(t, [2]uint64{7, 7}, [2]uint64{f, l})
	require.NoError(t, b2.Close())
	// Close of a store made by New leaves the database open.
	require.NoError(t, d.Put([]byte("x"), []byte("y"), nil))
}

func TestStoreCorruptEntry(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	good := appendLog(nil, testLog(1, "payload"))
	for i := 0; i < len(good); i++ {
		// Every truncation is refused with ErrCorruption, never a panic.
		require.NoError(t, s.d.Put(s.logKey(nil, 1), good[:i], nil))
		var got raft.Log
		err := s.GetLog(1, &got)
		require.ErrorIs(t, err, db.ErrCorruption, "truncated to %d bytes", i)
		require.Contains(t, err.Error(), "log entry 1")
	}
	bad := bytes.Clone(good)
	bad[0] = 9
	require.NoError(t, s.d.Put(s.logKey(nil, 1), bad, nil))
	var got raft.Log
	require.True(t, errors.Is(s.GetLog(1, &got), db.ErrCorruption))
}

func TestLogEncodingRoundTrip(t *testing.T) {
	cases := []*raft.Log{
		{},
		{Term: ^uint64(0), Type: raft.LogBarrier, AppendedAt: time.Unix(-5, 999999999)},
		{Term: 1, Data: bytes.Repeat([]byte{0xff}, 300), Extensions: []byte{0}},
		testLog(42, "x"),
	}
	for _, l := range cases {
		enc := appendLog(nil, l)
		require.LessOrEqual(t, len(enc), encodedLogSize(l))
		var got raft.Log
		require.NoError(t, decodeLog(enc, &got))
		got.Index = l.Index
		requireLogEqual(t, l, &got)
	}
}
