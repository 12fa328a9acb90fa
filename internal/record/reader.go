package record

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
)

// ErrTornTail reports a log that ends inside a logical record: a header or a
// payload cut short by EOF, or a FIRST/MIDDLE fragment with no LAST before
// EOF. A crash during a write leaves exactly this. The Reader returns it
// wrapped with the file name and offset; test with errors.Is.
var ErrTornTail = errors.New("strata: record: torn tail")

// Reader reads the logical records of a log, one at a time.
//
// Invariants: buf[:n] holds the current block, which starts at file offset
// blockStart; off <= n is the read position inside it. n < BlockSize only
// once the underlying reader reached EOF (eof is then true). After Next
// returns an error other than io.EOF the Reader is stuck on that error.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	r        io.Reader
	logNum   uint32
	fileName string

	buf        [BlockSize]byte
	n, off     int
	blockStart int64
	eof        bool

	// rec assembles a fragmented logical record.
	rec []byte
	// recOff is the file offset of the first fragment of the last record.
	recOff int64
	err    error

	// fragStart is the file offset of the fragment nextFragment last
	// returned or stopped at.
	fragStart int64
	// dropBlock: the error in err came from damage inside the current
	// block; Recover drops the rest of the block.
	dropBlock bool
	// zeroEnd: the last io.EOF came from a zero-filled header before the
	// end of the file rather than from the end itself.
	zeroEnd bool
}

// NewReader returns a Reader of the log in r, which must be positioned at
// offset 0 of the file. logNumber is the file's number (recyclable fragments
// of another number end the log); fileName only names the file in errors.
func NewReader(r io.Reader, logNumber uint64, fileName string) *Reader {
	return &Reader{r: r, logNum: uint32(logNumber), fileName: fileName}
}

// physical-record outcomes other than a fragment.
var (
	errEnd  = errors.New("end of log")  // clean end
	errTorn = errors.New("torn record") // cut by EOF
)

// Next returns the next logical record. The slice is valid until the next
// call. At the clean end of the log it returns io.EOF; see the package
// comment for ErrTornTail and corruption.
func (r *Reader) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	inFragment := false
	r.rec = r.rec[:0]
	for {
		typ, payload, err := r.nextFragment()
		fragOff := r.fragStart
		if err != nil {
			r.err = r.endError(err, inFragment, fragOff)
			return nil, r.err
		}
		switch typ {
		case fullType, recyclableFull:
			if inFragment {
				// Leave the fragment unread: after Recover it starts
				// the next record.
				r.off = int(fragOff - r.blockStart)
				return nil, r.corrupt(fragOff, "FULL fragment inside a fragmented record")
			}
			r.recOff = fragOff
			return payload, nil
		case firstType, recyclableFirst:
			if inFragment {
				r.off = int(fragOff - r.blockStart)
				return nil, r.corrupt(fragOff, "FIRST fragment inside a fragmented record")
			}
			inFragment = true
			r.recOff = fragOff
			r.rec = append(r.rec, payload...)
		case middleType, recyclableMid:
			if !inFragment {
				return nil, r.corrupt(fragOff, "MIDDLE fragment without FIRST")
			}
			r.rec = append(r.rec, payload...)
		case lastType, recyclableLast:
			if !inFragment {
				return nil, r.corrupt(fragOff, "LAST fragment without FIRST")
			}
			r.rec = append(r.rec, payload...)
			return r.rec, nil
		case setCompression:
			r.err = errors.Newf("strata: record: %s: offset %d: compressed logs are not supported",
				r.fileName, fragOff)
			return nil, r.err
		default:
			return nil, r.corrupt(fragOff, "unknown fragment type %d", typ)
		}
	}
}

// Offset returns the file offset of the first fragment of the record last
// returned by Next.
func (r *Reader) Offset() int64 { return r.recOff }

// Recover clears the error Next returned so that reading can go on past
// damage, as RocksDB's kSkipAnyCorruptedRecords does: after a damaged
// fragment (bad checksum, length or type) or a zero-filled header the rest
// of its block is dropped and reading resumes at the next block; after
// fragments out of order it resumes at the next fragment, so a record
// whose FIRST fragment is lost costs only that record. A fragmented record
// cut by the damage is dropped. I/O errors stay: Recover does nothing then.
// After Recover at the true end of the log, Next returns io.EOF again.
func (r *Reader) Recover() {
	if r.err == nil {
		return
	}
	if r.err != io.EOF && !errors.Is(r.err, ErrTornTail) && !errors.Is(r.err, base.ErrCorruption) {
		return // an I/O error or an unsupported feature
	}
	if r.dropBlock || r.zeroEnd {
		r.off = r.n
	}
	r.err = nil
	r.dropBlock = false
	r.zeroEnd = false
}

// ZeroEnd reports whether the io.EOF Next last returned came from a
// zero-filled header rather than from the end of the file, and the header's
// file offset: preallocated space, or a zeroed region with records after
// it. Calling Recover and Next again tells the two apart.
func (r *Reader) ZeroEnd() (offset int64, ok bool) {
	return r.fragStart, r.err == io.EOF && r.zeroEnd
}

// endError maps an outcome of nextFragment to Next's error.
func (r *Reader) endError(err error, inFragment bool, off int64) error {
	switch {
	case err == errEnd && !inFragment:
		return io.EOF
	case err == errEnd || err == errTorn:
		return errors.Wrapf(ErrTornTail, "strata: record: %s: offset %d", r.fileName, off)
	}
	return err
}

func (r *Reader) corrupt(off int64, format string, args ...interface{}) error {
	r.err = base.CorruptionErrorf("record: %s: offset %d: %s", r.fileName, off,
		fmt.Sprintf(format, args...))
	return r.err
}

// readBlock loads the next block.
func (r *Reader) readBlock() error {
	r.blockStart += int64(r.n)
	r.off = 0
	n, err := io.ReadFull(r.r, r.buf[:])
	r.n = n
	switch err {
	case nil:
	case io.EOF, io.ErrUnexpectedEOF:
		r.eof = true
	default:
		r.n = 0
		return errors.Wrapf(err, "strata: record: reading %s at offset %d", r.fileName, r.blockStart)
	}
	return nil
}

// nextFragment returns the next physical record, or errEnd, errTorn, a
// corruption error or an I/O error.
func (r *Reader) nextFragment() (typ byte, payload []byte, err error) {
	r.dropBlock, r.zeroEnd = false, false
	for {
		left := r.n - r.off
		r.fragStart = r.blockStart + int64(r.off)
		if left < HeaderSize {
			if !r.eof {
				// A full block's trailer (or the start): move on.
				if err := r.readBlock(); err != nil {
					return 0, nil, err
				}
				continue
			}
			rest := r.buf[r.off:r.n]
			r.off = r.n
			if allZero(rest) {
				return 0, nil, errEnd
			}
			return 0, nil, errTorn
		}
		hdr := r.buf[r.off:r.n]
		typ = hdr[6]
		length := int(binary.LittleEndian.Uint16(hdr[4:6]))
		if typ == zeroType && length == 0 && binary.LittleEndian.Uint32(hdr[0:4]) == 0 {
			// Preallocated or zero-filled space: the log ends here. (A
			// header with only its type and length zero is damage: the
			// checksum check below reports it.)
			r.zeroEnd = true
			r.dropBlock = true
			return 0, nil, errEnd
		}
		hsize := HeaderSize
		if typ >= recyclableFull && typ <= recyclableLast {
			hsize = RecyclableHeaderSize
		}
		if hsize+length > left {
			if r.eof {
				if misframed(hdr) {
					// The fragment is whole: a damaged header, not a
					// write cut short by a crash.
					r.dropBlock = true
					return 0, nil, r.corrupt(r.blockStart+int64(r.off),
						"fragment length %d or type %d damaged (a complete fragment follows the header)", length, typ)
				}
				r.dropBlock = true
				return 0, nil, errTorn
			}
			r.dropBlock = true
			return 0, nil, r.corrupt(r.blockStart+int64(r.off),
				"fragment length %d overruns the block", length)
		}
		extra := hdr[HeaderSize:hsize]
		payload = hdr[hsize : hsize+length]
		want := binary.LittleEndian.Uint32(hdr[0:4])
		if typ > setCompression || fragmentCRC(typ, extra, payload) != want {
			r.dropBlock = true
			if typ > setCompression {
				return 0, nil, r.corrupt(r.blockStart+int64(r.off), "unknown fragment type %d", typ)
			}
			return 0, nil, r.corrupt(r.blockStart+int64(r.off), "checksum mismatch")
		}
		if hsize == RecyclableHeaderSize && binary.LittleEndian.Uint32(extra) != r.logNum {
			// A fragment of a previous life of a recycled file.
			return 0, nil, errEnd
		}
		r.off += hsize + length
		return typ, payload, nil
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// misframed reports whether rest, the unread bytes of the last block from a
// fragment header whose length overruns the end of the file, in fact holds
// a complete fragment whose header has one damaged byte: the checksum
// matches the payload under the recorded type with a length that differs
// in one byte, or under another fragment type with the recorded length.
// A write cut short by a crash holds only a prefix of its payload, so the
// checksum cannot match (but for a 2^-32 chance per candidate, about 520
// candidates). Without this check a flipped length byte would make every
// later record look like a torn tail and be dropped silently.
func misframed(rest []byte) bool {
	if len(rest) < HeaderSize {
		return false
	}
	want := binary.LittleEndian.Uint32(rest[0:4])
	length := int(binary.LittleEndian.Uint16(rest[4:6]))
	typ := rest[6]
	matches := func(t byte, n int) bool {
		hsize := HeaderSize
		if t >= recyclableFull && t <= recyclableLast {
			hsize = RecyclableHeaderSize
		}
		if hsize+n > len(rest) {
			return false
		}
		return fragmentCRC(t, rest[HeaderSize:hsize], rest[hsize:hsize+n]) == want
	}
	for t := byte(fullType); t <= recyclableLast; t++ {
		if t != typ && matches(t, length) {
			return true
		}
	}
	if typ < fullType || typ > recyclableLast {
		return false
	}
	for x := 0; x < 256; x++ {
		if lo := length&0xff00 | x; lo != length && matches(typ, lo) {
			return true
		}
		if hi := length&0x00ff | x<<8; hi != length && matches(typ, hi) {
			return true
		}
	}
	return false
}
