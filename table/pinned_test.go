package table

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stratadb/strata/internal/invariants"
	"github.com/stratadb/strata/internal/offheap"
	"github.com/stretchr/testify/require"
)

// TestMain maps the pinned metadata of every table the package's tests
// open, however small, so that every read path and every corruption check
// runs over mapped blocks, and checks that the tests freed every mapping.
func TestMain(m *testing.M) {
	minMappedPinned = 1
	code := m.Run()
	if code == 0 && !settleLive(0) {
		fmt.Fprintf(os.Stderr, "table tests leaked %d mapped bytes of pinned metadata\n", offheap.LiveBytes())
		code = 1
	}
	os.Exit(code)
}

// settleLive reports whether offheap.LiveBytes comes to want once the
// cleanups of unreachable readers ran (a bounded number of collections).
func settleLive(want int64) bool {
	for range 20 {
		if offheap.LiveBytes() == want {
			return true
		}
		runtime.GC()
		runtime.Gosched()
	}
	return offheap.LiveBytes() == want
}

// pinnedModel is a table of n keys with a whole-key filter: with 10 bits per
// key its filter alone is about 1.25n bytes.
func pinnedModel(n int) []kv {
	model := make([]kv, n)
	for i := range model {
		model[i] = kv{base.MakeInternalKey([]byte(fmt.Sprintf("key%08d", i)), 1, base.KindSet), []byte("v")}
	}
	return model
}

var pinnedOpts = WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, WholeKeyFiltering: true}

// The index, filter and prefix arrays of a table move into one mapping
// when Open succeeds, reads through it match the heap layout's, and Close
// frees it exactly once.
func TestPinned_MappedAndFreed(t *testing.T) {
	model := pinnedModel(5000)
	f, _ := buildTable(t, model, nil, pinnedOpts)
	before := offheap.LiveBytes()
	r := openMem(t, f, cache.New(1<<20))
	n, off := r.PinnedBytes()
	require.Equal(t, offheap.Enabled, off)
	require.Greater(t, n, 5000) // the filter alone
	if off {
		require.Equal(t, before+int64(n), offheap.LiveBytes())
		require.NotNil(t, r.indexPrefixes, "the test should cover the prefix arrays")
	}
	for _, e := range model[:500] {
		require.True(t, r.KeyMayMatch(e.key.UserKey))
		v, _, _, found, err := r.Get(e.key.UserKey, base.MaxSeqNum)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, "v", string(v))
	}
	it := r.NewIter()
	require.True(t, it.SeekGE([]byte("key00004321")))
	require.Equal(t, "key00004321", string(it.Key().UserKey))
	require.NoError(t, it.Close())
	require.NoError(t, r.Close())
	require.Equal(t, before, offheap.LiveBytes())
	require.NoError(t, r.Close(), "a second Close")
	require.Equal(t, before, offheap.LiveBytes(), "a second Close frees nothing")
}

// Below minMappedPinned the metadata stays on the heap.
func TestPinned_SmallTableOnHeap(t *testing.T) {
	defer func(v int) { minMappedPinned = v }(minMappedPinned)
	f, _ := buildTable(t, pinnedModel(100), nil, pinnedOpts)
	r := openMem(t, f, nil)
	n, _ := r.PinnedBytes()
	minMappedPinned = n + 1
	r2 := openMem(t, f, nil)
	_, off := r2.PinnedBytes()
	require.False(t, off)
	require.NoError(t, r2.Close())
	require.NoError(t, r.Close())
}

// A table that fails to open maps nothing.
func TestPinned_OpenErrorMapsNothing(t *testing.T) {
	f, _ := buildTable(t, pinnedModel(2000), nil, pinnedOpts)
	before := offheap.LiveBytes()
	for _, off := range []int{len(f.b) - 60, len(f.b) / 2, 10} {
		bad := &memFile{b: append([]byte(nil), f.b...)}
		bad.b[off] ^= 0x55
		if r, err := Open(bad, int64(len(bad.b)), ReaderOptions{FileName: "bad.sst"}); err == nil {
			require.NoError(t, r.Close()) // the flip hit a data block
		}
		require.Equal(t, before, offheap.LiveBytes(), "flip at %d", off)
	}
}

// A reader dropped without Close returns its mapping once it is
// unreachable.
func TestPinned_UnclosedReaderFreed(t *testing.T) {
	if !offheap.Enabled {
		t.Skip("no mappings in this build")
	}
	f, _ := buildTable(t, pinnedModel(2000), nil, pinnedOpts)
	require.True(t, settleLive(0), "an earlier test leaked")
	func() {
		r := openMem(t, f, nil)
		_, off := r.PinnedBytes()
		require.True(t, off)
		require.True(t, r.KeyMayMatch([]byte("key00000001")))
	}()
	require.True(t, settleLive(0), "the unreachable reader's mapping was not freed")
}

const pinnedFaultEnv = "STRATA_PINNED_FAULT"

// Under the invariants tag a closed reader's pinned blocks are
// inaccessible: a read after Close faults instead of returning stale
// bytes. Each read runs in a child process, which must die of the fault.
func TestPinned_ClosedReadFaults(t *testing.T) {
	if !invariants.Enabled || !offheap.Enabled {
		t.Skip("closed readers' blocks are only made inaccessible under -tags invariants (and not under -race)")
	}
	for _, mode := range []string{"filter", "index", "get"} {
		t.Run(mode, func(t *testing.T) {
			if os.Getenv(pinnedFaultEnv) == mode {
				f, _ := buildTable(t, pinnedModel(5000), nil, pinnedOpts)
				r := openMem(t, f, nil)
				if _, off := r.PinnedBytes(); !off {
					os.Exit(3)
				}
				k := []byte("key00001234")
				_ = r.Close()
				switch mode {
				case "filter":
					r.KeyMayMatch(k) // faults
				case "index":
					_, _, _ = r.ApproximateOffsetOf(k) // faults
				case "get":
					_, _, _, _, _ = r.Get(k, base.MaxSeqNum) // faults
				}
				os.Exit(0)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestPinned_ClosedReadFaults$/^"+mode+"$")
			cmd.Env = append(os.Environ(), pinnedFaultEnv+"="+mode)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the read of a closed reader did not fault:\n%s", out)
			require.Contains(t, string(out), "unexpected fault address", string(out))
		})
	}
}
