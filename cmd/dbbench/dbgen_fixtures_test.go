package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stratadb/strata/bench/dbgen"
	"github.com/stretchr/testify/require"
)

// The keys and values of bench/dbgen against RocksDB-written fixtures.

// The fixtures' tables were written by RocksDB 7.8.3's db_bench with
// -benchmarks=fillseq,flush -num=2000 (16-byte keys, 100-byte values; the
// command lines are in testdata/<fixture>/COMMAND.txt, and the scan hash of
// each table, as printed by sst_dump, in 000009.expected.txt):
// regenerating every key and value, in fillseq order (sequence number v+1
// for key v), must reproduce the table's scan hash.
func TestKeyGen_MatchesFixtures(t *testing.T) {
	cases := []struct {
		fixture string
		kg      dbgen.KeyGen
	}{
		{"fv5-xxh3-none-nofilter", dbgen.KeyGen{}},
		{"fv5-crc32c-zstd-bloom10-prefix12", dbgen.KeyGen{PrefixSize: 12, KeysPerPrefix: 10}},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			dir := filepath.Join("testdata", c.fixture)
			want := fixtureField(t, filepath.Join(dir, "000009.expected.txt"), "scan_kv_lines_sha256")
			const num = 2000
			vg := dbgen.NewValueGen(0.5, 100)
			lines := make([]struct{ key, line string }, num)
			for v := range num {
				key := make([]byte, 16)
				c.kg.Fill(key, uint64(v), num)
				lines[v].key = string(key)
				lines[v].line = fmt.Sprintf("'%X' seq:%d, type:1 => %X\n", key, v+1, vg.Generate(100))
			}
			sort.Slice(lines, func(i, j int) bool { return lines[i].key < lines[j].key })
			h := sha256.New()
			for _, l := range lines {
				io.WriteString(h, l.line)
			}
			require.Equal(t, want, hex.EncodeToString(h.Sum(nil)))
		})
	}
}

// fixtureField reads "name=value" from an expected.txt file.
func fixtureField(t *testing.T, path, name string) string {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, name+"="); ok {
			return strings.Fields(v)[0]
		}
	}
	t.Fatalf("%s: no %s", path, name)
	return ""
}
