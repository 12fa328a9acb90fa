package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const scaleTSV = "engine\tN\tworkload\tmicros_op\tops_sec\tmaxrss_kb\tdb_bytes\twrite_amp\tline\n" +
	"strata\t100000\tfillrandom\t4.0\t250000\t30000\t11000000\t0.74\tfillrandom : 4.0 micros/op\n" +
	"pebble\t100000\tfillrandom\t5.0\t200000\t40000\t15000000\t0.50\tfillrandom : 5.0 micros/op\n" +
	"strata\t300000\tfillrandom\t4.4\t230000\t60000\t36000000\t0.80\tfillrandom : 4.4 micros/op\n" +
	"pebble\t300000\tfillrandom\t4.0\t250000\t70000\t45000000\t0.60\tfillrandom : 4.0 micros/op\n" +
	"strata\t100000\treadrandom\t20.0\t50000\t33000\t11000000\t-\treadrandom : 20.0 micros/op\n" +
	"strata\t100000\treadrandom\t10.0\t100000\t35000\t11000000\t-\treadrandom : 10.0 micros/op\n" +
	"strata\t100000\treadrandom\t12.0\t80000\t34000\t11000000\t-\treadrandom : 12.0 micros/op\n" +
	"pebble\t300000\treadrandom\t-\t-\t-\t45000000\t-\tFAILED exit 1\n"

func writeScaleTSV(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "results.tsv")
	require.NoError(t, os.WriteFile(p, []byte(scaleTSV), 0o644))
	return p
}

func TestReadScale(t *testing.T) {
	r, err := readScale([]string{writeScaleTSV(t)})
	require.NoError(t, err)
	require.Equal(t, []int64{100000, 300000}, r.ns)
	require.Equal(t, []string{"fillrandom", "readrandom"}, r.workloads)
	c := r.cell(scaleKey{"strata", "readrandom", 100000})
	require.Equal(t, 12.0, median(c.micros)) // median of three reps
	require.Empty(t, c.writeAmp)
	failed := r.cell(scaleKey{"pebble", "readrandom", 300000})
	require.Empty(t, failed.micros) // "-" is no sample
	require.Equal(t, []float64{45000000}, failed.dbBytes)

	bad := filepath.Join(t.TempDir(), "bad.tsv")
	require.NoError(t, os.WriteFile(bad, []byte("strata\tmany\tfillrandom\t1\t1\t1\t1\t1\tx\n"), 0o644))
	_, err = readScale([]string{bad})
	require.ErrorContains(t, err, "bad.tsv:1")
}

func TestPrintScaleTable(t *testing.T) {
	r, err := readScale([]string{writeScaleTSV(t)})
	require.NoError(t, err)
	var b bytes.Buffer
	printScaleTable(&b, r, []string{"strata", "pebble"}, []string{"fillrandom", "readrandom"})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2+3, b.String()) // header, rule, 2 fillrandom rows, 1 readrandom row
	// 250000/200000 = 1.25; at 300K 230000/250000 = 0.92, 0.74 of the 100K ratio.
	require.Equal(t, "| fillrandom | 100K | 4.000 | 5.000 | 1.25× (1.00) | 29 | 39 | 0.01 | 0.01 | 0.74 | 0.50 |", lines[2])
	require.Equal(t, "| fillrandom | 300K | 4.400 | 4.000 | 0.92× (0.74) | 59 | 68 | 0.04 | 0.04 | 0.80 | 0.60 |", lines[3])
	require.Equal(t, "| readrandom | 100K | 12.000 | – | – | 33 | – | 0.01 | – | – | – |", lines[4])
}

func TestDrawScale(t *testing.T) {
	r, err := readScale([]string{writeScaleTSV(t)})
	require.NoError(t, err)
	dir := t.TempDir()
	svg, png := filepath.Join(dir, "s.svg"), filepath.Join(dir, "s.png")
	for _, logY := range []bool{false, true} {
		require.NoError(t, drawScale(r, []string{"strata", "pebble"}, []string{"fillrandom", "readrandom"}, "t", logY, []string{svg, png}))
		b, err := os.ReadFile(svg)
		require.NoError(t, err)
		require.Contains(t, string(b), "<svg")
		require.Contains(t, string(b), "300K")
		b, err = os.ReadFile(png)
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(b, []byte("\x89PNG")))
	}
	require.ErrorContains(t, drawScale(r, []string{"rocksdb"}, []string{"fillrandom"}, "", false, []string{svg}), "no rows")
}
