package db

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompatMergeFixtures reads RocksDB databases holding merge operands
// (in tables and WALs): without an operator Strata takes the built-in the
// OPTIONS file names; with it Strata reads exactly what ldb reads,
// forward, backward and by Get. After a full compaction by Strata every
// operand is resolved (no operator is needed any more) and ldb reads the
// same values.
func TestCompatMergeFixtures(t *testing.T) {
	_, ldbErr := exec.LookPath("ldb")
	for _, tc := range []struct {
		fixture, optionsLine string
		op                   MergeOperator
	}{
		{"fv5-xxh3-none-merge-hashsearch", "merge_operator={id=StringAppendOperator;delimiter=,;}", NewStringAppendOperator(",")},
		{"dbbench-mergerandom-uint64add", "merge_operator=UInt64AddOperator", MergeOperatorByName("uint64add")},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			entries, sum := compatExpected(t, tc.fixture)
			src := filepath.Join(compatFixtures, tc.fixture, "db")

			// Without an operator, the built-in the OPTIONS file names.
			d, err := Open(compatCopyDir(t, src), &Options{ReadOnly: true})
			require.NoError(t, err)
			got, err := compatScan(t, d)
			require.NoError(t, err)
			require.Equal(t, sum, compatSHA(got))
			require.Contains(t, d.optionsFileReport(), "using the built-in")
			require.NoError(t, d.Close())

			d, err = Open(compatCopyDir(t, src), &Options{ReadOnly: true, MergeOperator: tc.op})
			require.NoError(t, err)
			got, err = compatScan(t, d)
			require.NoError(t, err)
			require.Equal(t, entries, strings.Count(got, "\n"))
			require.Equal(t, sum, compatSHA(got))
			require.NotContains(t, d.optionsFileReport(), "merge_operator")
			compatCheckGetsAndReverse(t, d, got)
			require.NoError(t, d.Close())

			dir := compatCopyDir(t, src)
			d, err = Open(dir, &Options{MergeOperator: tc.op})
			require.NoError(t, err)
			require.NoError(t, d.CompactRange(nil, nil))
			require.NoError(t, d.Close())
			opts, err := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
			require.NoError(t, err)
			b, err := os.ReadFile(opts[len(opts)-1])
			require.NoError(t, err)
			require.Contains(t, string(b), "  "+tc.optionsLine+"\n")

			d, err = Open(dir, &Options{ReadOnly: true})
			require.NoError(t, err)
			got, err = compatScan(t, d)
			require.NoError(t, err, "after a full compaction no operand is left")
			require.Equal(t, sum, compatSHA(got))
			require.NoError(t, d.Close())
			if ldbErr == nil {
				require.Equal(t, sum, compatSHA(runLDB(t, "--db="+compatCopyDir(t, dir), "scan", "--hex")))
			}
		})
	}
}

// compatCheckGetsAndReverse checks that Get of every key of a forward scan
// (compatScan's output) returns the scanned value, and that a backward scan
// returns the same entries.
func compatCheckGetsAndReverse(t *testing.T, d *DB, scan string) {
	t.Helper()
	it := d.NewIterator(nil)
	var lines []string
	for it.SeekToLast(); it.Valid(); it.Prev() {
		lines = append(lines, fmt.Sprintf("0x%X : 0x%X\n", it.Key(), it.Value()))
		v, err := d.Get(it.Key(), nil)
		require.NoError(t, err)
		require.True(t, bytes.Equal(v, it.Value()), "Get %q", it.Key())
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	require.Equal(t, scan, strings.Join(lines, ""))
}

// TestCompatSingleDeleteFixture: a RocksDB database written with
// SingleDelete (db_bench randomreplacekeys -use_single_deletes) reads as
// ldb reads it, before and after Strata's full compaction, and ldb reads
// what Strata compacted.
func TestCompatSingleDeleteFixture(t *testing.T) {
	const fixture = "dbbench-randomreplacekeys-singledelete"
	entries, sum := compatExpected(t, fixture)
	dir := compatCopyDir(t, filepath.Join(compatFixtures, fixture, "db"))
	d, err := Open(dir, nil)
	require.NoError(t, err)
	got, err := compatScan(t, d)
	require.NoError(t, err)
	require.Equal(t, entries, strings.Count(got, "\n"))
	require.Equal(t, sum, compatSHA(got))
	require.NoError(t, d.CompactRange(nil, nil))
	got, err = compatScan(t, d)
	require.NoError(t, err)
	require.Equal(t, sum, compatSHA(got))
	require.NoError(t, d.Close())
	if _, err := exec.LookPath("ldb"); err == nil {
		require.Equal(t, sum, compatSHA(runLDB(t, "--db="+compatCopyDir(t, dir), "scan", "--hex")))
	}
}
