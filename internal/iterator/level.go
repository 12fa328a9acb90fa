package iterator

import (
	"sort"

	"github.com/stratadb/strata/internal/base"
)

// FileBounds are the smallest and largest internal keys of one file of a
// level.
type FileBounds struct {
	Smallest, Largest base.InternalKey
}

// Level concatenates the iterators of the files of one sorted level,
// opening each file only when a positioning call reaches it.
//
// Invariants:
//   - files is sorted and non-overlapping in internal-key order:
//     files[i].Largest < files[i+1].Smallest. Adjacent files may share a
//     boundary user key (with different sequence numbers).
//   - At most one child is open: cur, the iterator of file curIdx; curIdx
//     is -1 when none is open.
//   - When the last positioning call returned true, cur rests on the
//     current entry, and no file between it and the previous entry in the
//     direction of travel holds an entry.
//
// The callback open may return an empty iterator for a file (for example
// one a filter rules out); the level then moves on to the next file in the
// direction of travel. A file's iterator is closed when the level moves off
// the file; errors from those closes are kept and returned by Close.
type Level struct {
	files []FileBounds
	open  func(i int) (Iterator, error)
	cur   Iterator
	// curKV is cur's KVNexter, or nil when cur has none: looked up once
	// per file opened, so that NextKV steps within the file through one
	// call.
	curKV  KVNexter
	curIdx int
	// curBelowUpper: every key of file curIdx is below the upper bound
	// (or there is none), set by load, which every positioning call goes
	// through (after SetBounds one must come before a step).
	// The merging iterator, which gives the level its bounds, then need
	// not compare each key the level steps to within the file against
	// the bound (see Merging.step).
	curBelowUpper bool
	// curUB is cur as an UpperBounded, given the upper bound, when the
	// file does not end below the bound and cur can tell it per block
	// (a table's data block whose index separator is below the bound):
	// NextInBounds then asks it. Nil otherwise.
	curUB UpperBounded
	// err is the error of the last positioning call, reset by the next one.
	err error
	// closeErr is the first error returned by a child's Close.
	closeErr error
	// valid is the result of the last positioning call: Next and Prev
	// after a false return return false without touching a child (which
	// may be nil, or exhausted).
	valid bool
	cmp   *base.Comparer
	// lower and upper are the merge's bounds (SetBounds; nil: none): a
	// file wholly outside them is never opened.
	lower, upper []byte
}

// SetBounds makes the level skip the files whose keys all lie outside
// [lower, upper) (nil: unbounded): a seek or step that would open one
// reports exhaustion instead. Entries outside the bounds in a file that
// also holds keys inside them are still returned; the caller (the merging
// iterator) checks each key. The slices are kept, not copied.
func (l *Level) SetBounds(lower, upper []byte) {
	l.lower, l.upper = lower, upper
	l.valid = false
}

// belowUpper reports whether file i's largest user key is below the upper
// bound (true without one).
func (l *Level) belowUpper(i int) bool {
	return l.upper == nil || l.cmp.CompareUser(l.files[i].Largest.UserKey, l.upper) < 0
}

// NextInBounds reports whether the entry the last NextKV or Next moved to
// lies in a file whose keys are all below the upper bound, or in a part
// of the file its iterator knows to be (UpperBounded): a caller that gave
// the level its bounds need not compare it against the bound.
func (l *Level) NextInBounds() bool {
	return l.curBelowUpper || (l.curUB != nil && l.curUB.NextInBounds())
}

// boundChild sets curBelowUpper for file i, whose iterator cur is, and
// gives cur the upper bound when it can use it (curUB).
func (l *Level) boundChild(i int) {
	l.curBelowUpper = l.belowUpper(i)
	l.curUB = nil
	if !l.curBelowUpper {
		if ub, ok := l.cur.(UpperBounded); ok {
			ub.SetUpperBound(l.upper)
			l.curUB = ub
		}
	}
}

// skipFwd reports whether file i starts at or past the upper bound.
func (l *Level) skipFwd(i int) bool {
	return l.upper != nil && l.cmp.CompareUser(l.files[i].Smallest.UserKey, l.upper) >= 0
}

// skipBack reports whether file i ends before the lower bound.
func (l *Level) skipBack(i int) bool {
	return l.lower != nil && l.cmp.CompareUser(l.files[i].Largest.UserKey, l.lower) < 0
}

var (
	_ Iterator = (*Level)(nil)
	_ KVNexter = (*Level)(nil)
)

// NewLevel returns an iterator over the concatenation of files, whose
// iterators open returns on demand. The Level owns the iterators open
// returns. Keys order by cmp (nil: bytewise).
func NewLevel(cmp *base.Comparer, files []FileBounds, open func(i int) (Iterator, error)) *Level {
	return &Level{files: files, open: open, curIdx: -1, cmp: cmp.OrDefault()}
}

// load makes file i the open child. It reports false (and sets l.err) if
// open fails.
func (l *Level) load(i int) bool {
	if l.curIdx == i && l.cur != nil {
		l.boundChild(i)
		return true
	}
	l.closeChild()
	it, err := l.open(i)
	if err != nil {
		l.err = err
		return false
	}
	l.cur, l.curIdx = it, i
	l.curKV, _ = it.(KVNexter)
	l.boundChild(i)
	return true
}

func (l *Level) closeChild() {
	if l.cur == nil {
		return
	}
	if err := l.cur.Close(); err != nil && l.closeErr == nil {
		l.closeErr = err
	}
	l.cur, l.curKV, l.curIdx = nil, nil, -1
	l.curBelowUpper, l.curUB = false, nil
}

// settle records the outcome of a positioning call on the child: on an
// error it reports false and keeps the error.
func (l *Level) settle(valid bool) (done bool) {
	if valid {
		return true
	}
	if err := l.cur.Error(); err != nil {
		l.err = err
		return true
	}
	return false
}

// forward continues from file i (whose child returned valid) toward the
// end, opening files with First until one has an entry.
func (l *Level) forward(i int, valid bool) bool {
	for !l.settle(valid) {
		i++
		if i >= len(l.files) || l.skipFwd(i) || !l.load(i) {
			return false
		}
		valid = l.cur.First()
	}
	return l.err == nil
}

// backward continues from file i toward the start, opening files with Last.
func (l *Level) backward(i int, valid bool) bool {
	for !l.settle(valid) {
		i--
		if i < 0 || l.skipBack(i) || !l.load(i) {
			return false
		}
		valid = l.cur.Last()
	}
	return l.err == nil
}

// SeekGE implements Iterator. It opens the first file whose largest user
// key is >= key.
func (l *Level) SeekGE(key []byte) bool {
	l.err, l.valid = nil, false
	i := sort.Search(len(l.files), func(i int) bool {
		return l.cmp.CompareUser(l.files[i].Largest.UserKey, key) >= 0
	})
	if i >= len(l.files) || l.skipFwd(i) || !l.load(i) {
		return false
	}
	l.valid = l.forward(i, l.cur.SeekGE(key))
	return l.valid
}

// SeekLT implements Iterator. It opens the last file whose smallest user
// key is < key.
func (l *Level) SeekLT(key []byte) bool {
	l.err, l.valid = nil, false
	i := sort.Search(len(l.files), func(i int) bool {
		return l.cmp.CompareUser(l.files[i].Smallest.UserKey, key) >= 0
	}) - 1
	if i < 0 || l.skipBack(i) || !l.load(i) {
		return false
	}
	l.valid = l.backward(i, l.cur.SeekLT(key))
	return l.valid
}

// First implements Iterator.
func (l *Level) First() bool {
	l.err, l.valid = nil, false
	if len(l.files) == 0 || l.skipFwd(0) || !l.load(0) {
		return false
	}
	l.valid = l.forward(0, l.cur.First())
	return l.valid
}

// Last implements Iterator.
func (l *Level) Last() bool {
	l.err, l.valid = nil, false
	n := len(l.files)
	if n == 0 || l.skipBack(n-1) || !l.load(n-1) {
		return false
	}
	l.valid = l.backward(n-1, l.cur.Last())
	return l.valid
}

// Next implements Iterator. After a false return (or before any
// positioning call) it returns false.
func (l *Level) Next() bool {
	if !l.valid || l.cur == nil {
		return false
	}
	l.err = nil
	l.valid = l.forward(l.curIdx, l.cur.Next())
	return l.valid
}

// NextKV implements KVNexter: within a file, one call to the file's
// iterator; at the file's end, as Next.
func (l *Level) NextKV() (base.InternalKey, []byte, bool) {
	if !l.valid || l.cur == nil {
		return base.InternalKey{}, nil, false
	}
	// l.err is nil while l.valid.
	if l.curKV != nil {
		if k, v, ok := l.curKV.NextKV(); ok {
			return k, v, true
		}
		l.valid = l.forward(l.curIdx, false)
	} else {
		l.valid = l.forward(l.curIdx, l.cur.Next())
	}
	if !l.valid {
		return base.InternalKey{}, nil, false
	}
	return l.cur.Key(), l.cur.Value(), true
}

// Prev implements Iterator. After a false return it returns false.
func (l *Level) Prev() bool {
	if !l.valid || l.cur == nil {
		return false
	}
	l.err = nil
	l.valid = l.backward(l.curIdx, l.cur.Prev())
	return l.valid
}

// ResetChild closes the open file's iterator, so that the next positioning
// call opens its file afresh. A seek into the file already open otherwise
// reuses that iterator; callers whose open callback decides per seek (a
// prefix filter that depends on the seek key) reset before seeking. After
// ResetChild only Seek, First, Last or Close may follow.
func (l *Level) ResetChild() { l.closeChild(); l.valid = false }

// Key implements Iterator.
func (l *Level) Key() base.InternalKey { return l.cur.Key() }

// Value implements Iterator.
func (l *Level) Value() []byte { return l.cur.Value() }

// Error implements Iterator.
func (l *Level) Error() error { return l.err }

// Reset closes the open file's iterator and returns, and forgets, the
// errors collected so far, leaving the level as NewLevel returned it, for
// reuse by a new owner.
func (l *Level) Reset() error {
	l.closeChild()
	l.valid = false
	err := l.err
	if err == nil {
		err = l.closeErr
	}
	l.err, l.closeErr = nil, nil
	return err
}

// Close closes the open child and returns the first error among the last
// positioning call's and those of the children's Close.
func (l *Level) Close() error {
	l.closeChild()
	if l.err != nil {
		return l.err
	}
	return l.closeErr
}
