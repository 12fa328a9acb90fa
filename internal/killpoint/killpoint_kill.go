//go:build stress_kill

package killpoint

import (
	"math/rand"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// Enabled reports whether the binary was built with the stress_kill tag.
const Enabled = true

// EnvOneIn is the environment variable holding N: each call of Maybe kills
// with probability 1/N. Unset or 0: never.
const EnvOneIn = "STRATA_KILL_ONE_IN"

var (
	oneIn = func() int {
		n, _ := strconv.Atoi(os.Getenv(EnvOneIn))
		return n
	}()
	mu  sync.Mutex
	rng = rand.New(rand.NewSource(int64(os.Getpid())))
)

// Maybe kills the process with SIGKILL with probability 1/N, after writing
// the point's name to stderr.
func Maybe(name string) {
	if oneIn <= 0 {
		return
	}
	mu.Lock()
	hit := rng.Intn(oneIn) == 0
	mu.Unlock()
	if !hit {
		return
	}
	os.Stderr.WriteString("killpoint: " + name + "\n")
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
