//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// peakRSS returns the process's peak resident set size in bytes, or -1 when
// getrusage fails.
func peakRSS() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) // bytes there
	}
	return int64(ru.Maxrss) * 1024 // KiB on Linux and the BSDs
}
