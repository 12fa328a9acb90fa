package record

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// readSkipping reads every record it can, calling Recover after damage and
// after zero-filled headers, as WALRecoverySkipAnyCorrupted does.
func readSkipping(t *testing.T, log []byte) (recs [][]byte, damages int) {
	t.Helper()
	r := NewReader(bytes.NewReader(log), 7, "test.log")
	for i := 0; i < 1000; i++ {
		rec, err := r.Next()
		switch {
		case err == nil:
			recs = append(recs, append([]byte(nil), rec...))
		case err == io.EOF:
			if _, zero := r.ZeroEnd(); !zero {
				return recs, damages
			}
			r.Recover()
		case errors.Is(err, base.ErrCorruption) || errors.Is(err, ErrTornTail):
			damages++
			r.Recover()
		default:
			t.Fatalf("unexpected error %v", err)
		}
	}
	t.Fatal("Recover made no progress")
	return nil, 0
}

// TestReader_Recover: after a damaged fragment the rest of its block is
// dropped; the orphan fragments of a record whose FIRST was dropped are
// skipped one by one, so the record after them survives; a zeroed block is
// skipped.
func TestReader_Recover(t *testing.T) {
	small := func(c byte) []byte { return bytes.Repeat([]byte{c}, 50) }
	big := bytes.Repeat([]byte{'B'}, 2*BlockSize) // FIRST in block 0, MIDDLE in 1, LAST in 2
	recs := [][]byte{small('a'), small('b'), big, small('c'), small('d')}
	log := writeLog(t, recs)

	got, damages := readSkipping(t, log)
	require.Equal(t, recs, got)
	require.Zero(t, damages)

	// A flip in record b drops b and the FIRST of big.
	d := append([]byte(nil), log...)
	d[HeaderSize+50+HeaderSize+10] ^= 0xff
	got, damages = readSkipping(t, d)
	require.Equal(t, [][]byte{small('a'), small('c'), small('d')}, got)
	require.Equal(t, 3, damages) // the checksum, the orphan MIDDLE and LAST

	// A zeroed block 1 loses big only.
	d = append([]byte(nil), log...)
	copy(d[BlockSize:2*BlockSize], make([]byte, BlockSize))
	got, _ = readSkipping(t, d)
	require.Equal(t, [][]byte{small('a'), small('b'), small('c'), small('d')}, got)

	// ZeroEnd tells preallocated space from the true end.
	padded := append(append([]byte(nil), log...), make([]byte, 3*BlockSize)...)
	got, damages = readSkipping(t, padded)
	require.Equal(t, recs, got)
	require.Zero(t, damages)
}

// TestReader_RecoverKeepsFullAfterFirst: a FULL fragment where a MIDDLE or
// LAST was expected ends the broken record; after Recover the FULL record
// is returned, not lost with it.
func TestReader_RecoverKeepsFullAfterFirst(t *testing.T) {
	first := writeLog(t, [][]byte{bytes.Repeat([]byte{'x'}, BlockSize+10)})
	// Keep the FIRST fragment (all of block 0) and put a FULL record after.
	log := append([]byte(nil), first[:BlockSize]...)
	log = append(log, writeLog(t, [][]byte{[]byte("full")})...)
	r := NewReader(bytes.NewReader(log), 7, "test.log")
	_, err := r.Next()
	require.ErrorIs(t, err, base.ErrCorruption)
	r.Recover()
	rec, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, "full", string(rec))
	_, err = r.Next()
	require.ErrorIs(t, err, io.EOF)
}
