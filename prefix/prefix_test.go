package prefix_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stratadb/strata/prefix"
	"github.com/stretchr/testify/require"
)

func TestBuiltins(t *testing.T) {
	f := prefix.Fixed(3)
	require.Equal(t, "rocksdb.FixedPrefix.3", f.Name())
	require.False(t, f.InDomain([]byte("ab")))
	require.True(t, f.InDomain([]byte("abc")))
	require.Equal(t, []byte("abc"), f.Transform([]byte("abcdef")))

	c := prefix.Capped(3)
	require.Equal(t, "rocksdb.CappedPrefix.3", c.Name())
	require.True(t, c.InDomain(nil))
	require.Equal(t, []byte("ab"), c.Transform([]byte("ab")))
	require.Equal(t, []byte("abc"), c.Transform([]byte("abcdef")))

	n := prefix.Noop()
	require.Equal(t, "rocksdb.Noop", n.Name())
	require.Equal(t, []byte("abcdef"), n.Transform([]byte("abcdef")))
}

func TestTransformDoesNotAliasBeyondPrefix(t *testing.T) {
	key := []byte("abcdef")
	p := prefix.Fixed(2).Transform(key)
	p = append(p, 'X') // must not overwrite key[2]
	require.Equal(t, "abcdef", string(key))
	require.Equal(t, "abX", string(p))
}

func TestParse(t *testing.T) {
	for in, want := range map[string]string{
		"fixed:12":               "rocksdb.FixedPrefix.12",
		"capped:4":               "rocksdb.CappedPrefix.4",
		"noop":                   "rocksdb.Noop",
		"rocksdb.FixedPrefix.8":  "rocksdb.FixedPrefix.8",
		"rocksdb.CappedPrefix.1": "rocksdb.CappedPrefix.1",
		"rocksdb.Noop":           "rocksdb.Noop",
	} {
		e, err := prefix.Parse(in)
		require.NoError(t, err, in)
		require.Equal(t, want, e.Name(), in)
	}
	for _, bad := range []string{"", "nullptr", "fixed:0", "capped:-1", "bogus:2", "fixed:", "fixed:x", "fixed:+3", "rocksdb.FixedPrefix.0", "Noop"} {
		_, err := prefix.Parse(bad)
		require.Error(t, err, bad)
		require.True(t, errors.Is(err, prefix.ErrInvalid), bad)
	}
}

func ExampleParse() {
	e, err := prefix.Parse("fixed:4")
	if err != nil {
		panic(err)
	}
	key := []byte("user1234:profile")
	fmt.Println(e.Name(), e.InDomain(key), string(e.Transform(key)))
	// Output: rocksdb.FixedPrefix.4 true user
}
