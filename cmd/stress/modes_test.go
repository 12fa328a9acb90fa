package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestModes(t *testing.T) {
	require.Equal(t, 0, run([]string{"-mode=linearize", "-histories", "3", "-seed", "9", "-visualize_dir", t.TempDir()}))
	require.Equal(t, 0, run([]string{"-mode=metamorphic", "-ops", "200", "-seed", "9"}))
	require.Equal(t, 0, run([]string{"-mode=compact", "-ops", "500", "-seeds", "2", "-seed", "9"}))
	require.Equal(t, 0, run([]string{"-mode=bank", "-mem", "-transfers=200", "-accounts=10", "-sync", "-power_loss_every=1ms", "-seed=9"}))
	require.Equal(t, 2, run([]string{"-mode=bogus"}))
	require.Equal(t, 2, run([]string{"-mode=linearize", "-key_shape=binary"}))
	require.Equal(t, 2, run([]string{"-key_shape=hex"}))
	require.Equal(t, 2, run([]string{"-key_shape=binary", "-max_key=3000000"}))
	require.Equal(t, 0, run([]string{"-mem", "-key_shape=binary", "-ops_per_thread=300", "-seed=9"}))
	require.Equal(t, 0, run([]string{"-mem", "-ops_per_thread=100", "-seed=9"})) // decimal again
}
