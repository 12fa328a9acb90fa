//go:build !unix

package raftetcd

import "time"

// processCPU is not measured here (see bench_cpu_unix_test.go).
func processCPU() (time.Duration, bool) { return 0, false }
