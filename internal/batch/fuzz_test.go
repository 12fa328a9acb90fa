package batch

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/record"
)

// FuzzReader decodes arbitrary bytes as a WriteBatch. `go test` replays the
// seeds and testdata/fuzz/FuzzReader; run it with
//
//	go test ./internal/batch -run '^$' -fuzz '^FuzzReader$' -fuzztime 60s -fuzzminimizetime=1s -parallel=1
//
// Read with NextCF, a batch either fails with ErrCorruption or
// ErrUnsupportedRecord, or decodes to exactly Count() records with
// consecutive sequence numbers from the header's, which Validate accepts and
// which, built again with the Batch *CF writers, decode identically. Next
// agrees with NextCF on a batch of family 0 only and refuses any other with
// ErrUnsupportedColumnFamily; SetData's MultiFamily tells which.
func FuzzReader(f *testing.F) {
	var b Batch
	b.SetSeq(100)
	b.Put([]byte("a"), []byte("1"))
	b.PutLogData([]byte("blob"))
	b.Delete([]byte("b"))
	b.SingleDelete([]byte("c"))
	b.DeleteRange([]byte("d"), []byte("f"))
	b.Merge([]byte("g"), []byte("+"))
	f.Add(bytes.Clone(b.Data()))
	// Column-family forms (family 0 and 1) and a Noop.
	hdr := binary.LittleEndian.AppendUint64(nil, 7)
	f.Add(append(binary.LittleEndian.AppendUint32(bytes.Clone(hdr), 2),
		tagCFPut, 0, 1, 'k', 1, 'v', tagNoop, tagCFDelete, 1, 1, 'k'))
	f.Add(append(binary.LittleEndian.AppendUint32(bytes.Clone(hdr), 1), tagCFRangeDelete, 0, 1, 'a', 1, 'b'))
	// Every column-family form, with ids that take one to five varint bytes.
	b.Reset()
	b.SetSeq(9)
	b.PutCF(1, []byte("a"), []byte("1"))
	b.DeleteCF(127, []byte("b"))
	b.SingleDeleteCF(128, []byte("c"))
	b.DeleteRangeCF(1<<14, []byte("d"), []byte("f"))
	b.MergeCF(1<<32-1, []byte("g"), []byte("+"))
	b.PutCF(0, []byte("h"), []byte("2"))
	f.Add(bytes.Clone(b.Data()))
	// A column family id too large for 32 bits.
	f.Add(append(binary.LittleEndian.AppendUint32(bytes.Clone(hdr), 1), tagCFDelete, 0x80, 0x80, 0x80, 0x80, 0x10, 1, 'k'))
	// Sequence numbers at the top of the range: the first fits, the second
	// would not.
	b.Reset()
	b.SetSeq(base.MaxSeqNum - 1)
	b.Put([]byte("a"), []byte("1"))
	b.Delete([]byte("b"))
	f.Add(bytes.Clone(b.Data()))
	b.SetSeq(base.MaxSeqNum)
	f.Add(bytes.Clone(b.Data()))
	for _, name := range []string{"ldb-tiny-000024.log", "ldb-cf-000011.log", "wal-only-batches.log"} {
		log, err := os.ReadFile("testdata/" + name)
		require.NoError(f, err)
		r := record.NewReader(bytes.NewReader(log), 0, name)
		for i := 0; i < 3; i++ {
			rec, err := r.Next()
			if err != nil {
				break
			}
			f.Add(bytes.Clone(rec))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := readEntriesCF(t, data)
		verr := Validate(data)
		var sb Batch
		serr := sb.SetData(data)
		if err != nil {
			require.True(t, errors.Is(err, base.ErrCorruption) || errors.Is(err, ErrUnsupportedRecord),
				"unexpected error class: %v", err)
			require.Error(t, verr, "Validate accepts a batch the reader rejects")
			require.Error(t, serr, "SetData accepts a batch the reader rejects")
			return
		}
		require.NoError(t, verr)
		require.NoError(t, serr)
		r, _ := NewReader(data)
		require.Equal(t, int(r.Count()), len(got), "records do not match the header count")
		first := base.SeqNum(binary.LittleEndian.Uint64(data))
		var again Batch
		again.SetSeq(first)
		var plain []entry
		multi := false
		for i, e := range got {
			require.Equal(t, first+base.SeqNum(i), e.seq, "record %d", i)
			require.LessOrEqual(t, e.seq, base.MaxSeqNum, "record %d", i)
			multi = multi || e.cf != 0
			plain = append(plain, e.entry)
			switch e.kind {
			case base.KindSet:
				again.PutCF(e.cf, []byte(e.key), []byte(e.value))
			case base.KindDelete:
				again.DeleteCF(e.cf, []byte(e.key))
			case base.KindSingleDelete:
				again.SingleDeleteCF(e.cf, []byte(e.key))
			case base.KindRangeDelete:
				again.DeleteRangeCF(e.cf, []byte(e.key), []byte(e.value))
			case base.KindMerge:
				again.MergeCF(e.cf, []byte(e.key), []byte(e.value))
			default:
				t.Fatalf("record %d: unexpected kind %v", i, e.kind)
			}
		}
		require.Equal(t, multi, sb.MultiFamily())
		require.Equal(t, multi, again.MultiFamily())
		onlyDefault, err := readEntries(t, data)
		if multi {
			require.True(t, errors.Is(err, ErrUnsupportedColumnFamily), "Next on a multi-family batch: %v", err)
		} else {
			require.NoError(t, err)
			require.Equal(t, plain, onlyDefault)
		}
		rebuilt, err := readEntriesCF(t, again.Data())
		require.NoError(t, err)
		if len(got) == 0 {
			require.Empty(t, rebuilt)
		} else {
			require.Equal(t, got, rebuilt)
		}
	})
}

// TestReader_SeqNumOverflow checks that a batch whose records would take
// sequence numbers beyond MaxSeqNum is corrupt: replayed from a WAL it would
// otherwise wrap into small sequence numbers. Found by review while writing FuzzReader.
func TestReader_SeqNumOverflow(t *testing.T) {
	for _, tc := range []struct {
		seq base.SeqNum
		ok  bool
	}{{base.MaxSeqNum - 1, true}, {base.MaxSeqNum, false}, {base.MaxSeqNum + 1, false}, {1<<64 - 1, false}} {
		var b Batch
		b.Put([]byte("a"), []byte("1"))
		b.Delete([]byte("b"))
		b.SetSeq(tc.seq)
		got, err := readEntries(t, b.Data())
		if tc.ok {
			require.NoError(t, err)
			require.Equal(t, base.MaxSeqNum, got[1].seq)
			continue
		}
		require.True(t, errors.Is(err, base.ErrCorruption), "seq %d: %v", tc.seq, err)
		require.Contains(t, err.Error(), "exceeds the largest sequence number")
		require.Error(t, Validate(b.Data()))
	}
	// An empty batch takes no sequence number.
	var b Batch
	b.SetSeq(1<<64 - 1)
	require.NoError(t, Validate(b.Data()))
}
