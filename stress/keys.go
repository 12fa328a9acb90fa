package stress

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"

	"github.com/cockroachdb/errors"
)

// KeyLen is the length of every key: the key index in decimal, zero padded
// (fixed:N extractors group 10^(KeyLen-N) consecutive keys), or with
// SetKeyShape("binary") the cube of the index, big-endian. Either way byte
// order is numeric order.
const KeyLen = 8

// binaryKeys is set by SetKeyShape("binary").
var binaryKeys atomic.Bool

// SetKeyShape chooses, before a run, how Key encodes an index: "decimal"
// (the default) or "binary", an integer big-endian behind zero bytes as
// db_bench's keys are. The memtable's searches order binary keys by the
// summaries in its link words, without loading the nodes, and fall back to
// the keys for decimal ones (whose summaries tie), so the two shapes run
// different paths of its search. The integer is the cube of the index, so
// that the keys of one key space have different numbers of leading zero
// bytes (7 down to 4 below index 1000), which the summaries encode.
func SetKeyShape(shape string) error {
	switch shape {
	case "decimal", "":
		binaryKeys.Store(false)
	case "binary":
		binaryKeys.Store(true)
	default:
		return errors.Newf("key shape %q: want decimal or binary", shape)
	}
	return nil
}

// Key returns the key of index i.
func Key(i int) []byte {
	if binaryKeys.Load() {
		return binary.BigEndian.AppendUint64(make([]byte, 0, KeyLen), uint64(i)*uint64(i)*uint64(i))
	}
	return fmt.Appendf(make([]byte, 0, KeyLen), "%08d", i)
}

// MaxBinaryKeys bounds the key space of binary keys: the cube of a larger index
// overflows 64 bits.
const MaxBinaryKeys = 1 << 21

// KeyIndex decodes a key made by Key.
func KeyIndex(k []byte) (int, error) {
	if len(k) != KeyLen {
		return 0, errors.Newf("key %q: length %d, want %d", k, len(k), KeyLen)
	}
	if binaryKeys.Load() {
		v := binary.BigEndian.Uint64(k)
		n := uint64(math.Round(math.Cbrt(float64(v))))
		for _, c := range []uint64{n - 1, n, n + 1} {
			if c < MaxBinaryKeys && c*c*c == v {
				return int(c), nil
			}
		}
		return 0, errors.Newf("key %x: not a stress key", k)
	}
	n, err := strconv.Atoi(string(k))
	if err != nil || n < 0 {
		return 0, errors.Newf("key %q: not a stress key", k)
	}
	return n, nil
}

// valueHeader is the length of the (key, version) header of every value.
const valueHeader = 8

// Value returns the value written to key index i at version v: a header with
// i and v, then filler whose length and bytes depend on both, so a read value
// can be decoded and its integrity checked. mult scales the length.
func Value(i int, v uint32, mult int) []byte {
	if mult < 1 {
		mult = 1
	}
	n := (int(v)*7+i)%16 + 1
	n *= mult
	b := make([]byte, valueHeader+n)
	binary.BigEndian.PutUint32(b[0:], uint32(i))
	binary.BigEndian.PutUint32(b[4:], v)
	x := uint32(i)*2654435761 ^ v*40503
	for j := valueHeader; j < len(b); j++ {
		x = x*1664525 + 1013904223
		b[j] = byte(x >> 24)
	}
	return b
}

// DecodeValue checks that b is a value Value wrote for key index i with the
// given mult and returns its version.
func DecodeValue(i int, b []byte, mult int) (uint32, error) {
	if len(b) < valueHeader {
		return 0, errors.Newf("value of %d bytes is too short", len(b))
	}
	ki := binary.BigEndian.Uint32(b[0:])
	v := binary.BigEndian.Uint32(b[4:])
	if int(ki) != i {
		return v, errors.Newf("value belongs to key index %d, not %d", ki, i)
	}
	want := Value(i, v, mult)
	if string(want) != string(b) {
		return v, errors.Newf("value of version %d is damaged (%d bytes, want %d)", v, len(b), len(want))
	}
	return v, nil
}

// valueLen is the length of Value(i, v, mult).
func valueLen(i int, v uint32, mult int) int {
	if mult < 1 {
		mult = 1
	}
	return valueHeader + ((int(v)*7+i)%16+1)*mult
}

// DecodeValues decodes a value that is a concatenation of values Value
// wrote for key index i (a put's value followed by merge operands, see
// ConcatMergeOperator) and returns their versions, which must be strictly
// increasing. A plain put's value gives one version.
func DecodeValues(i int, b []byte, mult int) ([]uint32, error) {
	var vs []uint32
	for off := 0; off < len(b); {
		rest := b[off:]
		if len(rest) < valueHeader {
			return vs, errors.Newf("value segment at offset %d: %d bytes is too short", off, len(rest))
		}
		v := binary.BigEndian.Uint32(rest[4:])
		n := valueLen(i, v, mult)
		if n > len(rest) {
			return vs, errors.Newf("value segment at offset %d (version %d): %d bytes left, want %d", off, v, len(rest), n)
		}
		if _, err := DecodeValue(i, rest[:n], mult); err != nil {
			return vs, errors.Wrapf(err, "value segment at offset %d", off)
		}
		if len(vs) > 0 && v <= vs[len(vs)-1] {
			return vs, errors.Newf("value segment at offset %d: version %d after version %d", off, v, vs[len(vs)-1])
		}
		vs = append(vs, v)
		off += n
	}
	if len(vs) == 0 {
		return nil, errors.New("empty value")
	}
	return vs, nil
}
