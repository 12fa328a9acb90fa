package record

import (
	"encoding/binary"
	"io"

	"github.com/cockroachdb/errors"
)

// Writer appends logical records to a log. It frames records into an
// internal buffer; Flush hands the buffered bytes to the underlying writer in
// one Write. A group commit therefore costs one WriteRecord per logical
// record (or one for a batch concatenated from many) and one Flush, and the
// buffer's capacity is reused from one group to the next.
//
// Invariants: size == flushed + len(buf); blockOff == size % BlockSize.
// After an error from the underlying writer the Writer is broken: every later
// call returns that error (the bytes on disk are unknown, so appending more
// could hide a hole).
//
// A Writer is not safe for concurrent use.
type Writer struct {
	w io.Writer
	// logNum is the number of the file; recyclable headers carry its low
	// 32 bits.
	logNum uint64
	// hsize is HeaderSize, or RecyclableHeaderSize for a Writer that
	// emits the recyclable types.
	hsize int
	// buf holds framed bytes not yet written to w.
	buf []byte
	// blockOff is the offset within the current block of the next byte.
	blockOff int
	// flushed is the number of bytes handed to w.
	flushed int64
	err     error
	// hdrs are the offsets in buf of the fragment headers, for a
	// FramedWriter.
	hdrs []int
}

// FramedWriter is implemented by writers that place the bytes of a flush
// themselves and want to know where its fragment headers are (offsets in p,
// each HeaderSize bytes, in increasing order): the mapped WAL writes every
// header after the bytes it frames, so that a process killed during the
// copy leaves complete fragments followed by a zero header, never a
// fragment whose checksum fails (vfs.MappedCreator). WriteFramed may
// change p while it runs (the mapped WAL blanks the headers of a flush it
// pwrites) but gives it back unchanged.
type FramedWriter interface {
	WriteFramed(p []byte, headers []int) (int, error)
}

// SyncWriter is implemented by writers that can write p after what they
// hold and make p durable in one call (vfs: pwritev2 with RWF_DSYNC, on
// Linux). Only the bytes of p are made durable, not earlier ones.
// supported is false, with nothing written, when the call is not available
// for this file; the caller then writes and syncs the usual way.
type SyncWriter interface {
	WriteSync(p []byte) (n int, supported bool, err error)
}

// NewWriter returns a Writer that appends to w, which must be positioned at
// offset 0 of a new log file numbered logNumber.
func NewWriter(w io.Writer, logNumber uint64) *Writer {
	return &Writer{w: w, logNum: logNumber, hsize: HeaderSize}
}

// NewRecyclableWriter returns a Writer that emits the recyclable fragment
// types (5-8), whose headers carry the low 32 bits of logNumber, as
// RocksDB's log::Writer does with recycle_log_file_num set. w is positioned
// at offset 0 of the file, which may hold the bytes of a previous log past
// what is written: a reader ends the log at the first fragment of another
// log number. The bytes go to w with Write even when w is a FramedWriter:
// FramedWriter's contract is the 7-byte header.
func NewRecyclableWriter(w io.Writer, logNumber uint64) *Writer {
	return &Writer{w: w, logNum: logNumber, hsize: RecyclableHeaderSize}
}

var zeros [RecyclableHeaderSize]byte

// maxRetainedBuf bounds the buffer capacity kept across Flushes.
const maxRetainedBuf = 4 << 20

// WriteRecord frames p as one logical record into the buffer and returns the
// log's size after it (the offset at which the next record starts). p may be
// reused once WriteRecord returns. Nothing reaches the underlying writer
// before Flush.
func (w *Writer) WriteRecord(p []byte) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	first := true
	for {
		if left := BlockSize - w.blockOff; left < w.hsize {
			// Too small for a header: pad the block trailer with zeros.
			// (A recyclable log's trailer can be 7 to 10 bytes long;
			// RocksDB's reader, and ours, skip it as a zero header.)
			w.buf = append(w.buf, zeros[:left]...)
			w.blockOff = 0
		}
		avail := BlockSize - w.blockOff - w.hsize
		n := len(p)
		last := n <= avail
		if !last {
			n = avail
		}
		var typ byte
		switch {
		case first && last:
			typ = fullType
		case first:
			typ = firstType
		case last:
			typ = lastType
		default:
			typ = middleType
		}
		if w.hsize == RecyclableHeaderSize {
			typ += recyclableFull - fullType
		}
		w.emit(typ, p[:n])
		p = p[n:]
		first = false
		if last {
			return w.Size(), nil
		}
	}
}

// emit appends one fragment to the buffer.
func (w *Writer) emit(typ byte, payload []byte) {
	// The header is framed in place in buf (a local array would escape
	// to the heap once its log number is passed to the checksum).
	start := len(w.buf)
	w.hdrs = append(w.hdrs, start)
	w.buf = append(w.buf, zeros[:w.hsize]...)
	w.buf = append(w.buf, payload...)
	h := w.buf[start : start+w.hsize]
	binary.LittleEndian.PutUint16(h[4:6], uint16(len(payload)))
	h[6] = typ
	if w.hsize == RecyclableHeaderSize {
		binary.LittleEndian.PutUint32(h[HeaderSize:], uint32(w.logNum))
	}
	binary.LittleEndian.PutUint32(h[0:4], fragmentCRC(typ, h[HeaderSize:], payload))
	w.blockOff += w.hsize + len(payload)
}

// Flush writes the buffered bytes to the underlying writer. It does not sync.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	var n int
	var err error
	if fw, ok := w.w.(FramedWriter); ok && w.hsize == HeaderSize {
		n, err = fw.WriteFramed(w.buf, w.hdrs)
	} else {
		n, err = w.w.Write(w.buf)
	}
	if err == nil && n != len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = errors.Wrapf(err, "strata: record: writing log %06d", w.logNum)
		return w.err
	}
	w.flushed += int64(n)
	w.buf = w.buf[:0]
	w.hdrs = w.hdrs[:0]
	if cap(w.buf) > maxRetainedBuf {
		// Do not pin the memory of one huge record forever.
		w.buf = nil
	}
	return nil
}

// FlushSync is Flush for a caller that wants the flushed bytes durable and
// knows every byte flushed before is durable already: when the underlying
// writer is a SyncWriter that supports it, the buffered bytes are written
// and made durable in one call and synced is true. Otherwise (no SyncWriter,
// the call unsupported, or a FramedWriter, whose bytes must go through
// WriteFramed) it is Flush, and synced is false: the caller syncs. An error
// breaks the Writer, as Flush's does; the bytes are then neither known
// written nor known durable.
func (w *Writer) FlushSync() (synced bool, err error) {
	if w.err != nil {
		return false, w.err
	}
	if len(w.buf) == 0 {
		return false, nil
	}
	sw, ok := w.w.(SyncWriter)
	if !ok {
		return false, w.Flush()
	}
	if _, framed := w.w.(FramedWriter); framed && w.hsize == HeaderSize {
		return false, w.Flush()
	}
	n, supported, err := sw.WriteSync(w.buf)
	if !supported && err == nil {
		return false, w.Flush()
	}
	if err == nil && n != len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = errors.Wrapf(err, "strata: record: writing and syncing log %06d", w.logNum)
		return false, w.err
	}
	w.flushed += int64(n)
	w.buf = w.buf[:0]
	w.hdrs = w.hdrs[:0]
	if cap(w.buf) > maxRetainedBuf {
		w.buf = nil
	}
	return true, nil
}

// Size returns the size of the log including buffered, unflushed bytes.
func (w *Writer) Size() int64 { return w.flushed + int64(len(w.buf)) }

// Buffered returns the number of bytes waiting for Flush.
func (w *Writer) Buffered() int { return len(w.buf) }
