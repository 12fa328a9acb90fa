package base

import (
	"github.com/cockroachdb/errors"
)

// Error classes of the API contract. package db re-exports them; every layer
// below db wraps them with context (file, offset, key, option) and callers
// test with errors.Is — the standard library's or cockroachdb/errors', both
// work (see Mark).
var (
	ErrNotFound        = errors.New("strata: not found")
	ErrClosed          = errors.New("strata: closed")
	ErrReadOnly        = errors.New("strata: read-only")
	ErrInvalidArgument = errors.New("strata: invalid argument")
	ErrCorruption      = errors.New("strata: corruption")
	ErrConflict        = errors.New("strata: transaction conflict")
)

// ErrUnsupportedColumnFamily marks data of a RocksDB column family other
// than the default one, in a WAL batch or in the MANIFEST: Strata opens
// only the default column family.
var ErrUnsupportedColumnFamily = errors.New("strata: unsupported column family")

// classError puts an error in a class without changing its message. The
// class is recorded twice: as a cockroachdb/errors mark (which survives
// encoding and is what errors.Is of that library checks) and through an Is
// method, which the standard library's errors.Is consults; a mark alone is
// invisible to the standard library.
type classError struct {
	cause error // the marked error
	class error
}

func (e *classError) Error() string        { return e.cause.Error() }
func (e *classError) Unwrap() error        { return e.cause }
func (e *classError) Is(target error) bool { return target == e.class }

// Mark returns err in the class of sentinel, keeping its message and chain.
func Mark(err, sentinel error) error {
	if err == nil {
		return nil
	}
	return &classError{cause: errors.Mark(err, sentinel), class: sentinel}
}

// CorruptionErrorf returns an error of the ErrCorruption class. The message
// should name the file and the offset.
func CorruptionErrorf(format string, args ...interface{}) error {
	return Mark(errors.Newf("strata: corruption: "+format, args...), ErrCorruption)
}

// MarkCorruption marks err as belonging to the ErrCorruption class, keeping
// its message.
func MarkCorruption(err error) error { return Mark(err, ErrCorruption) }

// InvalidArgumentf returns an error of the ErrInvalidArgument class.
func InvalidArgumentf(format string, args ...interface{}) error {
	return Mark(errors.Newf("strata: invalid argument: "+format, args...), ErrInvalidArgument)
}

// AssertionFailedf reports a broken internal invariant: a bug, never bad
// input.
func AssertionFailedf(format string, args ...interface{}) error {
	return errors.AssertionFailedf("strata: "+format, args...)
}
