//go:build unix

package raftetcd

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used (user and system,
// every thread: the collector's workers too). On a machine shared with
// other work, a benchmark's CPU time per op varies much less than its wall
// time, which counts the time other processes held the cores.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
