//go:build race

package testutil

// RaceEnabled reports whether the race detector is on. Under it sync.Pool
// drops items at random, so allocation counts are not meaningful.
const RaceEnabled = true
