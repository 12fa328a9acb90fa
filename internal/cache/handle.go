package cache

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"

	"github.com/stratadb/strata/internal/invariants"
)

// value is one cached (or being cached) block: its bytes, the memory
// behind them and a reference count. The cache holds one reference while
// the value is an entry; each Handle holds one. The memory is freed by
// whoever drops the last reference.
type value struct {
	refs atomic.Int32
	// evicted is set when the cache dropped its reference while others
	// were held: the value's charge then counts in the cache's pinned
	// bytes until it is freed.
	evicted atomic.Bool
	// referenced is set by Get (only when clear): the entry gets a second
	// chance when it reaches the LRU end.
	referenced atomic.Bool
	key        key    // the key it is cached under, set before it is linked
	buf        []byte // the block, a prefix of mem
	mem        memory
	charge     int64
	c          *Cache
}

// Handle is a reference to a block's bytes: from Get (the block cached
// under a key) or Alloc (fresh memory to fill and Insert). The bytes stay
// valid, and must not be modified once inserted, until Release; each
// Handle must be released exactly once. The zero Handle holds nothing:
// Bytes is nil and Release does nothing.
//
// A Handle is a small value: copy it freely, but release only one copy.
type Handle struct {
	v *value
	t *tracker // invariants builds only: catches double releases and leaks
}

// Bytes returns the block. It must not be used after Release.
func (h Handle) Bytes() []byte {
	if h.v == nil {
		return nil
	}
	return h.v.buf
}

// Valid reports whether h holds a reference.
func (h Handle) Valid() bool { return h.v != nil }

// SetLen shortens the bytes of a handle from Alloc to its first n (n not
// above the length Alloc gave). Only before Insert, by the handle's sole
// owner.
func (h Handle) SetLen(n int) {
	if h.v.refs.Load() != 1 || n > len(h.v.buf) {
		panic("cache: SetLen of a shared value or beyond its length")
	}
	h.v.buf = h.v.buf[:n]
}

// Release drops h's reference. The memory goes when the last reference
// does (the cache's own included).
func (h Handle) Release() {
	if h.v == nil {
		return
	}
	if invariants.Enabled {
		h.t.release()
		h.v.c.outstanding.Add(-1)
	}
	h.v.unref()
}

func (v *value) ref() { v.refs.Add(1) }

func (v *value) unref() {
	switch n := v.refs.Add(-1); {
	case n == 0:
		v.free()
	case n < 0:
		panic("cache: release of a block with no reference")
	}
}

func (v *value) free() {
	if v.evicted.Load() && v.c != nil {
		v.c.pinned.Add(-v.charge)
	}
	v.c.mem.free(&v.mem)
	v.buf = nil
}

// handle returns a new Handle on v, whose reference the caller took.
func (v *value) handle() Handle {
	h := Handle{v: v}
	if invariants.Enabled {
		h.t = newTracker()
		v.c.outstanding.Add(1)
	}
	return h
}

// tracker lives as long as some copy of its Handle: when the last copy is
// dropped without a Release, its cleanup reports the leak with the stack
// that created the handle.
type tracker struct{ s *trackState }

type trackState struct {
	released atomic.Bool
	stack    []uintptr
}

// leaks counts the handles reported as dropped without Release.
var leaks atomic.Int64

// Leaks returns the number of handles found dropped without Release
// (invariants builds only; the collector finds them, so after a GC).
func Leaks() int64 { return leaks.Load() }

func newTracker() *tracker {
	s := &trackState{stack: make([]uintptr, 16)}
	s.stack = s.stack[:runtime.Callers(3, s.stack)]
	t := &tracker{s: s}
	runtime.AddCleanup(t, func(s *trackState) {
		if !s.released.Load() {
			leaks.Add(1)
			fmt.Fprintf(os.Stderr, "cache: block handle dropped without Release, created at:\n%s", formatStack(s.stack))
		}
	}, s)
	return t
}

func (t *tracker) release() {
	if t == nil {
		panic("cache: release of a handle that was not handed out")
	}
	if t.s.released.Swap(true) {
		panic("cache: handle released twice; created at:\n" + formatStack(t.s.stack))
	}
}

func formatStack(pcs []uintptr) string {
	var out string
	fr := runtime.CallersFrames(pcs)
	for {
		f, more := fr.Next()
		out += fmt.Sprintf("\t%s\n\t\t%s:%d\n", f.Function, f.File, f.Line)
		if !more {
			return out
		}
	}
}

// Alloc returns a handle on n bytes of fresh memory (not zeroed) for the
// caller to fill and then cache with Insert, or just Release. Its charge is
// the allocation's size class (see Charge). A nil cache allocates on the
// heap.
func (c *Cache) Alloc(n int) Handle {
	if c == nil {
		c = nilCache
	}
	v := &value{c: c}
	v.buf = c.mem.alloc(&v.mem, n)
	v.charge = int64(len(v.mem.b)) + EntryOverhead
	v.refs.Store(1)
	return v.handle()
}

// nilCache gives a nil *Cache's Alloc a heap allocator to charge.
var nilCache = &Cache{}
