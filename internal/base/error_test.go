package base

import (
	stderrors "errors"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"
)

func TestErrorClassesVisibleToBothLibraries(t *testing.T) {
	for _, err := range []error{
		CorruptionErrorf("file %s offset %d", "000001.sst", 42),
		errors.Wrap(CorruptionErrorf("x"), "context"),
		MarkCorruption(errors.New("checksum mismatch")),
	} {
		require.True(t, stderrors.Is(err, ErrCorruption), err.Error())
		require.True(t, errors.Is(err, ErrCorruption), err.Error())
		require.False(t, stderrors.Is(err, ErrInvalidArgument))
		require.False(t, errors.Is(err, ErrInvalidArgument))
	}
	err := errors.Wrapf(InvalidArgumentf("bad %q", "v"), "option %s", "o")
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.True(t, errors.Is(err, ErrInvalidArgument))
	require.Contains(t, err.Error(), `bad "v"`)
	require.Nil(t, Mark(nil, ErrCorruption))
}
