package stress

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// bankChildEnv holds the JSON BankConfig of a bank crash child.
const bankChildEnv = "STRATA_BANK_CHILD"

// TestBank runs the bank mode briefly in memory, with power-loss images,
// few accounts (so that transfers conflict) and every kind of
// transaction, and checks that nothing broke; then that verify catches a
// transfer that is not whole.
func TestBank(t *testing.T) {
	fs := vfs.NewMem()
	var log strings.Builder
	c := BankConfig{Seed: 5, Accounts: 10, Workers: 4, Transfers: 300, Dir: "/db", FS: fs, Sync: true,
		PowerLossEvery: time.Millisecond, Log: &log}
	var st BankStats
	require.NoError(t, RunBank(c, &st), "%s", log.String())
	require.Zero(t, st.Broken.Load())
	require.Equal(t, int64(4*300), st.Transfers.Load())
	require.Positive(t, st.Updates.Load())
	require.Positive(t, st.Views.Load())
	require.Positive(t, st.Probes.Load())
	require.Positive(t, st.ConcurrentProbes.Load())
	require.Positive(t, st.Images.Load())

	// Half a transfer (one balance moved without its record) is caught.
	d, err := db.Open("/db", &db.Options{FS: fs})
	require.NoError(t, err)
	v, err := d.Get(bankAcct(3), nil)
	n, err := balance(v, err, bankAcct(3))
	require.NoError(t, err)
	// One more than it holds: appending a digit left a balance of 0 as it
	// was, and the check rightly passed.
	require.NoError(t, d.Put(bankAcct(3), []byte(strconv.FormatInt(n+1, 10)), nil))
	require.NoError(t, d.Close())
	c.Transfers = 0
	err = RunBank(c, new(BankStats))
	require.ErrorContains(t, err, "holding")
}

// TestBankCrash: bank children SIGKILLed at random times; each next one
// verifies every acknowledged transfer and the total after the reopen.
func TestBankCrash(t *testing.T) {
	dir := t.TempDir()
	c := BankConfig{Seed: 11, Accounts: 20, Workers: 3, Dir: filepath.Join(dir, "db"), Sync: true,
		AckLog: filepath.Join(dir, "acks")}
	var log strings.Builder
	st, err := RunCrash(CrashConfig{Seed: c.Seed, Cycles: 4, MaxWait: 400 * time.Millisecond, Log: &log,
		Child: func(i int, verifyOnly bool) *exec.Cmd {
			cc := c
			cc.Seed += int64(i)
			if !verifyOnly {
				cc.Duration = time.Hour
			}
			js, _ := json.Marshal(cc)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), bankChildEnv+"="+string(js))
			return cmd
		}})
	require.NoError(t, err, "%s", log.String())
	require.Positive(t, st.Kills)
	acks, err := os.ReadFile(c.AckLog)
	require.NoError(t, err)
	require.NotEmpty(t, acks, "no child acknowledged a transfer before its kill")
}
