//go:build !stress_kill

// Package killpoint marks places where the crash test may kill the process
// (RocksDB's whitebox kill points: during recovery, flush, compaction,
// MANIFEST and WAL rotation). Without the stress_kill build tag, Maybe is an
// empty function the compiler removes; with it (see killpoint_kill.go), Maybe
// kills the process with SIGKILL with probability 1/N, N from the
// environment variable STRATA_KILL_ONE_IN.
package killpoint

// Enabled reports whether the binary was built with the stress_kill tag.
const Enabled = false

// Maybe may kill the process at the named point (only with stress_kill).
func Maybe(name string) {}
