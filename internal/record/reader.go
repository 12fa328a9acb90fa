package record

import (
	"bytes"
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
	r io.Reader
	// ra is r as an io.ReaderAt when it is one: a recycled log's damage
	// is told from its end by looking past it (laterFragment).
	ra       io.ReaderAt
	logNum   uint32
	fileName string
	// recycled: the fragment at offset 0 has a recyclable type, so the
	// file may hold bytes of a previous log past this one's end.
	recycled bool

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
	ra, _ := r.(io.ReaderAt)
	return &Reader{r: r, ra: ra, logNum: uint32(logNumber), fileName: fileName}
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
			if allZero(rest) || r.recycled {
				// (In a recycled log the bytes may be the end of the
				// previous life's; a torn header of this log that
				// short cannot be told from them.)
				return 0, nil, errEnd
			}
			return 0, nil, errTorn
		}
		hdr := r.buf[r.off:r.n]
		typ = hdr[6]
		length := int(binary.LittleEndian.Uint16(hdr[4:6]))
		if r.fragStart == 0 {
			r.recycled = typ >= recyclableFull && typ <= recyclableLast
		}
		if r.recycled && left < RecyclableHeaderSize && allZero(hdr) {
			// The zero-filled trailer of a block of a recyclable log
			// (its writer pads when fewer than 11 bytes remain).
			r.off = r.n
			if r.eof {
				return 0, nil, errEnd
			}
			continue
		}
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
			if left >= hsize && binary.LittleEndian.Uint32(hdr[HeaderSize:hsize]) != r.logNum {
				// A fragment of another log: a previous life of a
				// recycled file, whose bytes follow this log's end
				// (RocksDB's kOldRecord), checked before the length
				// and checksum as RocksDB does. Unless the checksum
				// holds under this log's number or another type: then
				// the header is what is damaged.
				if r.damagedHeader(hdr, length) {
					r.dropBlock = true
					return 0, nil, r.corrupt(r.fragStart, "fragment log number or type %d damaged", typ)
				}
				return 0, nil, errEnd
			}
		}
		if hsize+length > left {
			if r.eof {
				if misframed(hdr) {
					// The fragment is whole: a damaged header, not a
					// write cut short by a crash.
					r.dropBlock = true
					return 0, nil, r.recycledDamage(hdr, "fragment length %d or type %d damaged (a complete fragment follows the header)", length, typ)
				}
				r.dropBlock = true
				if r.recycled && !r.oursHeader(hdr) {
					// The end of the previous life's bytes.
					return 0, nil, errEnd
				}
				return 0, nil, errTorn
			}
			r.dropBlock = true
			return 0, nil, r.recycledDamage(hdr, "fragment length %d overruns the block", length)
		}
		extra := hdr[HeaderSize:hsize]
		payload = hdr[hsize : hsize+length]
		want := binary.LittleEndian.Uint32(hdr[0:4])
		if typ > setCompression || fragmentCRC(typ, extra, payload) != want {
			r.dropBlock = true
			if typ > setCompression {
				return 0, nil, r.recycledDamage(hdr, "unknown fragment type %d", typ)
			}
			return 0, nil, r.recycledDamage(hdr, "checksum mismatch")
		}
		r.off += hsize + length
		return typ, payload, nil
	}
}

// damagedHeader reports whether hdr, a recyclable fragment header that
// records another log's number, is in fact one of this log's fragments (or
// a legacy one) with one damaged field: its checksum holds under this
// log's number with any recyclable type, or as a legacy fragment of the
// recorded length. A stale fragment of the previous life matches with a
// chance of about 2^-32 per candidate.
func (r *Reader) damagedHeader(hdr []byte, length int) bool {
	want := binary.LittleEndian.Uint32(hdr[0:4])
	if HeaderSize+length <= len(hdr) {
		for t := byte(fullType); t <= lastType; t++ {
			if fragmentCRC(t, nil, hdr[HeaderSize:HeaderSize+length]) == want {
				return true
			}
		}
	}
	if RecyclableHeaderSize+length <= len(hdr) {
		var ln [4]byte
		binary.LittleEndian.PutUint32(ln[:], r.logNum)
		for t := byte(recyclableFull); t <= recyclableLast; t++ {
			if fragmentCRC(t, ln[:], hdr[RecyclableHeaderSize:RecyclableHeaderSize+length]) == want {
				return true
			}
		}
	}
	return false
}

// recycledDamage returns the outcome of damage at the fragment at hdr
// (r.fragStart). In a log that is not recycled it is corruption. In a
// recycled one the bytes of the file's previous life follow this log's
// end, and they are damage to a reader that does not know where the end
// is: damage past which the file holds no intact fragment of this log is
// its end. It is a torn write (errTorn: a crash cut a write of this log,
// and the old bytes show through) when the header is this log's (a
// recyclable type or its log number), and the clean end (errEnd) when it
// is not. Damage with an intact fragment of this log after it is
// corruption wherever it is.
func (r *Reader) recycledDamage(hdr []byte, format string, args ...interface{}) error {
	if !r.recycled || r.ra == nil {
		return r.corrupt(r.fragStart, format, args...)
	}
	later, err := r.laterFragment(r.fragStart + 1)
	if err != nil {
		return err
	}
	if later {
		return r.corrupt(r.fragStart, format+" (intact records of this log follow)", args...)
	}
	if r.oursHeader(hdr) {
		return errTorn
	}
	return errEnd
}

// oursHeader reports whether hdr, a damaged or cut fragment header in a
// recycled log, is one of this log's rather than bytes of the previous
// life: it records this log's number (whatever its type byte says).
func (r *Reader) oursHeader(hdr []byte) bool {
	return len(hdr) >= RecyclableHeaderSize && binary.LittleEndian.Uint32(hdr[HeaderSize:RecyclableHeaderSize]) == r.logNum
}

// laterFragment reports whether the file holds, at or after offset from, an
// intact recyclable fragment of this log: a header with this log's number
// and a recyclable type, whose payload fits in its block and matches its
// checksum. Stale bytes of an older log match with a chance of about 2^-32
// per occurrence of the number's four bytes.
func (r *Reader) laterFragment(from int64) (bool, error) {
	var ln [4]byte
	binary.LittleEndian.PutUint32(ln[:], r.logNum)
	const chunk = 4 * BlockSize
	buf := make([]byte, chunk+RecyclableHeaderSize)
	// start is the file offset of buf[0].
	for start := from; ; {
		n, err := r.ra.ReadAt(buf, start)
		if err != nil && err != io.EOF {
			return false, errors.Wrapf(err, "strata: record: reading %s at offset %d", r.fileName, start)
		}
		b := buf[:n]
		for i := HeaderSize; i+4 <= len(b); {
			k := bytes.Index(b[i:], ln[:])
			if k < 0 {
				break
			}
			i += k
			hdrOff := start + int64(i-HeaderSize)
			if ok, err := r.fragmentAt(hdrOff); err != nil {
				return false, err
			} else if ok {
				return true, nil
			}
			i++
		}
		if err == io.EOF || n < len(buf) {
			return false, nil
		}
		start += chunk
	}
}

// fragmentAt reports whether an intact recyclable fragment of this log
// starts at file offset off (see laterFragment).
func (r *Reader) fragmentAt(off int64) (bool, error) {
	var hdr [RecyclableHeaderSize]byte
	if n, err := r.ra.ReadAt(hdr[:], off); n < len(hdr) {
		if err != nil && err != io.EOF {
			return false, errors.Wrapf(err, "strata: record: reading %s at offset %d", r.fileName, off)
		}
		return false, nil
	}
	typ := hdr[6]
	length := int(binary.LittleEndian.Uint16(hdr[4:6]))
	if typ < recyclableFull || typ > recyclableLast || binary.LittleEndian.Uint32(hdr[HeaderSize:]) != r.logNum ||
		int(off%BlockSize)+RecyclableHeaderSize+length > BlockSize {
		return false, nil
	}
	payload := make([]byte, length)
	if n, err := r.ra.ReadAt(payload, off+RecyclableHeaderSize); n < length {
		if err != nil && err != io.EOF {
			return false, errors.Wrapf(err, "strata: record: reading %s at offset %d", r.fileName, off)
		}
		return false, nil
	}
	return fragmentCRC(typ, hdr[HeaderSize:], payload) == binary.LittleEndian.Uint32(hdr[0:4]), nil
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
