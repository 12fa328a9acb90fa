//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package main

// isTerminalFd reports false: without a terminal check there are no
// progress lines.
func isTerminalFd(fd uintptr) bool { return false }
