package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestModes(t *testing.T) {
	require.Equal(t, 0, run([]string{"-mode=linearize", "-histories", "3", "-seed", "9", "-visualize_dir", t.TempDir()}))
	require.Equal(t, 0, run([]string{"-mode=metamorphic", "-ops", "200", "-seed", "9"}))
	require.Equal(t, 2, run([]string{"-mode=bogus"}))
}
