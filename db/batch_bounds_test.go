package db_test

import (
	"fmt"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// TestBatchSizeLimit: a batch must fit in one memtable (about 4 GiB). With
// the limit lowered to what a batch of one 1000-byte value needs, a value
// of 1000 bytes is accepted and one of 1001 refused: Batch.Put drops it,
// DB.Write returns ErrInvalidArgument naming the sizes and writes nothing;
// DB.Put, Delete and DeleteRange refuse before copying; Reset forgets the
// refusal.
func TestBatchSizeLimit(t *testing.T) {
	key := []byte("key")
	probe := db.NewBatch()
	probe.Put(key, make([]byte, 1000))
	limit := db.BatchArenaNeed(probe)
	defer db.SetMaxBatchArena(limit)()

	d, err := db.Open("/db", &db.Options{FS: vfs.NewMem(), CreateIfMissing: true, WriteBufferSize: 64 << 10})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()

	// At the limit: accepted, through every entry point.
	b := db.NewBatch()
	b.Put(key, make([]byte, 1000))
	require.Equal(t, limit, db.BatchArenaNeed(b))
	require.NoError(t, noPanic(func() error { return d.Write(b, nil) }))
	require.NoError(t, d.Put(key, make([]byte, 1000), nil))
	v, err := d.Get(key, nil)
	require.NoError(t, err)
	require.Len(t, v, 1000)

	sizeErr := func(err error) {
		t.Helper()
		requireInvalid(t, err, fmt.Sprint(limit))
		require.Contains(t, err.Error(), "batch too large")
	}
	// One byte over: refused.
	err = noPanic(func() error { return d.Put([]byte("new"), make([]byte, 1001), nil) })
	sizeErr(err)
	sizeErr(d.Delete(make([]byte, 1100), nil))
	sizeErr(d.DeleteRange(make([]byte, 600), make([]byte, 600), nil))

	// A batch that grows past the limit: the refused record and those after
	// it are not added, and Write writes none of the batch.
	b.Reset()
	b.Put([]byte("first"), []byte("1"))
	b.Put([]byte("second"), make([]byte, 1000))
	require.Equal(t, 1, b.Count())
	b.Put([]byte("third"), []byte("3")) // would fit, but the batch is refused
	b.Delete([]byte("fourth"))
	b.DeleteRange([]byte("a"), []byte("b"))
	require.Equal(t, 1, b.Count())
	sizeErr(noPanic(func() error { return d.Write(b, nil) }))
	sizeErr(d.Write(b, nil)) // still refused
	for _, k := range []string{"first", "third"} {
		_, err := d.Get([]byte(k), nil)
		require.ErrorIs(t, err, db.ErrNotFound, k)
	}
	// Reset forgets the refusal.
	b.Reset()
	b.Put([]byte("first"), []byte("1"))
	require.NoError(t, d.Write(b, nil))
	_, err = d.Get([]byte("first"), nil)
	require.NoError(t, err)

	// Many small records pass the limit through their count too.
	b.Reset()
	n := 0
	for ; n < 1000 && b.Count() == n; n++ {
		b.Delete([]byte{byte(n)})
	}
	require.Less(t, b.Count(), 1000)
	sizeErr(d.Write(b, nil))
}

// TestBatchSizeLimitDefault checks the real limit: just under 4 GiB of
// memtable space, whatever the memtable size option.
func TestBatchSizeLimitDefault(t *testing.T) {
	require.Less(t, db.MaxBatchArena(), int64(1)<<32)
	require.Greater(t, db.MaxBatchArena(), int64(1)<<32-1<<20)
}

// TestBatchSizeLimitReplay: a WAL batch larger than a memtable can hold
// (here: written before the limit was lowered; in life a RocksDB WAL with a
// batch over 4 GiB) fails Open with ErrInvalidArgument naming the WAL and
// offset, without a panic.
func TestBatchSizeLimitReplay(t *testing.T) {
	mem := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: mem, CreateIfMissing: true, WriteBufferSize: 64 << 10})
	require.NoError(t, err)
	b := db.NewBatch()
	b.Put([]byte("small"), []byte("1"))
	require.NoError(t, d.Write(b, &db.WriteOptions{Sync: true}))
	b.Reset()
	b.Put([]byte("a"), make([]byte, 2000))
	b.Put([]byte("b"), make([]byte, 2000))
	require.NoError(t, d.Write(b, &db.WriteOptions{Sync: true}))
	need := db.BatchArenaNeed(b)
	img := mem.CrashClone() // the batches are only in the WAL
	require.NoError(t, d.Close())

	restore := db.SetMaxBatchArena(need - 1)
	err = noPanic(func() error {
		d, err := db.Open("/db", &db.Options{FS: img, WriteBufferSize: 64 << 10})
		if err == nil {
			err = d.Close()
		}
		return err
	})
	requireInvalid(t, err, ".log offset ")
	require.Contains(t, err.Error(), fmt.Sprint(need-1))
	restore()
	// Nothing was lost: with the limit back, everything replays.
	d, err = db.Open("/db", &db.Options{FS: img, WriteBufferSize: 64 << 10})
	require.NoError(t, err)
	for _, k := range []string{"small", "a", "b"} {
		_, err := d.Get([]byte(k), nil)
		require.NoError(t, err, k)
	}
	require.NoError(t, d.Close())
}

// BenchmarkBatchPut measures Batch.Put, size check included: 16-byte keys,
// 100-byte values, 1000 records per batch.
func BenchmarkBatchPut(b *testing.B) {
	key, value := make([]byte, 16), make([]byte, 100)
	bt := db.NewBatch()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%1000 == 0 {
			bt.Reset()
		}
		key[0] = byte(i)
		bt.Put(key, value)
	}
}
