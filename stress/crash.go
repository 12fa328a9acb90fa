package stress

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
)

// CrashConfig is a crash test: Cycles times, start the child (a stress run
// persisting its oracle in an expected-state log), kill it with SIGKILL
// after a random time below MaxWait (or let a kill point kill it), then
// start the next child, which verifies the database against the log before
// it writes. A last child only verifies.
type CrashConfig struct {
	Seed    int64
	Cycles  int
	MaxWait time.Duration
	// Child returns the command of cycle i (the stress child with the
	// expected-state log, the directory and the seed set); verifyOnly asks
	// for a child that verifies and exits.
	Child func(i int, verifyOnly bool) *exec.Cmd
	Log   io.Writer
}

// CrashStats counts what a crash test did.
type CrashStats struct {
	Cycles, Kills, KillPoints, Exits int
	KillPointNames                   map[string]int
	// ChildOps sums, over the children, the counts of the last progress
	// line each printed ("stress-progress ops=... merges=..."): what the
	// killed children did.
	ChildOps map[string]int64
}

var progressRE = regexp.MustCompile(`(?m)^stress-progress (.*)$`)

// addProgress adds the counts of the last progress line in out.
func (st *CrashStats) addProgress(out []byte) {
	ms := progressRE.FindAllSubmatch(out, -1)
	if len(ms) == 0 {
		return
	}
	for _, f := range strings.Fields(string(ms[len(ms)-1][1])) {
		name, v, ok := strings.Cut(f, "=")
		if n, err := strconv.ParseInt(v, 10, 64); ok && err == nil {
			st.ChildOps[name] += n
		}
	}
}

var killPointRE = regexp.MustCompile(`killpoint: (\S+)`)

// RunCrash runs the crash test. A child that exits with a failure (a wrong
// answer after recovery) ends it with an error carrying the child's output.
func RunCrash(cc CrashConfig) (CrashStats, error) {
	st := CrashStats{KillPointNames: map[string]int{}, ChildOps: map[string]int64{}}
	if cc.Log == nil {
		cc.Log = io.Discard
	}
	rng := rand.New(rand.NewSource(cc.Seed))
	for i := 0; i <= cc.Cycles; i++ {
		verify := i == cc.Cycles
		cmd := cc.Child(i, verify)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			return st, errors.Wrap(err, "start child")
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		killed := false
		if verify {
			err = <-done
		} else {
			wait := time.Duration(rng.Int63n(int64(cc.MaxWait) + 1))
			select {
			case err = <-done:
			case <-time.After(wait):
				_ = cmd.Process.Signal(syscall.SIGKILL)
				err = <-done
				killed = true
			}
		}
		st.Cycles++
		st.addProgress(out.Bytes())
		var ee *exec.ExitError
		switch {
		case err == nil:
			st.Exits++
		case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled():
			if m := killPointRE.FindSubmatch(out.Bytes()); m != nil && !killed {
				st.KillPoints++
				st.KillPointNames[string(m[1])]++
			} else {
				st.Kills++
			}
		default:
			return st, errors.Newf("crash cycle %d (seed %d): child failed: %v\n%s", i, cc.Seed, err, out.String())
		}
		fmt.Fprintf(cc.Log, "crash cycle %d: %v (killed by driver=%v)\n", i, err, killed)
	}
	return st, nil
}
