//go:build unix

package main

import "syscall"

// cpuMeasured says that processCPU measures: RESULT lines carry
// cpu_us_per_op.
const cpuMeasured = true

// processCPU returns the process's user and system CPU time so far, in
// seconds: per operation, it is what an operation costs (client included)
// whatever CPU other processes leave over, which wall time is not.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
