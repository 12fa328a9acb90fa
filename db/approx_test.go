package db

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

func approxKey(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }

// approxDB fills a database with n uniform entries (100-byte values, no
// compression) spread over several tables and levels.
func approxDB(t *testing.T, n int) *DB {
	d, err := Open("/db", &Options{FS: vfs.NewMem(), CreateIfMissing: true, WriteBufferSize: 256 << 10})
	require.NoError(t, err)
	val := make([]byte, 100)
	for i := 0; i < n; i++ {
		require.NoError(t, d.Put(approxKey(i), val, nil))
	}
	require.NoError(t, d.Flush())
	return d
}

func TestApproximateSize(t *testing.T) {
	const n = 40000
	d := approxDB(t, n)
	defer d.Close()
	rs := d.loadReadState()
	var files int
	var onDisk uint64
	for level := range rs.version.Levels {
		files += len(rs.version.Levels[level])
		onDisk += rs.version.LevelSize(level)
	}
	rs.unref()
	require.Greater(t, files, 2)
	size := func(a, b []byte) uint64 {
		s, err := d.ApproximateSize(a, b, nil)
		require.NoError(t, err)
		return s
	}
	require.Equal(t, onDisk, size(nil, nil))
	require.Equal(t, onDisk, size(approxKey(0), approxKey(n)))
	require.Zero(t, size(approxKey(500), approxKey(500)), "empty range")
	require.Zero(t, size([]byte("a"), []byte("b")), "no keys there")
	require.Zero(t, size([]byte("z"), nil), "no keys there")
	_, err := d.ApproximateSize(approxKey(2), approxKey(1), nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = d.ApproximateSize(nil, nil, &ApproximateSizeOptions{ExcludeFiles: true})
	require.ErrorIs(t, err, ErrInvalidArgument)

	const block = 4096
	perKey := float64(onDisk) / n
	prev := uint64(0)
	for _, i := range []int{1, 100, 1000, 5000, 12345, 20000, 33333, n} {
		s := size(approxKey(0), approxKey(i))
		require.GreaterOrEqual(t, s, prev, "monotone in the end key")
		prev = s
		// Uniform data: close to the bytes of the keys in the range.
		want := perKey * float64(i)
		require.InDelta(t, want, float64(s), 0.1*want+float64(block*files), "[0, %d)", i)
	}
	// Additive: size(a,c) = size(a,b) + size(b,c), within a block per table.
	for _, c := range [][3]int{{0, 1, 2}, {10, 20000, 39999}, {123, 4567, 30000}, {0, 20000, n}} {
		a, b, e := approxKey(c[0]), approxKey(c[1]), approxKey(c[2])
		require.InDelta(t, float64(size(a, e)), float64(size(a, b)+size(b, e)), float64(block*files), "%v", c)
	}
}

func TestApproximateSizeMemtables(t *testing.T) {
	d, err := Open("/db", &Options{FS: vfs.NewMem(), CreateIfMissing: true})
	require.NoError(t, err)
	defer d.Close()
	for i := 0; i < 1000; i++ {
		require.NoError(t, d.Put(approxKey(i), make([]byte, 50), nil))
	}
	files, err := d.ApproximateSize(nil, nil, nil)
	require.NoError(t, err)
	require.Zero(t, files, "nothing flushed yet")
	mem, err := d.ApproximateSize(approxKey(100), approxKey(200), &ApproximateSizeOptions{IncludeMemtables: true, ExcludeFiles: true})
	require.NoError(t, err)
	require.Equal(t, uint64(100*(9+8+50)), mem)
	require.NoError(t, d.Flush())
	both, err := d.ApproximateSize(approxKey(100), approxKey(200), &ApproximateSizeOptions{IncludeMemtables: true})
	require.NoError(t, err)
	require.InDelta(t, float64(mem), float64(both), 0.2*float64(mem)+4096)
}

func estimateNumKeys(t *testing.T, d *DB) int {
	t.Helper()
	s, ok := d.GetProperty(PropEstimateNumKeys)
	require.True(t, ok)
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// TestEstimateNumKeys: RocksDB's formula over memtables and tables. Before
// compaction it errs upwards by at most the overwrites and deletions not yet
// compacted away; after a full compaction it is exact.
func TestEstimateNumKeys(t *testing.T) {
	d, err := Open("/db", &Options{FS: vfs.NewMem(), CreateIfMissing: true, WriteBufferSize: 128 << 10})
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, 0, estimateNumKeys(t, d))
	const fill, over, del = 10000, 3000, 2000
	for i := 0; i < fill; i++ {
		require.NoError(t, d.Put(approxKey(i), []byte("v"), nil))
	}
	require.Equal(t, fill, estimateNumKeys(t, d), "fills only: exact")
	for i := 0; i < over; i++ {
		require.NoError(t, d.Put(approxKey(i*3), []byte("w"), nil))
	}
	for i := 0; i < del; i++ {
		require.NoError(t, d.Delete(approxKey(i*5+1), nil))
	}
	live := fill - del
	est := estimateNumKeys(t, d)
	require.GreaterOrEqual(t, est, live-del)
	require.LessOrEqual(t, est, live+over+del)
	require.NoError(t, d.Flush())
	est = estimateNumKeys(t, d)
	require.GreaterOrEqual(t, est, live-del)
	require.LessOrEqual(t, est, live+over+del)
	require.NoError(t, d.CompactRange(nil, nil))
	require.Equal(t, live, estimateNumKeys(t, d), "after a full compaction: exact")
}
