package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHistogram_BucketsAsRocksDB(t *testing.T) {
	require.Len(t, histBuckets, 109)
	require.Equal(t, []uint64{1, 2, 3, 4, 6, 10, 15, 22, 34, 51, 76, 110, 170, 250}, histBuckets[:14])
	require.Equal(t, 0, bucketIndex(0))
	require.Equal(t, 0, bucketIndex(1))
	require.Equal(t, 2, bucketIndex(3))
	require.Equal(t, 5, bucketIndex(7))
	require.Equal(t, len(histBuckets)-1, bucketIndex(^uint64(0)))
}

func TestHistogram_StatsAndLayout(t *testing.T) {
	h := newHistogram()
	for _, v := range []uint64{1, 2, 3, 4, 10} {
		h.Add(v)
	}
	require.Equal(t, 4.0, h.Average())
	require.InDelta(t, 3.1623, h.StdDev(), 1e-4)
	o := newHistogram()
	o.Add(100)
	h.Merge(o)
	require.Equal(t, uint64(6), h.num)
	require.Equal(t, uint64(100), h.max)
	require.Equal(t, 100.0, h.Percentile(100))
	require.Equal(t, 1.0, h.Percentile(0))
	s := h.String()
	lines := strings.Split(s, "\n")
	require.Equal(t, "Count: 6 Average: 20.0000  StdDev: 35.89", lines[0])
	require.True(t, strings.HasPrefix(lines[1], "Min: 1  Median: 3.0000  Max: 100"), lines[1])
	require.Regexp(t, `^Percentiles: P50: \d+\.\d\d P75: \d+\.\d\d P99: \d+\.\d\d P99\.9: \d+\.\d\d P99\.99: \d+\.\d\d$`, lines[2])
	require.Equal(t, strings.Repeat("-", 54), lines[3])
	require.Equal(t, "[       0,       1 ]        1  16.667%  16.667% ###", lines[4])
	require.Equal(t, "(       2,       3 ]        1  16.667%  50.000% ###", lines[6])
}

func TestHistogram_Empty(t *testing.T) {
	s := newHistogram().String()
	require.True(t, strings.HasPrefix(s, "Count: 0 Average: 0.0000  StdDev: 0.00\nMin: 0  Median: 0.0000  Max: 0\n"), s)
}
