package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/stratadb/strata/internal/killpoint"
	"github.com/stratadb/strata/stress"
)

// runCrash is the -crash driver: it re-runs this binary (or, for kill
// points, a copy built with -tags stress_kill) as the child.
func runCrash(c stress.Config, args []string, cycles int, maxWait time.Duration, killOneIn int, verbose bool) int {
	if c.FS != nil {
		fmt.Fprintln(os.Stderr, "stress: -crash runs on disk; drop -mem/-powerloss")
		return 2
	}
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stress:", err)
		return 2
	}
	if killOneIn > 0 && !killpoint.Enabled {
		tmp, err := os.MkdirTemp("", "strata-stress-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "stress:", err)
			return 2
		}
		defer os.RemoveAll(tmp)
		bin = filepath.Join(tmp, "stress-child")
		build := exec.Command("go", "build", "-tags", "stress_kill", "-o", bin, "github.com/stratadb/strata/cmd/stress")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "stress: building the child with -tags stress_kill (run from the repository, or build this binary with -tags stress_kill):", err)
			return 2
		}
	}
	if err := os.MkdirAll(filepath.Dir(c.Dir), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "stress:", err)
		return 2
	}
	logPath := c.Dir + ".expected"
	if err := removeStaleSidecars(c.Dir); err != nil {
		fmt.Fprintln(os.Stderr, "stress:", err)
		return 2
	}
	fmt.Fprintf(os.Stderr, "stress: crash test, seed %d, db %s, %d cycles\n", c.Seed, c.Dir, cycles)
	cc := stress.CrashConfig{
		Seed: c.Seed, Cycles: cycles, MaxWait: maxWait,
		Child: func(i int, verifyOnly bool) *exec.Cmd {
			cmd := exec.Command(bin, childArgs(args, c.Dir, logPath, c.Seed+int64(i), verifyOnly, "-ops_per_thread", "0")...)
			cmd.Env = os.Environ()
			if killOneIn > 0 && !verifyOnly {
				cmd.Env = append(cmd.Env, "STRATA_KILL_ONE_IN="+strconv.Itoa(killOneIn))
			}
			return cmd
		},
	}
	if verbose {
		cc.Log = os.Stderr
	}
	st, err := stress.RunCrash(cc)
	fmt.Fprintf(os.Stderr, "stress: crash cycles %d: killed by the driver %d, by kill points %d %v, exited %d\n",
		st.Cycles, st.Kills, st.KillPoints, st.KillPointNames, st.Exits)
	fmt.Fprintf(os.Stderr, "stress: children (last progress of each, summed): %v\n", st.ChildOps)
	return verdict(err)
}

// removeStaleSidecars removes the files a crash run keeps beside the
// database directory dir (the history of acknowledged writes, dir +
// ".expected", and the ingestion staging directory, dir + ".ext") when dir
// itself is gone: they belong to a database that no longer exists, and a
// new run would check the fresh database against the old history. With
// dir present they are the run's to resume, and stay.
func removeStaleSidecars(dir string) error {
	if _, err := os.Stat(dir); err == nil || !os.IsNotExist(err) {
		return err
	}
	for _, p := range []string{dir + ".expected", dir + ".ext"} {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("removing the stale %s: %w", p, err)
		}
	}
	return nil
}

// runBankCrash is -mode=bank -crash: bank children (synced transfers,
// every acknowledged one appended to a log) SIGKILLed after a random
// time; each next child verifies the bank against the log before it
// transfers, and a last one only verifies.
func runBankCrash(bc stress.BankConfig, args []string, cycles int, maxWait time.Duration, verbose bool) int {
	if bc.FS != nil {
		fmt.Fprintln(os.Stderr, "stress: -crash runs on disk; drop -mem")
		return 2
	}
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stress:", err)
		return 2
	}
	if err := os.MkdirAll(filepath.Dir(bc.Dir), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "stress:", err)
		return 2
	}
	logPath := bc.Dir + ".acks"
	fmt.Fprintf(os.Stderr, "stress: bank crash test, seed %d, db %s, %d cycles\n", bc.Seed, bc.Dir, cycles)
	cc := stress.CrashConfig{
		Seed: bc.Seed, Cycles: cycles, MaxWait: maxWait,
		Child: func(i int, verifyOnly bool) *exec.Cmd {
			return exec.Command(bin, childArgs(args, bc.Dir, logPath, bc.Seed+int64(i), verifyOnly, "-transfers", "0")...)
		},
	}
	if verbose {
		cc.Log = os.Stderr
	}
	st, err := stress.RunCrash(cc)
	fmt.Fprintf(os.Stderr, "stress: bank crash cycles %d: killed %d, exited %d\n", st.Cycles, st.Kills, st.Exits)
	fmt.Fprintf(os.Stderr, "stress: children (last progress of each, summed): %v\n", st.ChildOps)
	return verdict(err)
}

// childArgs is a crash child's command line: the driver's own flags, then
// its database, log and seed, the mode's flags that make it run until
// killed (unbounded), and a duration: 0 for a child that only verifies, an
// hour for one the driver kills.
func childArgs(args []string, dir, logPath string, seed int64, verifyOnly bool, unbounded ...string) []string {
	a := append([]string{}, args...)
	a = append(a, "-crash=false", "-db", dir, "-expected_log", logPath, "-seed", strconv.FormatInt(seed, 10))
	a = append(a, unbounded...)
	if verifyOnly {
		return append(a, "-duration", "0")
	}
	return append(a, "-duration", "1h")
}

// verdict prints the crash driver's verdict and returns the exit status.
func verdict(err error) int {
	if err != nil {
		fmt.Fprintln(os.Stderr, "stress: FAILED:", err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "stress: OK")
	return 0
}
