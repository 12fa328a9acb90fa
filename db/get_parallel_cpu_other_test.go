//go:build !unix

package db_test

import (
	"testing"
	"time"
)

// processCPU is not measured here: getrusage is Unix's (see
// get_parallel_cpu_unix_test.go), so cpu-ns/op is not reported.
func processCPU(*testing.B) (time.Duration, bool) { return 0, false }
