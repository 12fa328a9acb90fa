// Package prefix defines prefix extractors: functions from a key to its
// prefix. With a prefix extractor set, table files record the extractor's
// Name and add each in-domain key's prefix to their filter, so that prefix
// seeks and point reads can skip files that cannot hold the prefix.
//
// A filter built with one extractor is only meaningful for an extractor that
// gives identical prefixes, so tables carry the Name of the extractor they
// were built with and the engine uses a table's prefix filter only while the
// current extractor has that Name. Two extractors with equal Names must give
// identical prefixes for every key.
package prefix

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// An Extractor maps a key to its prefix. Tables record the Name of the
// extractor they were built with; a table's prefix filter may be used only
// while the current extractor is compatible with that Name.
type Extractor interface {
	// Name identifies the extractor and its parameters, e.g.
	// "rocksdb.FixedPrefix.12". Two extractors with equal Names must give
	// identical prefixes for every key. Built-ins use RocksDB's names.
	Name() string
	// InDomain reports whether key has a prefix (e.g. is long enough).
	InDomain(key []byte) bool
	// Transform returns the prefix of key; callers ensure InDomain(key).
	Transform(key []byte) []byte
}

// fixed is RocksDB's FixedPrefixTransform: the first n bytes; shorter keys
// are out of domain.
type fixed struct {
	n    int
	name string
}

// Fixed returns the extractor that takes the first n bytes of a key; keys
// shorter than n are out of domain. Its Name is "rocksdb.FixedPrefix.<n>".
// n must be positive.
func Fixed(n int) Extractor {
	if n <= 0 {
		panic(fmt.Sprintf("prefix: Fixed(%d): length must be positive", n))
	}
	return &fixed{n: n, name: "rocksdb.FixedPrefix." + strconv.Itoa(n)}
}

func (f *fixed) Name() string                { return f.name }
func (f *fixed) InDomain(key []byte) bool    { return len(key) >= f.n }
func (f *fixed) Transform(key []byte) []byte { return key[:f.n:f.n] }

// capped is RocksDB's CappedPrefixTransform: the first min(n, len) bytes.
type capped struct {
	n    int
	name string
}

// Capped returns the extractor that takes the first min(n, len(key)) bytes;
// every key is in its domain. Its Name is "rocksdb.CappedPrefix.<n>". n must
// be positive.
func Capped(n int) Extractor {
	if n <= 0 {
		panic(fmt.Sprintf("prefix: Capped(%d): length must be positive", n))
	}
	return &capped{n: n, name: "rocksdb.CappedPrefix." + strconv.Itoa(n)}
}

func (c *capped) Name() string             { return c.name }
func (c *capped) InDomain(key []byte) bool { return true }
func (c *capped) Transform(key []byte) []byte {
	if len(key) > c.n {
		return key[:c.n:c.n]
	}
	return key
}

// noop is RocksDB's NoopTransform: the whole key.
type noop struct{}

// Noop returns the extractor whose prefix is the whole key. Its Name is
// "rocksdb.Noop".
func Noop() Extractor { return noop{} }

func (noop) Name() string                { return "rocksdb.Noop" }
func (noop) InDomain(key []byte) bool    { return true }
func (noop) Transform(key []byte) []byte { return key }

// ErrInvalid is returned by Parse for strings that name no extractor.
var ErrInvalid = errors.New("prefix: invalid extractor")

// Parse accepts "fixed:N", "capped:N", "noop" and the RocksDB forms
// "rocksdb.FixedPrefix.N", "rocksdb.CappedPrefix.N", "rocksdb.Noop". N must
// be a positive decimal integer. Anything else, including "" and "nullptr",
// is an error wrapping ErrInvalid.
func Parse(s string) (Extractor, error) {
	switch s {
	case "noop", "rocksdb.Noop":
		return Noop(), nil
	}
	for _, f := range []struct {
		prefix string
		make   func(int) Extractor
	}{
		{"fixed:", Fixed},
		{"capped:", Capped},
		{"rocksdb.FixedPrefix.", Fixed},
		{"rocksdb.CappedPrefix.", Capped},
	} {
		if rest, ok := strings.CutPrefix(s, f.prefix); ok {
			n, err := parsePositive(rest)
			if err != nil {
				return nil, fmt.Errorf("%w %q: %v", ErrInvalid, s, err)
			}
			return f.make(n), nil
		}
	}
	return nil, fmt.Errorf("%w %q: want fixed:N, capped:N, noop or a RocksDB name", ErrInvalid, s)
}

func parsePositive(s string) (int, error) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("length %q is not a positive integer", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("length %q is not a positive integer", s)
	}
	return n, nil
}
