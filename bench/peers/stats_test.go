package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

var pebbleStatsLine = regexp.MustCompile(`(?m)^pebble\.stats: write_amp=(\d+\.\d{3}) user_bytes=(\d+) wal_bytes=(\d+) flush_bytes=(\d+) compact_bytes=(\d+)$`)

// Pebble's stats end with the write-amp line scripts/scale.sh greps, in the
// fields of dbbench's strata.stats line: batch bytes in, table bytes out.
func TestPebbleStatsWriteAmpLine(t *testing.T) {
	e, err := openPebble(engineConfig{dir: t.TempDir(), writeBufferSize: 256 << 10, cacheSize: 1 << 20,
		compression: "none", bloomBits: -1})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	val := make([]byte, 100)
	const n = 20000
	for i := range n {
		key := []byte(fmt.Sprintf("%016d", (i*7919)%n))
		require.NoError(t, e.Write([][]byte{key}, [][]byte{val}))
	}
	require.NoError(t, e.WaitForCompactions())
	out := e.(statsReporter).Stats()
	m := pebbleStatsLine.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	var f [5]float64
	for i := range f {
		f[i], err = strconv.ParseFloat(m[i+1], 64)
		require.NoError(t, err)
	}
	// One Put batch: 12-byte header, tag, two one-byte varints, key, value.
	require.Equal(t, float64(n*131), f[1], out)
	require.Greater(t, f[2], f[1], out) // WAL framing
	require.Positive(t, f[3], out)
	require.InDelta(t, (f[3]+f[4])/f[1], f[0], 0.001, out)
}

// -enable_blob_files turns Pebble's value separation on: values at or above
// -min_blob_size go to blob files, smaller ones stay in the tables.
func TestPebbleValueSeparation(t *testing.T) {
	for _, minSize := range []int{0, 512} {
		dir := t.TempDir()
		e, err := openPebble(engineConfig{dir: dir, writeBufferSize: 256 << 10, cacheSize: 1 << 20,
			compression: "none", bloomBits: -1, blobMinSize: minSize})
		require.NoError(t, err)
		val := make([]byte, 1000)
		for i := range 2000 {
			require.NoError(t, e.Write([][]byte{[]byte(fmt.Sprintf("%016d", i))}, [][]byte{val}))
		}
		require.NoError(t, e.WaitForCompactions())
		require.NoError(t, e.Close())
		blobs, err := filepath.Glob(filepath.Join(dir, "*.blob"))
		require.NoError(t, err)
		if minSize == 0 {
			require.Empty(t, blobs)
		} else {
			require.NotEmpty(t, blobs)
		}
	}
}
