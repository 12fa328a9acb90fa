package main

import (
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStrata_MergeBenchmarks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	args := []string{"-db=" + dir, "-benchmarks=mergerandom,readrandommergerandom",
		"-merge_operator=uint64add", "-num=2000", "-merge_keys=100", "-value_size=8",
		"-compression_type=none", "-write_buffer_size=16384"}
	out := runBench(t, args...)
	r := results(out)
	require.Equal(t, "2000", r["mergerandom"][2], out)
	require.Contains(t, r["mergerandom"][3], "( updates:2000)")
	// As db_bench with the same seed: 70% merges.
	require.Contains(t, r["readrandommergerandom"][3], "(reads:597 merges:1403 total:2000 hits:597 maxlength:8)")

	// RocksDB's db_bench with the same flags and seed writes the same
	// operands: ldb reads the same values from both directories.
	dbBench, err := exec.LookPath("db_bench")
	if err != nil {
		t.Skip("db_bench not installed")
	}
	ldb, err := exec.LookPath("ldb")
	if err != nil {
		t.Skip("ldb not installed")
	}
	rdir := filepath.Join(t.TempDir(), "rocks")
	cmd := exec.Command(dbBench, append([]string{"-seed=1", "-db=" + rdir}, args[1:]...)...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	require.NoError(t, cmd.Run())
	scan := func(d string) string {
		var b bytes.Buffer
		c := exec.Command(ldb, "--db="+d, "scan", "--hex")
		c.Stdout = &b
		require.NoError(t, c.Run())
		return b.String()
	}
	got := scan(dir)
	require.Equal(t, 100, strings.Count(got, "\n"))
	require.Equal(t, scan(rdir), got)
}

func TestFlags_MergeOperator(t *testing.T) {
	_, err := parseFlags([]string{"-merge_operator=nosuch"}, io.Discard)
	require.ErrorContains(t, err, "-merge_operator=nosuch")
	_, err = parseFlags([]string{"-mergereadpercent=101"}, io.Discard)
	require.Error(t, err)
	c, err := parseFlags([]string{"-merge_operator=stringappend"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "StringAppendOperator", dbOptions(c).MergeOperator.Name())
}
