package db_test

import (
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

func TestPrefixUpperBound(t *testing.T) {
	for _, c := range []struct{ prefix, want []byte }{
		{[]byte("user:"), []byte("user;")},
		{[]byte{'a', 0xff}, []byte{'b'}},
		{[]byte{'a', 0xff, 0xff}, []byte{'b'}},
		{[]byte{0xff, 0xff}, nil},
		{nil, nil},
		{[]byte{}, nil},
		{[]byte{0x00}, []byte{0x01}},
	} {
		require.Equal(t, c.want, db.PrefixUpperBound(c.prefix), "%q", c.prefix)
	}
	p := []byte("ab")
	_ = db.PrefixUpperBound(p)
	require.Equal(t, []byte("ab"), p, "the prefix is not modified")
}

// Iterating with LowerBound = prefix and UpperBound = PrefixUpperBound
// yields exactly the keys with the prefix, keys of 0xff bytes included,
// without an extractor.
func TestPrefixUpperBoundIteration(t *testing.T) {
	d, _ := openTest(t, nil)
	defer d.Close()
	for _, k := range []string{"a", "ab", "ab\x00", "ab\xff", "ab\xff\xff", "ac", "b"} {
		require.NoError(t, d.Put([]byte(k), []byte("v"), nil))
	}
	got := scanKeys(t, d, &db.ReadOptions{LowerBound: []byte("ab"), UpperBound: db.PrefixUpperBound([]byte("ab"))})
	require.Equal(t, []string{"ab", "ab\x00", "ab\xff", "ab\xff\xff"}, got)
	got = scanKeys(t, d, &db.ReadOptions{LowerBound: []byte("ab\xff"), UpperBound: db.PrefixUpperBound([]byte("ab\xff"))})
	require.Equal(t, []string{"ab\xff", "ab\xff\xff"}, got)
}
