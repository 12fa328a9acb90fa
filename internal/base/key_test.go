package base

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSharedPrefixLen(t *testing.T) {
	for _, c := range []struct {
		a, b string
		n    int
	}{
		{"", "", 0}, {"a", "", 0}, {"abc", "abd", 2}, {"abc", "abc", 3},
		{"ab", "abc", 2}, {"abc", "ab", 2}, {"x", "y", 0},
	} {
		require.Equal(t, c.n, SharedPrefixLen([]byte(c.a), []byte(c.b)), "%q %q", c.a, c.b)
	}
}
