package tool

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// walFixtures are WALs with column-family records, each with the output of
// RocksDB 7.8.3's `ldb dump_wal --walfile=F` (NAME.dump_wal.txt) and of
// `ldb dump_wal --walfile=F --header --print_value`
// (NAME.dump_wal_header_values.txt):
//
//   - dbbench-cf-000004: written by RocksDB (db_bench -num_column_families=3
//     -benchmarks=fillseq,deleteseq,mergerandom -merge_operator=stringappend
//     -num=4 -seed=1): puts and merges in families 0, 1 and 2.
//   - ldb-cf-000011: written by RocksDB (ldb put into column family 1).
//   - cf-forms-000007: written by strata's internal/batch and internal/record:
//     every record kind in families 0 (plain form and MergeCF(0)), 1, 2, 127,
//     128, 300 and 2^32-1, a LogData blob, an empty key and value, and a
//     column-family-form record with id 0.
var walFixtures = []string{"dbbench-cf-000004", "ldb-cf-000011", "cf-forms-000007"}

func TestWALDump_ColumnFamilies(t *testing.T) {
	for _, name := range walFixtures {
		path := filepath.Join("testdata", name+".log")
		for suffix, flags := range map[string][]string{
			".dump_wal.txt":               nil,
			".dump_wal_header_values.txt": {"--header", "--print-value"},
		} {
			want, err := os.ReadFile(filepath.Join("testdata", name+suffix))
			require.NoError(t, err)
			got := mustTool(t, append([]string{"wal", "dump", path}, flags...)...)
			require.Equal(t, string(want), got, "%s %v", name, flags)
		}
	}
	got := mustTool(t, "wal", "dump", filepath.Join("testdata", "cf-forms-000007.log"))
	require.Contains(t, got, "DELETE_RANGE(4294967295) : 0x7230 0x7239 ")
	require.Contains(t, got, "SINGLE_DELETE(300) : 0x73 ")
}

// TestLDB_WALDumpColumnFamiliesMatch compares with the installed ldb, for
// every combination of flags.
func TestLDB_WALDumpColumnFamiliesMatch(t *testing.T) {
	ldbPath(t)
	for _, name := range walFixtures {
		path := filepath.Join("testdata", name+".log")
		for _, flags := range [][2][]string{
			{nil, nil},
			{{"--print_value"}, {"--print-value"}},
			{{"--header"}, {"--header"}},
			{{"--header", "--print_value"}, {"--header", "--print-value"}},
		} {
			want := runLDB(t, append([]string{"dump_wal", "--walfile=" + path}, flags[0]...)...)
			got := mustTool(t, append([]string{"wal", "dump", path}, flags[1]...)...)
			require.Equal(t, want, got, "%s %v", name, flags)
		}
	}
}
