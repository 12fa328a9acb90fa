package tool

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInspect_DBVerbs(t *testing.T) {
	dir := makeDB(t)
	scan := mustTool(t, "db", "scan", dir)
	live := strings.Count(scan, "\n")

	require.Contains(t, mustTool(t, "db", "lsm", dir), "level")
	props := mustTool(t, "db", "properties", dir)
	require.Contains(t, props, "rocksdb.num-files-at-level0: 3\n")

	whole, err := strconv.ParseUint(strings.TrimSpace(mustTool(t, "db", "space", dir)), 10, 64)
	require.NoError(t, err)
	require.Greater(t, whole, uint64(1000))
	require.Equal(t, "0\n", mustTool(t, "db", "space", dir, "--from=key010", "--to=key010"))

	require.Equal(t, "OK: 3 tables, "+strconv.Itoa(live)+" live keys\n", mustTool(t, "db", "check", dir))
	require.Contains(t, mustTool(t, "manifest", "check", dir), ", 3 files\n")

	cp := filepath.Join(t.TempDir(), "cp")
	require.Equal(t, "OK\n", mustTool(t, "db", "checkpoint", dir, cp))
	require.Equal(t, scan, mustTool(t, "db", "scan", cp))

	require.Equal(t, "OK\n", mustTool(t, "db", "compact", dir))
	require.Equal(t, scan, mustTool(t, "db", "scan", dir))
	require.Contains(t, mustTool(t, "db", "properties", dir), "rocksdb.num-files-at-level0: 0\n")
}

func TestInspect_SSTableVerbs(t *testing.T) {
	dir := makeDB(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.Len(t, files, 3) // Close flushes the WAL tail

	out := mustTool(t, "sstable", "scan", files[0], "--from=key010", "--limit=3")
	require.Equal(t, "'key010' seq:11, type:1 => value 10\n'key011' seq:12, type:1 => value 11\n'key012' seq:13, type:1 => value 12\n", out)
	all := mustTool(t, "sstable", "scan", dir)
	require.Contains(t, all, files[1]+":\n")
	require.Contains(t, all, "range deletion [key020, key025) seq:")
	require.Contains(t, mustTool(t, "sstable", "properties", files[0]), "rocksdb.num.entries: 52\n")
	require.Contains(t, mustTool(t, "sstable", "layout", files[0]), "meta rocksdb.properties\n")
	require.Contains(t, mustTool(t, "sstable", "check", dir), files[0]+": OK, 52 entries\n")

	// A flipped byte in a data block is reported, by sstable check and db check.
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	data[10] ^= 0xff
	require.NoError(t, os.WriteFile(files[0], data, 0o644))
	_, errOut, rc := runTool(t, "sstable", "check", files[0])
	require.Equal(t, 1, rc)
	require.Contains(t, errOut, filepath.Base(files[0]))
	_, errOut, rc = runTool(t, "db", "check", dir)
	require.Equal(t, 1, rc)
	require.Contains(t, errOut, filepath.Base(files[0]))
}
