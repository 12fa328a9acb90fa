package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stratadb/strata/bench/dbgen"
	"github.com/stretchr/testify/require"
)

// resultLine matches db_bench's result line.
var resultLine = regexp.MustCompile(`^([a-z]+) +: +\d+\.\d{3} micros/op \d+ ops/sec \d+\.\d{3} seconds (\d+) operations;(.*)$`)

// fakeStore keeps fake databases by directory across reopenings.
type fakeStore struct {
	mu  sync.Mutex
	dbs map[string]*fakeEngine
}

// useFake makes openFunc open fake engines for the rest of the test.
func useFake(t *testing.T) *fakeStore {
	s := &fakeStore{dbs: map[string]*fakeEngine{}}
	saved := openFunc
	t.Cleanup(func() { openFunc = saved })
	openFunc = func(c *config) (engine, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		e := s.dbs[c.db]
		if e == nil || !dirExists(c.db) {
			if !c.useExistingDB {
				require.NoError(t, os.MkdirAll(c.db, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(c.db, "CURRENT"), nil, 0o644))
			}
			e = newFakeEngine(c.prefixSize)
		}
		reopened := newFakeEngine(c.prefixSize)
		reopened.mu.m = e.mu.m
		s.dbs[c.db] = reopened
		return reopened, nil
	}
	return s
}

func dirExists(d string) bool { _, err := os.Stat(d); return err == nil }

// runBench runs dbbench with args and returns stdout; it fails the test
// on a non-zero exit.
func runBench(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	code := realMain(append([]string{"-seed=1", "-progress_reports=false"}, args...), &out, &errOut)
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", errOut.String(), out.String())
	return out.String()
}

// results returns the result lines of out by benchmark name.
func results(out string) map[string][]string {
	m := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if r := resultLine.FindStringSubmatch(l); r != nil {
			m[r[1]] = r
		}
	}
	return m
}

func TestBench_EveryBenchmarkFake(t *testing.T) {
	useFake(t)
	dir := filepath.Join(t.TempDir(), "db")
	all := "fillseq,fillbatch,fillrandom,overwrite,fillsync,readrandom,readmissing,readseq,readreverse,seekrandom,multireadrandom,readwhilewriting,deleterandom,compact,flush,stats,waitforcompaction"
	out := runBench(t, "-db="+dir, "-benchmarks="+all, "-num=1000", "-batch_size=4", "-threads=2")
	r := results(out)
	for _, name := range strings.Split(all, ",") {
		if name == "stats" || name == "flush" || name == "waitforcompaction" {
			continue
		}
		require.Contains(t, r, name, out)
	}
	require.Equal(t, "2000", r["fillseq"][2]) // 2 threads × 1000 entries
	require.Contains(t, r["fillseq"][3], "MB/s")
	require.Contains(t, r["fillsync"][3], "(1 ops)")
	// As db_bench, the message is one thread's: 1000 reads, not 2000.
	require.Regexp(t, `\(\d+ of 1000 found\)$`, r["readrandom"][3])
	require.Equal(t, " (0 of 1000 found)", r["readmissing"][3])
	require.Regexp(t, `\(\d+ of 1000 found\)$`, r["multireadrandom"][3])
	require.Contains(t, out, "fake stats")
	require.Contains(t, out, "DB path: ["+dir+"]")
}

// fillseq then reads in one process find every key; a later process with
// -use_existing_db and the same seed replays fillrandom's key draws
// (db_bench draws twice per Get and twice per single-key write).
func TestBench_FoundCountsFake(t *testing.T) {
	useFake(t)
	dir := filepath.Join(t.TempDir(), "db")
	out := runBench(t, "-db="+dir, "-benchmarks=fillseq,readrandom,readseq,readreverse,seekrandom", "-num=500", "-seek_nexts=3")
	r := results(out)
	require.True(t, strings.HasSuffix(r["readrandom"][3], " (500 of 500 found)"), r["readrandom"][3])
	require.True(t, strings.HasSuffix(r["seekrandom"][3], " (500 of 500 found)"), r["seekrandom"][3])
	require.Equal(t, "500", r["readseq"][2])
	require.Equal(t, "500", r["readreverse"][2])
	// readrandom's message ends in a newline: a blank line follows.
	require.Contains(t, out, "found)\n\n")

	dir2 := filepath.Join(t.TempDir(), "db")
	out = runBench(t, "-db="+dir2, "-benchmarks=fillrandom", "-num=300")
	require.Equal(t, "300", results(out)["fillrandom"][2])
	out = runBench(t, "-db="+dir2, "-use_existing_db", "-benchmarks=fillseq,readrandom", "-num=300")
	require.Contains(t, out, "fillseq      : skipped (--use_existing_db is true)")
	require.True(t, strings.HasSuffix(results(out)["readrandom"][3], " (300 of 300 found)"), out)
	out = runBench(t, "-db="+dir2, "-readonly", "-benchmarks=readrandom", "-num=300", "-seed=7")
	require.NotContains(t, results(out)["readrandom"][3], "(300 of 300 found)")
}

func TestBench_PrefixSeekOptions(t *testing.T) {
	cases := []struct {
		args []string
		want readOpts
	}{
		{nil, readOpts{}},
		{[]string{"-prefix_size=8"}, readOpts{prefixSameAsStart: true}},
		{[]string{"-prefix_size=8", "-total_order_seek"}, readOpts{totalOrderSeek: true}},
		{[]string{"-prefix_same_as_start"}, readOpts{prefixSameAsStart: true}},
		{[]string{"-prefix_same_as_start", "-total_order_seek"}, readOpts{true, true}},
	}
	for _, c := range cases {
		b := &bench{cfg: parse(t, c.args...)}
		require.Equal(t, c.want, b.seekReadOpts(), "%v", c.args)
	}
}

// With a prefix and no -total_order_seek, -seek_nexts stops at the end of
// the seek key's prefix: with 2 keys per prefix a seek reads 1 or 2
// entries; in total order it reads all 10.
func TestBench_SeekNextsStayInPrefixFake(t *testing.T) {
	for _, total := range []bool{false, true} {
		c := parse(t, "-num=100", "-prefix_size=8", "-keys_per_prefix=2", "-seek_nexts=10", "-reads=50",
			fmt.Sprintf("-total_order_seek=%v", total))
		e := newFakeEngine(c.prefixSize)
		b := &bench{cfg: c, eng: e, kg: dbgen.KeyGen{PrefixSize: 8, KeysPerPrefix: 2}}
		b.resetPerBenchmark()
		w := &threadState{rand: dbgen.NewMT64(1), shared: &sharedState{total: 1}}
		require.NoError(t, b.writeSeq(w))
		r := &threadState{rand: dbgen.NewMT64(2), shared: &sharedState{total: 1}}
		require.NoError(t, b.seekRandom(r))
		require.Equal(t, "(50 of 50 found)\n", r.stats.message)
		entries := r.stats.bytes / (16 + 100)
		if total {
			require.Greater(t, entries, int64(400))
		} else {
			require.True(t, entries >= 50 && entries <= 100, "entries %d", entries)
		}
	}
}

func TestBench_WriteOptionsFake(t *testing.T) {
	s := useFake(t)
	dir := filepath.Join(t.TempDir(), "db")
	runBench(t, "-db="+dir, "-benchmarks=fillseq", "-num=10", "-disable_wal")
	require.Equal(t, writeOpts{disableWAL: true}, s.dbs[dir].mu.lastWO)
	runBench(t, "-db="+dir, "-benchmarks=fillsync", "-num=2000")
	require.Equal(t, writeOpts{sync: true}, s.dbs[dir].mu.lastWO)
}

func TestBench_HistogramAndStatisticsFake(t *testing.T) {
	useFake(t)
	out := runBench(t, "-benchmarks=fillseq,readrandom", "-num=200", "-histogram", "-statistics")
	require.Contains(t, out, "Microseconds per write:\nCount: 200 Average: ")
	require.Contains(t, out, "Microseconds per read:\nCount: 200 Average: ")
	require.Regexp(t, `Percentiles: P50: \d+\.\d\d P75: `, out)
	require.Contains(t, out, "STATISTICS:\nstrata.stats:\nfake stats")
}

func TestBench_TempDirRemovedFake(t *testing.T) {
	useFake(t)
	out := runBench(t, "-benchmarks=fillseq", "-num=10")
	m := regexp.MustCompile(`DB path: \[(.*)\]`).FindStringSubmatch(out)
	require.NotNil(t, m)
	require.False(t, dirExists(m[1]), "temporary database %s left behind", m[1])
}

func TestBench_DestroyKeepsForeignFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"000012.sst", "000013.log", "MANIFEST-000005", "CURRENT", "LOCK", "OPTIONS-000007", "IDENTITY", "notes.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o644))
	}
	require.NoError(t, destroyDB(dir))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1)
	require.Equal(t, "notes.txt", ents[0].Name())
	require.NoError(t, destroyDB(filepath.Join(dir, "missing")))
}

func TestBench_ErrorsExitOne(t *testing.T) {
	useFake(t)
	for _, args := range [][]string{
		{"-benchmarks=nosuch"}, {"-bogus"}, {"-compression_type=lz4"}, {"-compaction_style=1"},
		{"-use_existing_db", "-benchmarks=readrandom"},
	} {
		var out, errOut bytes.Buffer
		require.Equal(t, 1, realMain(args, &out, &errOut), "%v", args)
		require.NotEmpty(t, errOut.String(), "%v", args)
	}
	var errOut bytes.Buffer
	require.Equal(t, 0, realMain([]string{"-help"}, io.Discard, &errOut))
	require.Contains(t, errOut.String(), "-benchmarks")
}

func TestBench_ReportFileAndPlotFake(t *testing.T) {
	useFake(t)
	dir := t.TempDir()
	csv, svg := filepath.Join(dir, "r.csv"), filepath.Join(dir, "p.svg")
	runBench(t, "-benchmarks=fillrandom", "-num=1000000000", "-duration=2", "-value_size=10",
		"-report_interval_seconds=1", "-report_file="+csv, "-report_plot="+svg)
	data, err := os.ReadFile(csv)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Equal(t, "secs_elapsed,interval_qps,p99_micros", lines[0])
	require.GreaterOrEqual(t, len(lines), 2, string(data))
	require.Regexp(t, `^1,\d+,\d+\.\d$`, lines[1])
	requireValidSVG(t, svg)
}

func TestWritePlot_ValidSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.svg")
	var pts []reportPoint
	for i := range 10 {
		pts = append(pts, reportPoint{secs: float64(i + 1), opsPerS: float64(1000 * (i % 3)), p99Micro: float64(i * 7)})
	}
	require.NoError(t, writePlot(path, pts))
	requireValidSVG(t, path)
	require.NoError(t, writePlot(path, nil)) // no points still draws axes
	requireValidSVG(t, path)
}

// requireValidSVG parses the file as XML and checks its root is <svg>.
func requireValidSVG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dec := xml.NewDecoder(f)
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	require.Equal(t, "svg", root, fmt.Sprintf("root element of %s", path))
}
