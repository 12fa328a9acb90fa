package db

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestUnixNow checks the cached second against time.Now around second
// boundaries: it may never run ahead of the wall clock nor lag behind it.
func TestUnixNow(t *testing.T) {
	deadline := time.Now().Add(2500 * time.Millisecond)
	var crossed int
	last := int64(0)
	for time.Now().Before(deadline) {
		before := time.Now().Unix()
		got := unixNow()
		after := time.Now().Unix()
		require.GreaterOrEqual(t, got, before)
		require.LessOrEqual(t, got, after)
		if got != last {
			crossed++
			last = got
		}
	}
	require.GreaterOrEqual(t, crossed, 3, "the test must see the second change")
}
