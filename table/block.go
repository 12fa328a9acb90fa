package table

import (
	"encoding/binary"
	"math"

	"github.com/stratadb/strata/internal/base"
)

// blockWriter builds one block (§8 of the format spec):
//
//	entry   := varint32 shared ‖ varint32 non_shared ‖ [varint32 value_len]
//	           ‖ key_delta ‖ value
//	block   := entry* ‖ fixed32 restart_offset × n ‖ fixed32 n
//
// Invariants: restarts[0] == 0 once an entry was added; every
// restartInterval-th entry is a restart (shared == 0); keys are added in
// increasing order (the caller checks). With noValueLen (delta-encoded index
// blocks, fv >= 4) value_len is omitted: the reader finds the value's end by
// decoding the block handle.
type blockWriter struct {
	restartInterval int
	noValueLen      bool
	buf             []byte
	restarts        []uint32
	counter         int
	nEntries        int
	lastKey         []byte
}

func (w *blockWriter) reset() {
	w.buf = w.buf[:0]
	w.restarts = w.restarts[:0]
	w.counter = 0
	w.nEntries = 0
	w.lastKey = w.lastKey[:0]
}

func (w *blockWriter) empty() bool { return w.nEntries == 0 }

// estimatedSize is the size of the block if finished now.
func (w *blockWriter) estimatedSize() int {
	n := len(w.restarts)
	if n == 0 {
		n = 1
	}
	return len(w.buf) + 4*n + 4
}

// sizeAfter estimates the finished size after adding key and value.
func (w *blockWriter) sizeAfter(key, value []byte) int {
	s := w.estimatedSize() + len(key) + len(value) + 3*binary.MaxVarintLen32/2
	if w.counter >= w.restartInterval {
		s += 4
	}
	return s
}

func (w *blockWriter) add(key, value []byte) {
	shared := 0
	if w.counter >= w.restartInterval || w.nEntries == 0 {
		w.restarts = append(w.restarts, uint32(len(w.buf)))
		w.counter = 0
	} else {
		shared = base.SharedPrefixLen(key, w.lastKey)
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(shared))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(key)-shared))
	if !w.noValueLen {
		w.buf = binary.AppendUvarint(w.buf, uint64(len(value)))
	}
	w.buf = append(w.buf, key[shared:]...)
	w.buf = append(w.buf, value...)
	w.lastKey = append(w.lastKey[:0], key...)
	w.counter++
	w.nEntries++
}

// finish appends the restart array and footer and returns the block. The
// slice stays valid until the next reset.
func (w *blockWriter) finish() []byte {
	if len(w.restarts) == 0 {
		w.restarts = append(w.restarts, 0)
	}
	for _, r := range w.restarts {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, r)
	}
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(w.restarts)))
	return w.buf
}

// propertiesRestartInterval gives the properties block a single restart.
const propertiesRestartInterval = math.MaxInt32
