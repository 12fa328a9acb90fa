//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package main

// peakRSS is not known on this platform.
func peakRSS() int64 { return -1 }
