//go:build linux && !386 && !arm && !mips && !mipsle

// 64-bit platforms only: the test maps 5 GiB.

package db_test

import (
	"math"
	"syscall"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// hugeSlice maps n bytes of read-only zero pages that take no memory until
// read (and reads share the zero page): a real key or value of more than
// 4 GiB for a test that must never copy it.
func hugeSlice(t *testing.T, n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		t.Skipf("cannot map %d bytes: %v", n, err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(b) })
	return b
}

// TestBatchSizeLimitReal: keys and values past the real limit (a varint32
// length, a 4 GiB memtable arena) are refused before anything copies them.
// The pages are read-only: a copy would fault, not pass.
func TestBatchSizeLimitReal(t *testing.T) {
	huge := hugeSlice(t, 5<<30)
	d, err := db.Open("/db", &db.Options{FS: vfs.NewMem(), CreateIfMissing: true, WriteBufferSize: 64 << 10})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	for _, n := range []int{int(db.MaxBatchArena()), math.MaxUint32, math.MaxUint32 + 1, len(huge)} {
		big := huge[:n]
		sizeErr := func(err error) {
			t.Helper()
			requireInvalid(t, err, "batch too large")
		}
		sizeErr(noPanic(func() error { return d.Put([]byte("k"), big, nil) }))
		sizeErr(noPanic(func() error { return d.Put(big, nil, nil) }))
		sizeErr(noPanic(func() error { return d.Delete(big, nil) }))
		sizeErr(noPanic(func() error { return d.DeleteRange(nil, big, nil) }))
		b := db.NewBatch()
		b.Put([]byte("small"), []byte("v"))
		b.Put([]byte("k"), big)
		b.Delete(big)
		b.DeleteRange(big, big)
		require.Equal(t, 1, b.Count())
		sizeErr(noPanic(func() error { return d.Write(b, nil) }))
		_, err := d.Get([]byte("small"), nil)
		require.ErrorIs(t, err, db.ErrNotFound)
	}
	require.NoError(t, d.Put([]byte("k"), []byte("v"), nil))
}
