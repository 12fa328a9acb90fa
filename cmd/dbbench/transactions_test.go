package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// randomtransaction runs briefly on Strata, optimistic and pessimistic,
// with 4 threads on few keys (so that transactions conflict), with and
// without -transaction_sleep, and its verification passes; the totals line
// adds up over the threads.
func TestRandomTransaction(t *testing.T) {
	for _, args := range [][]string{
		{"-optimistic_transaction_db"},
		{"-transaction_db", "-transaction_lock_timeout=10"},
		{"-transaction_db", "-transaction_sleep=50", "-transaction_sets=5"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut strings.Builder
			a := append([]string{"-benchmarks=randomtransaction", "-num=20", "-threads=4", "-writes=300",
				"-seed=3", "-db=" + filepath.Join(t.TempDir(), "db")}, args...)
			require.Equal(t, 0, realMain(a, &out, &errOut), "%s%s", out.String(), errOut.String())
			s := out.String()
			require.Contains(t, s, "RandomTransactionVerify Success.")
			require.Regexp(t, `randomtransaction : .* ops/sec .*\( transactions:300 aborts:\d+\)`, s)
			m := regexp.MustCompile(`all threads: transactions:(\d+) aborts:(\d+)`).FindStringSubmatch(s)
			require.NotNil(t, m, s)
			require.Equal(t, "1200", m[1])
			aborts, _ := strconv.Atoi(m[2])
			require.Less(t, aborts, 1200)
		})
	}
}

// The verification fails, and dbbench exits with status 1, when the sets
// do not sum to the same total; without transactions it verifies nothing
// (db_bench's DBInsert).
func TestRandomTransactionVerifyFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	var out, errOut strings.Builder
	require.Equal(t, 0, realMain([]string{"-benchmarks=randomtransaction", "-num=20", "-writes=50", "-seed=3", "-db=" + dir}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "( batches:50 )")
	require.NotContains(t, out.String(), "RandomTransactionVerify S")
	d, err := db.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, d.Put(txnKey(1, 7), []byte("12345"), nil))
	require.NoError(t, d.Close())
	out.Reset()
	errOut.Reset()
	require.Equal(t, 1, realMain([]string{"-benchmarks=randomtransaction", "-optimistic_transaction_db", "-use_existing_db",
		"-num=20", "-writes=10", "-seed=3", "-db=" + dir}, &out, &errOut))
	require.Contains(t, out.String(), "RandomTransactionVerify FAILED!!")
	require.Contains(t, errOut.String(), "inconsistent totals")
}

func TestRandomTransactionFlags(t *testing.T) {
	for _, bad := range [][]string{
		{"-transaction_sets=0"}, {"-transaction_sets=10000"}, {"-transaction_sleep=-1"},
		{"-optimistic_transaction_db", "-transaction_db"},
		{"-transaction_db", "-disable_wal"},
	} {
		_, err := parseFlags(append([]string{"-benchmarks=randomtransaction"}, bad...), &strings.Builder{})
		require.Error(t, err, "%v", bad)
	}
}
