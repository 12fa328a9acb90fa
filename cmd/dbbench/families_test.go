package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// fillrandom spreads its keys over the families by key number, and a later
// readrandom replaying the same keys (same seed) looks each up in the
// family its write chose, so it finds all of them.
func TestStrata_ColumnFamilies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	args := []string{"-db=" + dir, "-num=2000", "-num_column_families=4", "-compression_type=none"}
	runBench(t, append(args, "-benchmarks=fillrandom")...)
	out := runBench(t, append(args, "-use_existing_db", "-benchmarks=readrandom,seekrandom")...)
	r := results(out)
	require.True(t, strings.HasSuffix(r["readrandom"][3], "(2000 of 2000 found)"), r["readrandom"][3])
	// seekrandom draws other keys than fillrandom wrote; it finds as many
	// as over the same keys in one family.
	one := filepath.Join(t.TempDir(), "one")
	runBench(t, "-db="+one, "-num=2000", "-compression_type=none", "-benchmarks=fillrandom")
	r1 := results(runBench(t, "-db="+one, "-num=2000", "-compression_type=none", "-use_existing_db", "-benchmarks=readrandom,seekrandom"))
	require.Equal(t, r1["seekrandom"][3], r["seekrandom"][3])
	require.NotContains(t, r["seekrandom"][3], "(0 of")

	names, err := db.ListColumnFamilies(dir)
	require.NoError(t, err)
	want := []string{"default", "column_family_name_000001", "column_family_name_000002", "column_family_name_000003"}
	require.Equal(t, want, names)

	// Every family holds the keys whose number is its index mod 4, and only
	// those: the key is the big-endian number in its first 8 bytes.
	d, err := db.Open(dir, &db.Options{ReadOnly: true})
	require.NoError(t, err)
	total := 0
	for i, name := range want {
		cf := d.ColumnFamily(name)
		require.NotNil(t, cf, name)
		it := cf.NewIterator(nil)
		n := 0
		for it.SeekToFirst(); it.Valid(); it.Next() {
			k := it.Key()
			var num uint64
			for _, c := range k[:8] {
				num = num<<8 | uint64(c)
			}
			require.Equal(t, uint64(i), num%4, "%s holds key %x", name, k)
			n++
		}
		require.NoError(t, it.Close())
		require.NotZero(t, n, name)
		total += n
	}
	require.NoError(t, d.Close())
	// readseq scans the four families one after the other.
	out = runBench(t, append(args, "-use_existing_db", "-benchmarks=readseq")...)
	require.Equal(t, total, atoiT(t, results(out)["readseq"][2]))
}

// With 2 of 6 families hot, fillseq's 3 stages write to families {0,1},
// {2,3}, {4,5}, which it creates as it reaches them; a readrandom after
// reads the last set only, as db_bench's.
func TestStrata_HotColumnFamilies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	out := runBench(t, "-db="+dir, "-num=3000", "-num_column_families=6", "-num_hot_column_families=2",
		"-column_family_distribution=30,70", "-benchmarks=fillseq,readrandom", "-compression_type=none")
	r := results(out)
	require.Contains(t, r, "fillseq")
	names, err := db.ListColumnFamilies(dir)
	require.NoError(t, err)
	require.Len(t, names, 6)
	require.Equal(t, "column_family_name_000005", names[5])
	// Keys 2000..2999 are in families 4 and 5; readrandom looks every key
	// up there, so it finds about a third of them.
	found := r["readrandom"][3]
	require.Contains(t, found, " of 3000 found)")
	require.NotContains(t, found, "(3000 of 3000 found)")
	require.NotContains(t, found, "(0 of 3000 found)")
}

func TestFamilies_Of(t *testing.T) {
	c := parse(t, "-num_column_families=3", "-column_family_distribution=10,20,70")
	f := newFamilies(c)
	// db_bench's GetCfh: the first family whose running sum reaches n%100.
	for n, want := range map[uint64]int{0: 0, 10: 0, 11: 1, 30: 1, 31: 2, 99: 2, 110: 0, 131: 2} {
		require.Equal(t, want, f.of(n), "n=%d", n)
	}
	u := newFamilies(parse(t, "-num_column_families=3"))
	require.Equal(t, 2, u.of(5))
	require.Nil(t, newFamilies(parse(t)))
	require.Equal(t, "default", columnFamilyName(0))
	require.Equal(t, "column_family_name_000012", columnFamilyName(12))

	for _, bad := range [][]string{
		{"-num_column_families=0"},
		{"-num_column_families=3", "-column_family_distribution=50,50"},
		{"-num_column_families=2", "-column_family_distribution=50,40"},
		{"-num_column_families=2", "-column_family_distribution=50,x"},
		{"-num_column_families=4", "-num_hot_column_families=2", "-column_family_distribution=10,20,70"},
	} {
		_, err := parseFlags(bad, nil)
		require.Error(t, err, "%v", bad)
	}
}

func atoiT(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// The family flags mean what db_bench's mean: RocksDB's db_bench and this
// one, run with the same command line and seed, create the same families
// and put the same keys and values in each (ldb reads both directories
// alike). With hot families and a distribution, fillseq's stages create
// the families as they reach them and weigh the hot ones.
func TestStrata_ColumnFamiliesAsDBBench(t *testing.T) {
	tool := func(name string) string {
		p, err := exec.LookPath(name)
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found (CI installs rocksdb-tools): %v", name, err)
			}
			t.Skipf("%s not installed", name)
		}
		return p
	}
	dbBench, ldb := tool("db_bench"), tool("ldb")
	run := func(bin string, args ...string) string {
		var out, errOut bytes.Buffer
		c := exec.Command(bin, args...)
		c.Stdout, c.Stderr = &out, &errOut
		require.NoError(t, c.Run(), "%s %v: %s", bin, args, errOut.String())
		return out.String()
	}
	for _, flags := range [][]string{
		{"-benchmarks=fillrandom", "-num=2000", "-num_column_families=4"},
		{"-benchmarks=fillseq", "-num=3000", "-num_column_families=6", "-num_hot_column_families=2",
			"-column_family_distribution=30,70"},
	} {
		t.Run(strings.TrimPrefix(flags[0], "-benchmarks="), func(t *testing.T) {
			args := append([]string{"-seed=1", "-value_size=8", "-compression_type=none"}, flags...)
			ours, theirs := filepath.Join(t.TempDir(), "strata"), filepath.Join(t.TempDir(), "rocksdb")
			runBench(t, append([]string{"-db=" + ours}, args...)...)
			run(dbBench, append([]string{"-db=" + theirs}, args...)...)
			names, err := db.ListColumnFamilies(ours)
			require.NoError(t, err)
			want, err := db.ListColumnFamilies(theirs)
			require.NoError(t, err)
			require.Equal(t, want, names)
			require.Len(t, names, atoiT(t, strings.TrimPrefix(flags[2], "-num_column_families=")))
			total := 0
			for _, name := range names {
				got := run(ldb, "--db="+ours, "--column_family="+name, "scan", "--hex")
				require.Equal(t, run(ldb, "--db="+theirs, "--column_family="+name, "scan", "--hex"), got, name)
				require.NotEmpty(t, got, name)
				total += strings.Count(got, "\n")
			}
			require.Greater(t, total, 1000)
		})
	}
}
