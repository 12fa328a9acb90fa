package db

import "github.com/stratadb/strata/internal/base"

// Error classes of the contract. Test with errors.Is; the errors returned
// carry context (file, offset, key, option) around these.
var (
	// ErrNotFound: Get/MultiGet found no live value for the key.
	ErrNotFound = base.ErrNotFound
	// ErrClosed: a call on a closed DB, iterator or released snapshot.
	ErrClosed = base.ErrClosed
	// ErrReadOnly: a write on a DB opened with ReadOnly.
	ErrReadOnly = base.ErrReadOnly
	// ErrInvalidArgument: a bad option name or value, a bad range.
	ErrInvalidArgument = base.ErrInvalidArgument
	// ErrCorruption: a checksum or format check failed; the message names
	// the file and the offset.
	ErrCorruption = base.ErrCorruption
	// ErrConflict: a transaction cannot commit (a key it wrote, or read
	// for update, or under Serializable read, was written by a commit after
	// its snapshot), or a pessimistic lock wait timed out or would have
	// closed a cycle of waiters. Retry the transaction (DB.Update does).
	ErrConflict = base.ErrConflict
)
