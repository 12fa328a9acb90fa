package db_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/offheap"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

// pinnedKeys is enough keys per table for its filter (20 bits a key) and
// index to pass the 64 KiB above which a reader maps its pinned metadata.
const pinnedKeys = 30000

func pinnedKey(t, i int) []byte { return []byte(fmt.Sprintf("k%06d-%d", i, t)) }

// TestPinned_EveryPathFrees runs the paths that open and close table
// readers (flush, point reads, table-cache eviction, compaction deleting
// tables under an open iterator, ingestion, DB.Close with an iterator still
// open, reopening) and checks that the readers' mapped metadata is freed
// exactly when the last user is done: a table deleted under an open
// iterator is still read correctly (under -tags invariants a read of a
// freed mapping would fault), and after the last Close no mapped byte is
// left.
func TestPinned_EveryPathFrees(t *testing.T) {
	base := offheap.LiveBytes()
	dir := t.TempDir()
	opts := &db.Options{CreateIfMissing: true, BloomBitsPerKey: 20, MaxOpenFiles: 2,
		DisableAutoCompactions: true}
	d, err := db.Open(dir, opts)
	require.NoError(t, err)
	const tables = 3
	for tb := 0; tb < tables; tb++ {
		for i := 0; i < pinnedKeys; i++ {
			require.NoError(t, d.Put(pinnedKey(tb, i), pinnedKey(tb, i), nil))
		}
		require.NoError(t, d.Flush())
	}
	// Point reads over every table, two readers open at most: evictions.
	for tb := 0; tb < tables; tb++ {
		for i := 0; i < pinnedKeys; i += 997 {
			v, err := d.Get(pinnedKey(tb, i), nil)
			require.NoError(t, err)
			require.Equal(t, pinnedKey(tb, i), v)
		}
	}
	if offheap.Enabled {
		require.Greater(t, offheap.LiveBytes(), base, "no reader mapped its metadata")
	}
	// An iterator holds the readers of the tables the compaction deletes.
	it := d.NewIterator(nil)
	it.SeekToFirst()
	require.True(t, it.Valid())
	require.NoError(t, d.CompactRange(nil, nil))
	n := 0
	for ; it.Valid(); it.Next() {
		n++
	}
	require.NoError(t, it.Err())
	require.Equal(t, tables*pinnedKeys, n)
	// Seeks go through the old tables' indexes and filters again.
	for i := 0; i < pinnedKeys; i += 1009 {
		it.Seek(pinnedKey(1, i))
		require.True(t, it.Valid())
		require.Equal(t, pinnedKey(1, i), it.Key())
	}
	require.NoError(t, it.Close())

	// Ingestion opens the external file to inspect it, then the database's
	// table cache opens it again.
	ext := filepath.Join(t.TempDir(), "ext.sst")
	f, err := os.Create(ext)
	require.NoError(t, err)
	w := table.NewExternalWriter(f, table.ExternalWriterOptions{BloomBitsPerKey: 20})
	for i := 0; i < pinnedKeys; i++ {
		require.NoError(t, w.Put([]byte(fmt.Sprintf("x%06d", i)), []byte("x")))
	}
	_, err = w.Finish()
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, d.Ingest([]string{ext}, nil))
	v, err := d.Get([]byte("x000123"), nil)
	require.NoError(t, err)
	require.Equal(t, "x", string(v))

	// Close with an iterator open: its readers go with the iterator.
	it = d.NewIterator(nil)
	it.Seek([]byte("k010000"))
	require.True(t, it.Valid())
	require.NoError(t, d.Close())
	require.False(t, it.Valid(), "an iterator stops at its database's Close")
	it.Next()
	_ = it.Close() // may report that the database is closed
	require.Equal(t, base, offheap.LiveBytes(), "mapped metadata left after every reader closed")

	// Reopen (recovery reads the tables again) and close.
	opts.CreateIfMissing = false
	d, err = db.Open(dir, opts)
	require.NoError(t, err)
	v, err = d.Get(pinnedKey(2, 12345), nil)
	require.NoError(t, err)
	require.Equal(t, pinnedKey(2, 12345), v)
	require.NoError(t, d.Close())
	require.Equal(t, base, offheap.LiveBytes())
}
