//go:build linux

package harness

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMemTrace loads a Strata database under a trace and then holds a
// 48 MiB heap buffer with every page touched: the breakdown at the peak
// must see it in the resident set and in the Go heap's objects, and carry
// Strata's own report.
func TestMemTrace(t *testing.T) {
	pr := Params{Records: 500, Ops: 100, Threads: 1}
	d, _, err := Open("strata", filepath.Join(t.TempDir(), "strata"),
		Budget{CacheBytes: 8 << 20, MemtableBytes: 8 << 20}, pr.Properties(""))
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	mt := StartMemTrace(d, 5*time.Millisecond)
	_, err = RunPhase(context.Background(), pr, "", d)
	require.NoError(t, err)
	before := statusKB()["VmRSS"]
	buf := make([]byte, 48<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	time.Sleep(50 * time.Millisecond)
	snap := mt.Stop()
	t.Log(snap)
	mb := func(re string) float64 {
		m := regexp.MustCompile(re).FindStringSubmatch(snap)
		require.NotNil(t, m, "%s in %s", re, snap)
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		return v
	}
	require.GreaterOrEqual(t, mb(`VmRSS=([0-9.]+)`), float64(before)/1024+40)
	require.GreaterOrEqual(t, mb(`heap/objects=([0-9.]+)`), 48.0)
	require.Contains(t, snap, "engine: memtables=")
	require.Contains(t, snap, "MEM   map ")
	require.Equal(t, byte(1), buf[len(buf)-4096])
}
