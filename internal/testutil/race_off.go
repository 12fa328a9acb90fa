//go:build !race

package testutil

// RaceEnabled reports whether the race detector is on.
const RaceEnabled = false
