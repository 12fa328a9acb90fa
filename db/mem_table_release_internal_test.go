package db

import (
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"
)

// Close releases every memtable arena (they are mappings on Linux, which
// the garbage collector does not free), except those an iterator left open
// still references: that iterator stops (not Valid, ErrClosed) but its
// memtables are freed only when it is closed, so that a Key or Value slice
// it returned before Close stays readable. Under -tags invariants a freed
// arena is inaccessible, so a read of one released too early crashes this
// test.
func TestCloseReleasesMemTablesAfterOpenIterators(t *testing.T) {
	d, err := Open(t.TempDir(), arenaTestOptions())
	require.NoError(t, err)
	putRange(t, d, "k", 0, 300)
	it := d.NewIterator(nil)
	var mems []*memTable
	mems = append(mems, it.st.rs.mems...)
	it.SeekToFirst()
	require.True(t, it.Valid())
	key, value := it.Key(), it.Value()
	require.NoError(t, d.Close())
	require.Zero(t, d.memPool.PooledBytes())
	require.Equal(t, "k000000", string(key), "a key returned before Close stays readable")
	require.Equal(t, arenaValue("k000000"), value)
	it.Next()
	require.False(t, it.Valid())
	require.True(t, errors.Is(it.Err(), ErrClosed), "%v", it.Err())
	for _, m := range mems {
		require.Positive(t, m.refs.Load(), "a memtable the iterator reads was released")
	}
	_ = it.Close()
	for _, m := range mems {
		require.Zero(t, m.refs.Load(), "the iterator's memtables outlived it")
	}
	// A read that raced with Close and loaded the closed view refuses.
	rs := d.loadReadState()
	require.True(t, rs.closed)
	_, err = d.readSeq(rs, nil)
	require.True(t, errors.Is(err, ErrClosed), "%v", err)
	rs.unref()
}

// A memtable replaced while empty (by one large enough for a big write) and
// the read view's memtables at Close drop their last reference, so no arena
// is left to leak.
func TestMemTablesReleasedOnEveryPath(t *testing.T) {
	dir := t.TempDir()
	opts := arenaTestOptions()
	d, err := Open(dir, opts)
	require.NoError(t, err)
	first := d.def.mu.mem
	big := make([]byte, 2*initialMemTableSize) // does not fit the empty memtable
	require.NoError(t, d.Put([]byte("big"), big, nil))
	require.Zero(t, first.refs.Load(), "the empty memtable replaced by a larger one")
	putRange(t, d, "k", 0, 100)
	d.mu.Lock()
	mems := append([]*memTable{d.def.mu.mem}, d.def.mu.imm...)
	d.mu.Unlock()
	require.NoError(t, d.Close())
	for _, m := range mems {
		require.Zero(t, m.refs.Load(), "a memtable still referenced after Close")
	}

	d, err = Open(dir, opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	v, err := d.Get([]byte("big"), nil)
	require.NoError(t, err)
	require.Len(t, v, len(big))
}
