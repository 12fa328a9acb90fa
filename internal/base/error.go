package base

import (
	"github.com/cockroachdb/errors"
)

// Error classes of the API contract. package db re-exports them; every layer
// below db wraps them with context (file, offset, key, option) and callers
// test with errors.Is.
var (
	ErrNotFound        = errors.New("strata: not found")
	ErrClosed          = errors.New("strata: closed")
	ErrReadOnly        = errors.New("strata: read-only")
	ErrInvalidArgument = errors.New("strata: invalid argument")
	ErrCorruption      = errors.New("strata: corruption")
)

// CorruptionErrorf returns an error of the ErrCorruption class. The message
// should name the file and the offset.
func CorruptionErrorf(format string, args ...interface{}) error {
	return errors.Mark(errors.Newf("strata: corruption: "+format, args...), ErrCorruption)
}

// MarkCorruption marks err as belonging to the ErrCorruption class, keeping
// its message.
func MarkCorruption(err error) error {
	if err == nil {
		return nil
	}
	return errors.Mark(err, ErrCorruption)
}

// InvalidArgumentf returns an error of the ErrInvalidArgument class.
func InvalidArgumentf(format string, args ...interface{}) error {
	return errors.Mark(errors.Newf("strata: invalid argument: "+format, args...), ErrInvalidArgument)
}

// AssertionFailedf reports a broken internal invariant: a bug, never bad
// input.
func AssertionFailedf(format string, args ...interface{}) error {
	return errors.AssertionFailedf("strata: "+format, args...)
}
