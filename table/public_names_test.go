package table_test

// This file imports no internal package, as code outside the module
// could not: the exported table API must be usable through table's own
// names (see table/types.go and internal/lint).

import (
	"bytes"
	"testing"

	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

type memFile struct{ *bytes.Reader }

func (memFile) Close() error { return nil }

// TestPublicNamesSuffice writes a table with the low-level Writer, reads it
// back through a shared block cache, and iterates it, naming only table's
// exported types.
func TestPublicNamesSuffice(t *testing.T) {
	var buf bytes.Buffer
	w := table.NewWriter(&buf, table.WriterOptions{Checksum: table.ChecksumCRC32C})
	require.NoError(t, w.Add(table.MakeInternalKey([]byte("a"), 3, table.KindSet), []byte("va")))
	require.NoError(t, w.Add(table.MakeInternalKey([]byte("b"), 2, table.KindDelete), nil))
	require.NoError(t, w.AddTombstone(table.Tombstone{Start: []byte("c"), End: []byte("e"), Seq: 4}))
	meta, err := w.Finish()
	require.NoError(t, err)
	var smallest table.InternalKey = meta.Smallest
	require.Equal(t, "a", string(smallest.UserKey))
	require.Equal(t, table.SeqNum(4), meta.LargestSeq)

	c := table.NewCache(1 << 20)
	r, err := table.Open(memFile{bytes.NewReader(buf.Bytes())}, int64(buf.Len()),
		table.ReaderOptions{Cache: c, FileName: "000001.sst", FileNum: 1})
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, table.ChecksumCRC32C, r.Properties().ChecksumType)

	v, kind, seq, found, err := r.Get([]byte("a"), table.MaxSeqNum)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "va", string(v))
	require.Equal(t, table.KindSet, kind)
	require.Equal(t, table.SeqNum(3), seq)
	var stats table.CacheStats = c.Stats()
	_ = stats

	it := r.NewIter()
	var keys []table.InternalKey
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, it.Key().Clone())
	}
	require.NoError(t, it.Close())
	require.Len(t, keys, 2)
	require.Equal(t, table.KindDelete, keys[1].Kind())
	require.Equal(t, []table.Tombstone{{Start: []byte("c"), End: []byte("e"), Seq: 4}}, r.Tombstones())
}
