package db

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"
)

// Close releases every memtable arena (they are mappings on Linux, which
// the garbage collector does not free), except those an iterator left open
// still reads: that iterator keeps working on its memtables after Close, and
// frees them when it is closed. Under -tags invariants a freed arena is
// inaccessible, so a read of one released too early crashes this test.
func TestCloseReleasesMemTablesAfterOpenIterators(t *testing.T) {
	d, err := Open(t.TempDir(), arenaTestOptions())
	require.NoError(t, err)
	putRange(t, d, "k", 0, 300)
	it := d.NewIterator(nil)
	var mems []*memTable
	mems = append(mems, it.st.rs.mems...)
	require.NoError(t, d.Close())
	require.Zero(t, d.memPool.PooledBytes())
	n := 0
	for it.SeekToFirst(); it.Valid(); it.Next() {
		k := fmt.Sprintf("k%06d", n)
		require.Equal(t, k, string(it.Key()))
		require.Equal(t, arenaValue(k), it.Value())
		n++
	}
	require.Equal(t, 300, n)
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
	first := d.mu.mem
	big := make([]byte, 2*initialMemTableSize) // does not fit the empty memtable
	require.NoError(t, d.Put([]byte("big"), big, nil))
	require.Zero(t, first.refs.Load(), "the empty memtable replaced by a larger one")
	putRange(t, d, "k", 0, 100)
	d.mu.Lock()
	mems := append([]*memTable{d.mu.mem}, d.mu.imm...)
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
