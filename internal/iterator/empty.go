package iterator

import "github.com/stratadb/strata/internal/base"

// emptyIter has no entries. It holds no state, so one value serves all.
type emptyIter struct{}

var emptyInstance = &emptyIter{}

// Empty returns an iterator with no entries. It is shared and does not
// allocate; closing it is a no-op.
func Empty() Iterator { return emptyInstance }

func (*emptyIter) SeekGE([]byte) bool    { return false }
func (*emptyIter) SeekLT([]byte) bool    { return false }
func (*emptyIter) First() bool           { return false }
func (*emptyIter) Last() bool            { return false }
func (*emptyIter) Next() bool            { return false }
func (*emptyIter) Prev() bool            { return false }
func (*emptyIter) Key() base.InternalKey { return base.InternalKey{} }
func (*emptyIter) Value() []byte         { return nil }
func (*emptyIter) Error() error          { return nil }
func (*emptyIter) Close() error          { return nil }

// errorIter has no entries and reports an error from every call.
type errorIter struct{ err error }

// NewError returns an iterator whose positioning calls all fail with err,
// and whose Error and Close report err.
func NewError(err error) Iterator { return &errorIter{err: err} }

func (e *errorIter) SeekGE([]byte) bool    { return false }
func (e *errorIter) SeekLT([]byte) bool    { return false }
func (e *errorIter) First() bool           { return false }
func (e *errorIter) Last() bool            { return false }
func (e *errorIter) Next() bool            { return false }
func (e *errorIter) Prev() bool            { return false }
func (e *errorIter) Key() base.InternalKey { return base.InternalKey{} }
func (e *errorIter) Value() []byte         { return nil }
func (e *errorIter) Error() error          { return e.err }
func (e *errorIter) Close() error          { return e.err }
