package iterator

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/stratadb/strata/internal/base"
)

// kv is one entry of a test iterator.
type kv struct {
	key   base.InternalKey
	value []byte
}

// sliceIter iterates a sorted []kv. It checks the Iterator contract
// (panicking on misuse), can poison the key and value it handed out before
// each positioning call to catch callers that keep them too long, and can
// fail with err from the failAfter-th positioning call on.
type sliceIter struct {
	kvs    []kv
	pos    int  // -1 or len(kvs) when exhausted
	valid  bool // Next and Prev are allowed only when valid
	closed bool

	poison   bool
	keyBuf   []byte
	valBuf   []byte
	calls    int
	failFrom int // fail positioning calls from this count on; 0 means never
	err      error
}

func newSliceIter(kvs []kv) *sliceIter { return &sliceIter{kvs: kvs, poison: true} }

func (s *sliceIter) position(pos int) bool {
	if s.closed {
		panic("positioning a closed iterator")
	}
	if s.poison {
		for i := range s.keyBuf {
			s.keyBuf[i] = 0xff
		}
		for i := range s.valBuf {
			s.valBuf[i] = 0xff
		}
	}
	s.calls++
	s.err = nil
	if s.failFrom > 0 && s.calls >= s.failFrom {
		s.err = fmt.Errorf("sliceIter: injected failure at call %d", s.calls)
		s.valid = false
		return false
	}
	s.pos = pos
	s.valid = pos >= 0 && pos < len(s.kvs)
	if !s.valid {
		return false
	}
	if s.poison {
		s.keyBuf = append([]byte(nil), s.kvs[pos].key.UserKey...)
		s.valBuf = append([]byte(nil), s.kvs[pos].value...)
	}
	return true
}

func (s *sliceIter) SeekGE(key []byte) bool {
	i := sort.Search(len(s.kvs), func(i int) bool { return bytes.Compare(s.kvs[i].key.UserKey, key) >= 0 })
	return s.position(i)
}

func (s *sliceIter) SeekLT(key []byte) bool {
	i := sort.Search(len(s.kvs), func(i int) bool { return bytes.Compare(s.kvs[i].key.UserKey, key) >= 0 })
	return s.position(i - 1)
}

func (s *sliceIter) First() bool { return s.position(0) }
func (s *sliceIter) Last() bool  { return s.position(len(s.kvs) - 1) }

func (s *sliceIter) Next() bool {
	if !s.valid {
		panic("Next on an exhausted iterator")
	}
	return s.position(s.pos + 1)
}

func (s *sliceIter) Prev() bool {
	if !s.valid {
		panic("Prev on an exhausted iterator")
	}
	return s.position(s.pos - 1)
}

func (s *sliceIter) Key() base.InternalKey {
	if !s.valid {
		panic("Key on an invalid iterator")
	}
	if s.poison {
		return base.InternalKey{UserKey: s.keyBuf, Trailer: s.kvs[s.pos].key.Trailer}
	}
	return s.kvs[s.pos].key
}

func (s *sliceIter) Value() []byte {
	if !s.valid {
		panic("Value on an invalid iterator")
	}
	if s.poison {
		return s.valBuf
	}
	return s.kvs[s.pos].value
}

func (s *sliceIter) Error() error { return s.err }

func (s *sliceIter) Close() error {
	if s.closed {
		panic("double close")
	}
	s.closed = true
	return s.err
}
