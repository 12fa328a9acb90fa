package batch

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/base"
)

// TestBatch_ColumnFamilyRoundTrip writes every record kind in families 0
// (the plain form), 1, 127, 128 (the first two-byte varint) and 2^32-1 (the
// largest, five bytes), checks the exact encoding and reads it back.
func TestBatch_ColumnFamilyRoundTrip(t *testing.T) {
	for _, cf := range []uint32{0, 1, 127, 128, 1<<32 - 1} {
		var b Batch
		b.SetSeq(50)
		b.PutCF(cf, []byte("a"), []byte("1"))
		b.DeleteCF(cf, []byte("b"))
		b.SingleDeleteCF(cf, []byte("c"))
		b.DeleteRangeCF(cf, []byte("d"), []byte("f"))
		b.MergeCF(cf, []byte("g"), []byte("+"))
		require.Equal(t, uint32(5), b.Count(), "cf %d", cf)
		require.Equal(t, cf != 0, b.MultiFamily(), "cf %d", cf)
		require.True(t, b.HasRangeDeletion(), "cf %d", cf)

		want := binary.LittleEndian.AppendUint64(nil, 50)
		want = binary.LittleEndian.AppendUint32(want, 5)
		rec := func(plain, cfTag byte, fields ...string) {
			if cf == 0 {
				want = append(want, plain)
			} else {
				want = binary.AppendUvarint(append(want, cfTag), uint64(cf))
			}
			for _, f := range fields {
				want = append(append(want, byte(len(f))), f...)
			}
		}
		rec(tagPut, tagCFPut, "a", "1")
		rec(tagDelete, tagCFDelete, "b")
		rec(tagSingleDelete, tagCFSingleDelete, "c")
		rec(tagRangeDelete, tagCFRangeDelete, "d", "f")
		rec(tagMerge, tagCFMerge, "g", "+")
		require.Equal(t, want, b.Data(), "cf %d", cf)
		if cf == 0 {
			var p Batch
			p.SetSeq(50)
			p.Put([]byte("a"), []byte("1"))
			p.Delete([]byte("b"))
			p.SingleDelete([]byte("c"))
			p.DeleteRange([]byte("d"), []byte("f"))
			p.Merge([]byte("g"), []byte("+"))
			require.Equal(t, p.Data(), b.Data(), "PutCF(0, ...) is Put")
		}

		got, err := readEntriesCF(t, b.Data())
		require.NoError(t, err, "cf %d", cf)
		require.Equal(t, []cfEntry{
			{cf, entry{base.KindSet, "a", "1", 50}},
			{cf, entry{base.KindDelete, "b", "", 51}},
			{cf, entry{base.KindSingleDelete, "c", "", 52}},
			{cf, entry{base.KindRangeDelete, "d", "f", 53}},
			{cf, entry{base.KindMerge, "g", "+", 54}},
		}, got, "cf %d", cf)

		var c Batch
		require.NoError(t, c.SetData(bytes.Clone(b.Data())), "cf %d", cf)
		require.Equal(t, cf != 0, c.MultiFamily(), "cf %d", cf)
		require.True(t, c.HasRangeDeletion(), "cf %d", cf)
	}
}

// TestReader_ColumnFamilyForms: the CF form with id 0 is family 0 for both
// NextCF and Next (RocksDB writers may use it); Next refuses another id,
// naming it and the record's offset, after reading the records before it.
func TestReader_ColumnFamilyForms(t *testing.T) {
	hdr := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint64(nil, 3), 3)
	data := append(bytes.Clone(hdr),
		tagCFPut, 0, 1, 'k', 1, 'v', // offset 12
		tagPut, 1, 'p', 1, 'q', // offset 18
		tagCFMerge, 0x80, 0x01, 1, 'm', 1, '+') // offset 23, family 128
	got, err := readEntriesCF(t, data)
	require.NoError(t, err)
	require.Equal(t, []cfEntry{
		{0, entry{base.KindSet, "k", "v", 3}},
		{0, entry{base.KindSet, "p", "q", 4}},
		{128, entry{base.KindMerge, "m", "+", 5}},
	}, got)

	plain, err := readEntries(t, data)
	require.True(t, errors.Is(err, ErrUnsupportedColumnFamily), "%v", err)
	require.Contains(t, err.Error(), "offset 23: record for column family 128")
	require.Equal(t, []entry{{base.KindSet, "k", "v", 3}, {base.KindSet, "p", "q", 4}}, plain)

	var b Batch
	require.NoError(t, b.SetData(data))
	require.True(t, b.MultiFamily())
	require.NoError(t, b.SetData(withCount(data[:23], 2)))
	require.False(t, b.MultiFamily(), "a CF-form record of family 0 is not another family")
}

// TestReader_BadColumnFamilyID: a truncated, overlong or over-32-bit family
// id is corruption naming the record's offset, for SetData, NextCF and Next.
func TestReader_BadColumnFamilyID(t *testing.T) {
	hdr := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint64(nil, 1), 2)
	prefix := append(bytes.Clone(hdr), tagPut, 1, 'a', 1, 'b') // the bad record is at offset 17
	for name, tail := range map[string][]byte{
		"missing":    {tagCFPut},
		"truncated":  {tagCFDelete, 0x80},
		"truncated5": {tagCFSingleDelete, 0xff, 0xff, 0xff, 0xff},
		"too large":  {tagCFMerge, 0x80, 0x80, 0x80, 0x80, 0x10, 1, 'k', 1, 'v'},
		"overlong":   {tagCFRangeDelete, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 1, 'a', 1, 'b'},
	} {
		data := append(bytes.Clone(prefix), tail...)
		for _, read := range []func() error{
			func() error { _, err := readEntriesCF(t, data); return err },
			func() error { _, err := readEntries(t, data); return err },
			func() error { var b Batch; return b.SetData(data) },
		} {
			err := read()
			require.True(t, errors.Is(err, base.ErrCorruption), "%s: %v", name, err)
			require.Contains(t, err.Error(), "offset 17: bad column family id", name)
		}
	}
}

// TestBatch_MultiFamily: the flag follows the records through the writers,
// Append, SetData and Reset.
func TestBatch_MultiFamily(t *testing.T) {
	var a, b, c Batch
	a.Put([]byte("k"), []byte("v"))
	a.DeleteCF(0, []byte("k"))
	require.False(t, a.MultiFamily())
	b.MergeCF(2, []byte("k"), []byte("m"))
	require.True(t, b.MultiFamily())
	require.False(t, b.HasRangeDeletion())
	require.NoError(t, Append(&c, &a))
	require.False(t, c.MultiFamily())
	require.NoError(t, Append(&c, &b))
	require.True(t, c.MultiFamily())
	require.NoError(t, Append(&c, &a))
	require.True(t, c.MultiFamily(), "stays set")

	var d Batch
	require.NoError(t, d.SetData(bytes.Clone(c.Data())))
	require.True(t, d.MultiFamily())
	require.NoError(t, d.SetData(bytes.Clone(a.Data())))
	require.False(t, d.MultiFamily())
	require.Error(t, d.SetData(c.Data()[:c.Len()-1]))
	require.False(t, d.MultiFamily(), "a failed SetData leaves the batch unchanged")
	c.Reset()
	require.False(t, c.MultiFamily())
	require.True(t, c.Empty())
}

// TestBatch_PutAllocations: the default-family writers and reader allocate
// nothing once the buffer has grown.
func TestBatch_PutAllocations(t *testing.T) {
	var b Batch
	key, value := make([]byte, 16), make([]byte, 100)
	for i := 0; i < 8; i++ {
		b.Put(key, value)
	}
	allocs := testing.AllocsPerRun(100, func() {
		b.Reset()
		for i := 0; i < 8; i++ {
			b.Put(key, value)
			b.PutCF(0, key, value)
			b.PutCF(7, key, value)
		}
		r, _ := NewReader(b.Data())
		for {
			if _, _, _, _, err := r.NextCF(); err != nil {
				break
			}
		}
	})
	require.Zero(t, allocs)
}

// BenchmarkBatch_PutCFAndRead is BenchmarkBatch_PutAndRead for family 7.
func BenchmarkBatch_PutCFAndRead(b *testing.B) {
	var bt Batch
	key, value := make([]byte, 16), make([]byte, 100)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		bt.Reset()
		for j := 0; j < 8; j++ {
			bt.PutCF(7, key, value)
		}
		r, _ := NewReader(bt.Data())
		for {
			if _, _, _, _, err := r.NextCF(); err != nil {
				break
			}
		}
	}
}
