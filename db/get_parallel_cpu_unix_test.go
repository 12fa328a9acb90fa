//go:build unix

package db_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// processCPU returns the process's user and system CPU time so far (every
// thread's: the collector's workers too), which on a shared machine varies
// much less per op than wall time.
func processCPU(b *testing.B) (time.Duration, bool) {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
