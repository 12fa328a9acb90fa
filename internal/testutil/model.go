// Package testutil holds helpers for tests of the engine: a sorted-map model
// of the database's contents, key generators and seed handling. It is
// imported only by _test.go files.
package testutil

import (
	"bytes"
	"sort"
)

// Model is the reference a database is checked against: a map from key to
// value with the operations of the public API and sorted views.
//
// Invariant: m holds exactly the live keys; a deleted key is absent.
type Model struct {
	m map[string]string
}

// NewModel returns an empty model.
func NewModel() *Model { return &Model{m: make(map[string]string)} }

// Put sets key to value.
func (m *Model) Put(key, value []byte) { m.m[string(key)] = string(value) }

// Delete removes key.
func (m *Model) Delete(key []byte) { delete(m.m, string(key)) }

// DeleteRange removes every key in [start, end); an empty or inverted range
// removes nothing.
func (m *Model) DeleteRange(start, end []byte) {
	for k := range m.m {
		if bytes.Compare([]byte(k), start) >= 0 && bytes.Compare([]byte(k), end) < 0 {
			delete(m.m, k)
		}
	}
}

// Get returns the value of key and whether it is live.
func (m *Model) Get(key []byte) ([]byte, bool) {
	v, ok := m.m[string(key)]
	if !ok {
		return nil, false
	}
	return []byte(v), true
}

// Len returns the number of live keys.
func (m *Model) Len() int { return len(m.m) }

// Clone returns an independent copy, for a snapshot.
func (m *Model) Clone() *Model {
	c := NewModel()
	for k, v := range m.m {
		c.m[k] = v
	}
	return c
}

// KV is one key and its value.
type KV struct {
	Key, Value string
}

// Range returns the live entries with lower <= key < upper in key order; a
// nil bound is no bound.
func (m *Model) Range(lower, upper []byte) []KV {
	out := make([]KV, 0, len(m.m))
	for k, v := range m.m {
		if lower != nil && k < string(lower) {
			continue
		}
		if upper != nil && k >= string(upper) {
			continue
		}
		out = append(out, KV{k, v})
	}
	// Go string comparison is bytewise unsigned, as the engine's order.
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
