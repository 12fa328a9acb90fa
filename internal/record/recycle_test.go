package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

func writeRecyclable(t testing.TB, num uint64, recs [][]byte) []byte {
	var buf bytes.Buffer
	w := NewRecyclableWriter(&buf, num)
	for _, r := range recs {
		_, err := w.WriteRecord(r)
		require.NoError(t, err)
	}
	require.NoError(t, w.Flush())
	return buf.Bytes()
}

// requireRecords checks got against want without printing megabytes.
func requireRecords(t *testing.T, want, got [][]byte, msg string) {
	t.Helper()
	require.Equal(t, len(want), len(got), "%s: record count", msg)
	for i := range want {
		require.True(t, bytes.Equal(want[i], got[i]), "%s: record %d differs (%d vs %d bytes)", msg, i, len(want[i]), len(got[i]))
	}
}

// overwrite returns old with its first len(img) bytes replaced by img: a
// recycled file after the new log wrote img.
func overwrite(old, img []byte) []byte {
	out := append([]byte(nil), old...)
	if len(img) > len(out) {
		out = append(out, make([]byte, len(img)-len(out))...)
	}
	copy(out, img)
	return out
}

// TestRecyclableWriter_Format: every fragment is of a recyclable type with
// the 11-byte header carrying the log number's low 32 bits, no fragment
// crosses a block, and a block trailer of 7 to 10 bytes is zeros that the
// reader skips.
func TestRecyclableWriter_Format(t *testing.T) {
	for trailer := 0; trailer <= 12; trailer++ {
		// A first record that leaves `trailer` bytes in block 0.
		first := bytes.Repeat([]byte("x"), BlockSize-RecyclableHeaderSize-trailer)
		recs := [][]byte{first, []byte("second"), bytes.Repeat([]byte("y"), 3*BlockSize), {}}
		log := writeRecyclable(t, 1<<32+7, recs)
		for off := 0; off < len(log); {
			if BlockSize-off%BlockSize < RecyclableHeaderSize {
				require.True(t, allZero(log[off:off+BlockSize-off%BlockSize]), "trailer %d at %d", trailer, off)
				off += BlockSize - off%BlockSize
				continue
			}
			typ := log[off+6]
			require.True(t, typ >= recyclableFull && typ <= recyclableLast, "type %d at %d", typ, off)
			require.Equal(t, uint32(7), binary.LittleEndian.Uint32(log[off+7:]))
			n := int(binary.LittleEndian.Uint16(log[off+4:]))
			require.LessOrEqual(t, off%BlockSize+RecyclableHeaderSize+n, BlockSize)
			off += RecyclableHeaderSize + n
		}
		got, err := readAll(log, 1<<32+7)
		require.Equal(t, io.EOF, err, "trailer %d", trailer)
		requireRecords(t, recs, got, fmt.Sprintf("trailer %d", trailer))
	}
}

// TestReader_RecycledEveryCut: a log written over a longer log of another
// number, cut at every byte of its last write (a crash during the write,
// the old bytes showing through past the cut), reads as a prefix of the
// new records ending in io.EOF or ErrTornTail: never corruption, never a
// record of the old log.
func TestReader_RecycledEveryCut(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	oldRecs := randRecords(rng, 12)
	old := writeRecyclable(t, 5, oldRecs)
	synced := [][]byte{[]byte("a"), bytes.Repeat([]byte("b"), 40000)}
	last := bytes.Repeat([]byte("c"), 2*BlockSize+100)
	full := writeRecyclable(t, 9, append(synced, last))
	start := len(writeRecyclable(t, 9, synced))
	require.Less(t, len(full), len(old))
	// Every byte near the fragment headers (the start, each block's
	// start and the end), a stride elsewhere: each read scans the rest
	// of the old bytes.
	near := func(cut int) bool {
		return cut-start < 24 || cut%BlockSize < 24 || len(full)-cut < 24
	}
	for cut := start; cut <= len(full); cut++ {
		if !near(cut) && cut%61 != 0 {
			continue
		}
		img := overwrite(old, full[:cut])
		got, err := readAll(img, 9)
		if err != io.EOF {
			require.ErrorIs(t, err, ErrTornTail, "cut %d", cut)
			require.False(t, errors.Is(err, base.ErrCorruption), "cut %d: %v", cut, err)
		}
		if cut == len(full) {
			require.Equal(t, io.EOF, err)
			requireRecords(t, append(synced, last), got, "whole")
		} else {
			requireRecords(t, synced, got, fmt.Sprintf("cut %d", cut))
		}
	}
	// The old log alone read as the new one: nothing.
	got, err := readAll(old, 9)
	require.Equal(t, io.EOF, err)
	require.Empty(t, got)
}

// TestReader_RecycledDamageIsCorruption: damage to a record of a recycled
// log with intact records of the log after it is corruption naming the
// file and the damaged fragment's offset, not the end of the log.
func TestReader_RecycledDamageIsCorruption(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	old := writeRecyclable(t, 5, randRecords(rng, 40))
	recs := [][]byte{[]byte("one"), bytes.Repeat([]byte("two"), 100), []byte("three")}
	img := overwrite(old, writeRecyclable(t, 9, recs))
	second := RecyclableHeaderSize + len(recs[0])
	for _, at := range []int{second, second + 4, second + 6, second + 8, second + 20} {
		d := append([]byte(nil), img...)
		d[at] ^= 0x10
		got, err := readAll(d, 9)
		require.ErrorIs(t, err, base.ErrCorruption, "byte %d", at)
		require.Contains(t, err.Error(), "test.log")
		require.Contains(t, err.Error(), "offset 14")
		requireRecords(t, recs[:1], got, fmt.Sprintf("byte %d", at))
	}
	// Damage to the last record is the end of the log: a torn write of
	// this log (its header still names the log).
	d := append([]byte(nil), img...)
	d[second+RecyclableHeaderSize+len(recs[1])+RecyclableHeaderSize] ^= 0x10
	got, err := readAll(d, 9)
	require.ErrorIs(t, err, ErrTornTail)
	requireRecords(t, recs[:2], got, "last damaged")
}
