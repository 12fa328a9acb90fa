package record

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/base"
)

// writeLog frames recs into a log image.
func writeLog(t testing.TB, recs [][]byte) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf, 7)
	var off int64
	for _, r := range recs {
		var err error
		off, err = w.WriteRecord(r)
		require.NoError(t, err)
		require.Equal(t, off, w.Size())
	}
	require.NoError(t, w.Flush())
	require.Equal(t, off, int64(buf.Len()))
	return buf.Bytes()
}

// readAll reads every record of log; it returns the records (copied) and the
// error that ended the log.
func readAll(log []byte, num uint64) ([][]byte, error) {
	r := NewReader(bytes.NewReader(log), num, "test.log")
	var recs [][]byte
	for {
		rec, err := r.Next()
		if err != nil {
			return recs, err
		}
		recs = append(recs, append([]byte(nil), rec...))
	}
}

func randRecords(rng *rand.Rand, n int) [][]byte {
	recs := make([][]byte, n)
	for i := range recs {
		var size int
		switch rng.Intn(4) {
		case 0:
			size = rng.Intn(16)
		case 1:
			size = rng.Intn(2 * BlockSize)
		case 2:
			size = BlockSize - HeaderSize + rng.Intn(3) - 1
		default:
			size = rng.Intn(3 * BlockSize)
		}
		recs[i] = make([]byte, size)
		rng.Read(recs[i])
	}
	return recs
}

func TestRecord_RoundTrip(t *testing.T) {
	seed := int64(1)
	rng := rand.New(rand.NewSource(seed))
	for iter := 0; iter < 20; iter++ {
		recs := randRecords(rng, 1+rng.Intn(20))
		log := writeLog(t, recs)
		got, err := readAll(log, 7)
		require.ErrorIs(t, err, io.EOF, "seed %d", seed)
		require.Equal(t, len(recs), len(got))
		for i := range recs {
			require.True(t, bytes.Equal(recs[i], got[i]), "record %d", i)
		}
	}
}

func TestRecord_BlockTrailerPadding(t *testing.T) {
	// A record that leaves 1..6 bytes in the block forces zero padding.
	for pad := 0; pad < HeaderSize; pad++ {
		first := make([]byte, BlockSize-HeaderSize-pad)
		log := writeLog(t, [][]byte{first, []byte("next"), {}})
		got, err := readAll(log, 7)
		require.ErrorIs(t, err, io.EOF)
		require.Len(t, got, 3)
		require.Equal(t, "next", string(got[1]))
		require.Empty(t, got[2])
	}
}

func TestWriter_FlushInGroups(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 1)
	_, err := w.WriteRecord([]byte("a"))
	require.NoError(t, err)
	require.Equal(t, 0, buf.Len())
	require.Equal(t, HeaderSize+1, w.Buffered())
	require.NoError(t, w.Flush())
	_, err = w.WriteRecord([]byte("bc"))
	require.NoError(t, err)
	require.NoError(t, w.Flush())
	got, err := readAll(buf.Bytes(), 1)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, [][]byte{[]byte("a"), []byte("bc")}, got)
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestWriter_StickyError(t *testing.T) {
	w := NewWriter(failWriter{}, 3)
	_, err := w.WriteRecord([]byte("x"))
	require.NoError(t, err)
	require.Error(t, w.Flush())
	_, err = w.WriteRecord([]byte("y"))
	require.Error(t, err)
}

// dumpRecords parses `ldb dump_wal --header` output into (offset, size).
func dumpRecords(t *testing.T, path string) [][2]int64 {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out [][2]int64
	for _, line := range strings.Split(string(data), "\n")[1:] {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, ",", 5)
		size, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err)
		off, err := strconv.ParseInt(f[3], 10, 64)
		require.NoError(t, err)
		out = append(out, [2]int64{off, size})
	}
	return out
}

func TestReader_RocksDBFixtures(t *testing.T) {
	for _, name := range []string{"wal-only-batches", "wal-fragmented", "ldb-tiny-000024"} {
		t.Run(name, func(t *testing.T) {
			log, err := os.ReadFile("testdata/" + name + ".log")
			require.NoError(t, err)
			want := dumpRecords(t, "testdata/"+name+".dump_wal.txt")
			r := NewReader(bytes.NewReader(log), 4, name)
			for i, w := range want {
				rec, err := r.Next()
				require.NoError(t, err, "record %d", i)
				require.Equal(t, w[1], int64(len(rec)), "record %d size", i)
				require.Equal(t, w[0], r.Offset(), "record %d offset", i)
			}
			_, err = r.Next()
			require.ErrorIs(t, err, io.EOF)
		})
	}
}

// smallLog is a log with a fragmented record and a few small ones.
func smallLog(t testing.TB) ([][]byte, []byte) {
	rng := rand.New(rand.NewSource(2))
	recs := [][]byte{make([]byte, 40), make([]byte, BlockSize+100), {}, make([]byte, 10)}
	for _, r := range recs {
		rng.Read(r)
	}
	return recs, writeLog(t, recs)
}

// interior reports whether offset i of a smallLog image lies inside the big
// payload, away from headers and block boundaries; tests sample those.
func interior(i, n int) bool {
	return i > 600 && i < n-600 && (i < BlockSize-64 || i > BlockSize+64)
}

func TestReader_TornTailAtEveryTruncation(t *testing.T) {
	recs, log := smallLog(t)
	// ends[i] is the log size after record i.
	var ends []int
	{
		var buf bytes.Buffer
		w := NewWriter(&buf, 7)
		for _, r := range recs {
			off, _ := w.WriteRecord(r)
			ends = append(ends, int(off))
		}
	}
	for n := 0; n <= len(log); n++ {
		if interior(n, len(log)) && n%97 != 0 {
			continue
		}
		got, err := readAll(log[:n], 7)
		complete := 0
		for complete < len(ends) && ends[complete] <= n {
			complete++
		}
		require.Equal(t, complete, len(got), "truncated at %d", n)
		for i := range got {
			require.True(t, bytes.Equal(recs[i], got[i]))
		}
		prev := 0
		if complete > 0 {
			prev = ends[complete-1]
		}
		if prev == n || allZero(log[prev:n]) {
			require.ErrorIs(t, err, io.EOF, "truncated at %d", n)
		} else {
			require.ErrorIs(t, err, ErrTornTail, "truncated at %d", n)
			require.False(t, errors.Is(err, base.ErrCorruption))
		}
	}
}

func TestReader_CorruptionAtEveryByte(t *testing.T) {
	recs, log := smallLog(t)
	damaged := make([]byte, len(log))
	for i := 0; i < len(log); i++ {
		if interior(i, len(log)) && i%211 != 0 {
			continue // payload interior: sample it
		}
		for _, flip := range []byte{0x01, 0xff} {
			copy(damaged, log)
			damaged[i] ^= flip
			got, err := readAll(damaged, 7)
			require.Error(t, err)
			for j := range got {
				require.True(t, bytes.Equal(recs[j], got[j]), "byte %d flip %#x: record %d", i, flip, j)
			}
			if errors.Is(err, base.ErrCorruption) {
				require.Contains(t, err.Error(), "test.log")
				continue
			}
			// Otherwise the damage must look like a clean or torn end, and
			// only the records before it may be returned.
			require.True(t, errors.Is(err, io.EOF) || errors.Is(err, ErrTornTail),
				"byte %d flip %#x: %v", i, flip, err)
			require.Less(t, len(got), len(recs), "byte %d flip %#x undetected", i, flip)
		}
	}
}

func TestReader_ZeroedTail(t *testing.T) {
	log := writeLog(t, [][]byte{[]byte("hello"), []byte("world")})
	for _, extra := range []int{3, 7, 100, BlockSize} {
		padded := append(append([]byte(nil), log...), make([]byte, extra)...)
		got, err := readAll(padded, 7)
		require.ErrorIs(t, err, io.EOF)
		require.Len(t, got, 2)
	}
}

// recyclable builds a recyclable fragment.
func recyclable(typ byte, logNum uint32, payload []byte) []byte {
	var hdr [RecyclableHeaderSize]byte
	binary.LittleEndian.PutUint32(hdr[7:], logNum)
	binary.LittleEndian.PutUint32(hdr[0:4], fragmentCRC(typ, hdr[7:11], payload))
	binary.LittleEndian.PutUint16(hdr[4:6], uint16(len(payload)))
	hdr[6] = typ
	return append(hdr[:], payload...)
}

func TestReader_Recyclable(t *testing.T) {
	var log []byte
	log = append(log, recyclable(recyclableFull, 9, []byte("one"))...)
	log = append(log, recyclable(recyclableFirst, 9, []byte("tw"))...)
	log = append(log, recyclable(recyclableLast, 9, []byte("o"))...)
	log = append(log, recyclable(recyclableFull, 3, []byte("old life"))...)
	got, err := readAll(log, 9)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, [][]byte{[]byte("one"), []byte("two")}, got)

	// A foreign fragment in the middle of a record: the record is torn.
	log = append(recyclable(recyclableFirst, 9, []byte("a")), recyclable(recyclableLast, 8, []byte("b"))...)
	_, err = readAll(log, 9)
	require.ErrorIs(t, err, ErrTornTail)
}

func TestReader_BadFragments(t *testing.T) {
	frag := func(typ byte, payload string) []byte {
		var hdr [HeaderSize]byte
		binary.LittleEndian.PutUint32(hdr[0:4], fragmentCRC(typ, nil, []byte(payload)))
		binary.LittleEndian.PutUint16(hdr[4:6], uint16(len(payload)))
		hdr[6] = typ
		return append(hdr[:], payload...)
	}
	cases := map[string][]byte{
		"middle without first": frag(middleType, "x"),
		"last without first":   frag(lastType, "x"),
		"full inside":          append(frag(firstType, "x"), frag(fullType, "y")...),
		"first inside":         append(frag(firstType, "x"), frag(firstType, "y")...),
		"zero type with data":  frag(zeroType, "x"),
	}
	for name, log := range cases {
		_, err := readAll(log, 1)
		// cockroachdb/errors marks are seen by its errors.Is, not by the
		// standard library's (which require.ErrorIs uses).
		require.True(t, errors.Is(err, base.ErrCorruption), "%s: %v", name, err)
	}
	_, err := readAll(frag(setCompression, "\x07\x00\x00\x00"), 1)
	require.Error(t, err)
	require.Contains(t, err.Error(), "compressed")
}

func BenchmarkWriter_WriteRecord(b *testing.B) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 1)
	rec := make([]byte, 200)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_, _ = w.WriteRecord(rec)
		_ = w.Flush()
		buf.Reset()
	}
}

// headerOffsets returns the file offsets of every fragment header of log.
func headerOffsets(log []byte) []int {
	var offs []int
	for blk := 0; blk < len(log); blk += BlockSize {
		end := min(blk+BlockSize, len(log))
		for off := blk; end-off >= HeaderSize; {
			offs = append(offs, off)
			off += HeaderSize + int(binary.LittleEndian.Uint16(log[off+4:off+6]))
		}
	}
	return offs
}

// TestReader_HeaderDamageIsCorruption: one damaged byte in any fragment
// header, the last one included, is corruption, never a torn tail or a
// clean end that silently drops the records after it. (A flipped length
// used to make the rest of the last block look like a torn write.)
func TestReader_HeaderDamageIsCorruption(t *testing.T) {
	logs := map[string][]byte{}
	_, logs["small"] = smallLog(t)
	logs["short records"] = writeLog(t, [][]byte{[]byte("a"), {}, bytes.Repeat([]byte("b"), 300), []byte("c"), {}})
	logs["long last record"] = writeLog(t, [][]byte{[]byte("a"), bytes.Repeat([]byte("z"), 1000)})
	for name, log := range logs {
		offs := headerOffsets(log)
		require.NotEmpty(t, offs)
		damaged := make([]byte, len(log))
		for _, h := range offs {
			for i := h; i < h+HeaderSize; i++ {
				for _, flip := range []byte{0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff, 0x55} {
					copy(damaged, log)
					damaged[i] ^= flip
					_, err := readAll(damaged, 7)
					require.True(t, errors.Is(err, base.ErrCorruption),
						"%s: byte %d (header at %d) ^%#x: %v", name, i, h, flip, err)
				}
			}
		}
	}
}

// TestReader_TornLastRecordStaysTorn: a record cut at any length after its
// header is a torn tail, not corruption, even though the reader now checks
// whether the header is damaged.
func TestReader_TornLastRecordStaysTorn(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	last := make([]byte, 3000)
	rng.Read(last)
	log := writeLog(t, [][]byte{[]byte("first"), last})
	start := headerOffsets(log)[1]
	for n := start + 1; n < len(log); n++ {
		got, err := readAll(log[:n], 7)
		require.ErrorIs(t, err, ErrTornTail, "cut at %d", n)
		require.False(t, errors.Is(err, base.ErrCorruption), "cut at %d", n)
		require.Len(t, got, 1)
	}
}
