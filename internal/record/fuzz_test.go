package record

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/base"
)

// FuzzReader reads arbitrary bytes as a log. `go test` replays the seeds and
// testdata/fuzz/FuzzReader; run it with
//
//	go test ./internal/record -run '^$' -fuzz '^FuzzReader$' -fuzztime 60s -fuzzminimizetime=1s -parallel=1
//
// The log ends with io.EOF, ErrTornTail, an ErrCorruption-class error or
// the unsupported-compression error, never a panic; records start at
// increasing offsets inside the log; the records read before that end,
// written again by our Writer, read back identically to a clean io.EOF.
func FuzzReader(f *testing.F) {
	f.Add(writeLog(f, [][]byte{[]byte("hello"), nil, []byte("world")}), uint32(7))
	f.Add(writeLog(f, [][]byte{bytes.Repeat([]byte("x"), BlockSize+100), []byte("tail")}), uint32(7))
	for _, name := range []string{"ldb-tiny-000024.log", "wal-only-batches.log"} {
		b, err := os.ReadFile("testdata/" + name)
		require.NoError(f, err)
		f.Add(b, uint32(24))
	}
	// A recyclable FULL fragment of log 3, and a zero header.
	rec := []byte{0, 0, 0, 0, 2, 0, recyclableFull, 3, 0, 0, 0, 'h', 'i'}
	putCRC(rec, recyclableFull, rec[7:11], rec[11:])
	f.Add(rec, uint32(3))
	f.Add(make([]byte, 2*HeaderSize), uint32(0))
	f.Fuzz(func(t *testing.T, log []byte, num uint32) {
		r := NewReader(bytes.NewReader(log), uint64(num), "fuzz.log")
		var recs [][]byte
		var err error
		prev := int64(-1)
		for {
			var rec []byte
			if rec, err = r.Next(); err != nil {
				break
			}
			// Each record starts after the previous one, inside the log.
			require.Greater(t, r.Offset(), prev)
			require.LessOrEqual(t, r.Offset()+HeaderSize, int64(len(log)))
			prev = r.Offset()
			recs = append(recs, bytes.Clone(rec))
		}
		switch {
		case err == io.EOF, errors.Is(err, ErrTornTail), errors.Is(err, base.ErrCorruption):
		case strings.Contains(err.Error(), "compressed logs are not supported"):
		default:
			t.Fatalf("unexpected error class: %v", err)
		}
		again, err := readAll(writeLog(t, recs), 7)
		require.Equal(t, io.EOF, err)
		require.Equal(t, len(recs), len(again))
		for i := range recs {
			require.True(t, bytes.Equal(recs[i], again[i]), "record %d differs after a rewrite", i)
		}
	})
}

// putCRC stores the checksum of a fragment of type typ into hdr[0:4].
func putCRC(hdr []byte, typ byte, extra, payload []byte) {
	c := fragmentCRC(typ, extra, payload)
	hdr[0], hdr[1], hdr[2], hdr[3] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
}
