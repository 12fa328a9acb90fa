package main

import (
	"bytes"
	"errors"
	"slices"
	"sync"
)

// fakeEngine is a sorted-map engine for the unit tests. It records the
// write options and read options it saw.
type fakeEngine struct {
	prefixSize int

	mu struct {
		sync.Mutex
		m        map[string][]byte
		closed   bool
		flushes  int
		compacts int
		lastWO   writeOpts
		lastRO   readOpts
	}
}

var errFakeClosed = errors.New("fake: closed")

func newFakeEngine(prefixSize int) *fakeEngine {
	e := &fakeEngine{prefixSize: prefixSize}
	e.mu.m = map[string][]byte{}
	return e
}

func (e *fakeEngine) Write(keys, vals [][]byte, wo writeOpts) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return errFakeClosed
	}
	e.mu.lastWO = wo
	for i, k := range keys {
		if vals == nil {
			delete(e.mu.m, string(k))
		} else {
			e.mu.m[string(k)] = slices.Clone(vals[i])
		}
	}
	return nil
}

// Merge appends val to the value (the fake's merge operator).
func (e *fakeEngine) Merge(key, val []byte, wo writeOpts) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return errFakeClosed
	}
	e.mu.lastWO = wo
	e.mu.m[string(key)] = append(slices.Clone(e.mu.m[string(key)]), val...)
	return nil
}

func (e *fakeEngine) Get(key []byte) ([]byte, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return nil, false, errFakeClosed
	}
	v, ok := e.mu.m[string(key)]
	return slices.Clone(v), ok, nil
}

func (e *fakeEngine) MultiGet(keys [][]byte) ([][]byte, []bool, error) {
	vals, found := make([][]byte, len(keys)), make([]bool, len(keys))
	for i, k := range keys {
		v, ok, err := e.Get(k)
		if err != nil {
			return nil, nil, err
		}
		vals[i], found[i] = v, ok
	}
	return vals, found, nil
}

func (e *fakeEngine) NewIterator(ro readOpts) iter {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.mu.lastRO = ro
	it := &fakeIter{pos: -1}
	for k, v := range e.mu.m {
		it.keys = append(it.keys, k)
		it.vals = append(it.vals, v)
	}
	slices.Sort(it.keys)
	for i, k := range it.keys {
		it.vals[i] = e.mu.m[k]
	}
	if ro.prefixSameAsStart {
		it.prefixSize = e.prefixSize
	}
	return it
}

func (e *fakeEngine) Flush() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.mu.flushes++
	return nil
}

func (e *fakeEngine) CompactRange() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.mu.compacts++
	return nil
}

func (e *fakeEngine) Property(name string) (string, bool) {
	if name == "strata.stats" {
		e.mu.Lock()
		defer e.mu.Unlock()
		return "fake stats: keys=" + string(rune('0'+min(len(e.mu.m), 9))), true
	}
	return "", false
}

func (e *fakeEngine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.mu.closed = true
	return nil
}

// fakeIter iterates over a copy of the map taken at creation. With
// prefixSize > 0 it stops where the prefix differs from the Seek key's.
type fakeIter struct {
	keys       []string
	vals       [][]byte
	pos        int
	prefixSize int
	prefix     []byte
}

func (it *fakeIter) SeekToFirst() { it.pos, it.prefix = 0, nil }
func (it *fakeIter) SeekToLast()  { it.pos, it.prefix = len(it.keys)-1, nil }
func (it *fakeIter) Seek(key []byte) {
	it.pos, _ = slices.BinarySearch(it.keys, string(key))
	it.prefix = nil
	if it.prefixSize > 0 && len(key) >= it.prefixSize {
		it.prefix = slices.Clone(key[:it.prefixSize])
	}
}
func (it *fakeIter) Next() { it.pos++ }
func (it *fakeIter) Prev() { it.pos-- }
func (it *fakeIter) Valid() bool {
	if it.pos < 0 || it.pos >= len(it.keys) {
		return false
	}
	return it.prefix == nil || bytes.HasPrefix([]byte(it.keys[it.pos]), it.prefix)
}
func (it *fakeIter) Key() []byte   { return []byte(it.keys[it.pos]) }
func (it *fakeIter) Value() []byte { return it.vals[it.pos] }
func (it *fakeIter) Err() error    { return nil }
func (it *fakeIter) Close() error  { return nil }
