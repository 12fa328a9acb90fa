package batch

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/record"
)

type entry struct {
	kind       base.Kind
	key, value string
	seq        base.SeqNum
}

func readEntries(t testing.TB, data []byte) ([]entry, error) {
	r, err := NewReader(data)
	if err != nil {
		return nil, err
	}
	var out []entry
	for {
		kind, key, value, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, entry{kind, string(key), string(value), r.Seq()})
	}
}

type cfEntry struct {
	cf uint32
	entry
}

// readEntriesCF reads data with NextCF.
func readEntriesCF(t testing.TB, data []byte) ([]cfEntry, error) {
	r, err := NewReader(data)
	if err != nil {
		return nil, err
	}
	var out []cfEntry
	for {
		cf, kind, key, value, err := r.NextCF()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, cfEntry{cf, entry{kind, string(key), string(value), r.Seq()}})
	}
}

func TestBatch_RoundTrip(t *testing.T) {
	var b Batch
	require.True(t, b.Empty())
	require.Equal(t, uint32(0), b.Count())
	b.SetSeq(100)
	b.Put([]byte("a"), []byte("1"))
	b.PutLogData([]byte("blob"))
	b.Delete([]byte("b"))
	b.SingleDelete([]byte("c"))
	b.DeleteRange([]byte("d"), []byte("f"))
	b.Merge([]byte("g"), []byte("+"))
	b.Put([]byte(""), []byte(""))
	require.Equal(t, uint32(6), b.Count())
	require.Equal(t, base.SeqNum(100), b.Seq())
	require.Equal(t, len(b.Data()), b.Len())

	got, err := readEntries(t, b.Data())
	require.NoError(t, err)
	require.Equal(t, []entry{
		{base.KindSet, "a", "1", 100},
		{base.KindDelete, "b", "", 101},
		{base.KindSingleDelete, "c", "", 102},
		{base.KindRangeDelete, "d", "f", 103},
		{base.KindMerge, "g", "+", 104},
		{base.KindSet, "", "", 105},
	}, got)

	var c Batch
	require.NoError(t, c.SetData(append([]byte(nil), b.Data()...)))
	require.Equal(t, b.Data(), c.Data())

	b.Reset()
	require.True(t, b.Empty())
	require.Equal(t, uint32(0), b.Count())
	require.Len(t, b.Data(), HeaderLen)
}

func TestBatch_Append(t *testing.T) {
	var a, b Batch
	a.SetSeq(7)
	a.Put([]byte("k1"), []byte("v1"))
	b.SetSeq(99) // ignored by Append
	b.Delete([]byte("k2"))
	b.Merge([]byte("k3"), []byte("m"))
	require.NoError(t, Append(&a, &b))
	require.NoError(t, Append(&a, &Batch{}))
	require.Equal(t, uint32(3), a.Count())
	got, err := readEntries(t, a.Data())
	require.NoError(t, err)
	require.Equal(t, []entry{
		{base.KindSet, "k1", "v1", 7},
		{base.KindDelete, "k2", "", 8},
		{base.KindMerge, "k3", "m", 9},
	}, got)

	// Appending into a fresh batch.
	var empty Batch
	require.NoError(t, Append(&empty, &b))
	require.Equal(t, uint32(2), empty.Count())
}

func TestBatch_SetDataRejectsMalformed(t *testing.T) {
	var good Batch
	good.Put([]byte("key"), []byte("value"))
	good.DeleteRange([]byte("a"), []byte("b"))
	data := good.Data()

	bad := map[string][]byte{
		"short header": data[:HeaderLen-1],
		"truncated":    data[:len(data)-1],
		"count high":   withCount(data, 3),
		"count low":    withCount(data, 1),
		"unknown tag":  append(append([]byte(nil), data...), 0x40),
		"huge length":  append(withCount(data, 3), tagPut, 0xff, 0xff, 0xff, 0xff, 0x0f),
	}
	for name, d := range bad {
		var b Batch
		err := b.SetData(d)
		require.True(t, errors.Is(err, base.ErrCorruption), "%s: %v", name, err)
		require.True(t, b.Empty(), name)
	}
}

func withCount(data []byte, n byte) []byte {
	d := append([]byte(nil), data...)
	d[8] = n
	return d
}

func TestBatch_Unsupported(t *testing.T) {
	hdr := make([]byte, HeaderLen)
	hdr[8] = 1
	cf := append(append([]byte(nil), hdr...), tagCFPut, 0x02, 1, 'k', 1, 'v')
	_, err := readEntries(t, cf)
	require.True(t, errors.Is(err, ErrUnsupportedColumnFamily), "%v", err)
	require.Contains(t, err.Error(), "column family 2")

	cf0 := append(append([]byte(nil), hdr...), tagCFPut, 0x00, 1, 'k', 1, 'v')
	got, err := readEntries(t, cf0)
	require.NoError(t, err)
	require.Equal(t, []entry{{base.KindSet, "k", "v", 0}}, got)

	prep := append(append([]byte(nil), hdr...), 0x09)
	_, err = readEntries(t, prep)
	require.True(t, errors.Is(err, ErrUnsupportedRecord), "%v", err)
}

func TestBatch_DamageNeverPanics(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var b Batch
	for i := 0; i < 20; i++ {
		k := make([]byte, rng.Intn(200))
		rng.Read(k)
		switch i % 4 {
		case 0:
			b.Put(k, k)
		case 1:
			b.Delete(k)
		case 2:
			b.DeleteRange(k, k)
		default:
			b.Merge(k, k)
		}
	}
	data := b.Data()
	for n := 0; n < len(data); n++ {
		require.Error(t, Validate(data[:n]), "truncated at %d", n)
	}
	d := make([]byte, len(data))
	for i := range data {
		for _, flip := range []byte{1, 0x80} {
			copy(d, data)
			d[i] ^= flip
			_, _ = readEntries(t, d) // must not panic
		}
	}
}

// dumpLine formats a batch as `ldb dump_wal --header [--print_value]` does.
func dumpLine(t *testing.T, rec []byte, off int64, values bool) string {
	r, err := NewReader(rec)
	require.NoError(t, err)
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d,%d,%d,%d,", r.first, r.Count(), len(rec), off)
	for {
		kind, key, value, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		require.Equal(t, base.KindSet, kind)
		fmt.Fprintf(&sb, "PUT(0) : 0x%X ", key)
		if values {
			fmt.Fprintf(&sb, ": 0x%X ", value)
		}
	}
	return sb.String()
}

func TestBatch_RocksDBWALFixtures(t *testing.T) {
	for _, name := range []string{"wal-only-batches", "wal-fragmented", "ldb-tiny-000024"} {
		t.Run(name, func(t *testing.T) {
			log, err := os.ReadFile("testdata/" + name + ".log")
			require.NoError(t, err)
			dump, err := os.ReadFile("testdata/" + name + ".dump_wal.txt")
			require.NoError(t, err)
			lines := strings.Split(strings.TrimRight(string(dump), "\n"), "\n")
			values := strings.Contains(lines[0], "value")
			rr := record.NewReader(bytes.NewReader(log), 4, name)
			for i, want := range lines[1:] {
				rec, err := rr.Next()
				require.NoError(t, err)
				var b Batch
				require.NoError(t, b.SetData(rec))
				require.Equal(t, want, dumpLine(t, rec, rr.Offset(), values), "batch %d", i)
			}
			_, err = rr.Next()
			require.Equal(t, io.EOF, err)
		})
	}
}

func TestBatch_RocksDBColumnFamilyFixture(t *testing.T) {
	log, err := os.ReadFile("testdata/ldb-cf-000011.log")
	require.NoError(t, err)
	rr := record.NewReader(bytes.NewReader(log), 11, "000011.log")
	rec, err := rr.Next()
	require.NoError(t, err)
	// SetData accepts it (WAL replay decides per family); Next refuses it,
	// NextCF reads the two puts of family 1 that ldb-cf-000011.dump_wal.txt
	// lists.
	var b Batch
	require.NoError(t, b.SetData(rec))
	require.True(t, b.MultiFamily())
	_, err = readEntries(t, rec)
	require.True(t, errors.Is(err, ErrUnsupportedColumnFamily), "%v", err)
	require.Contains(t, err.Error(), "column family 1")
	got, err := readEntriesCF(t, rec)
	require.NoError(t, err)
	require.Equal(t, []cfEntry{
		{1, entry{base.KindSet, "k1", "v1", 2}},
		{1, entry{base.KindSet, "k2", "v2", 3}},
	}, got)
}

func BenchmarkBatch_PutAndRead(b *testing.B) {
	var bt Batch
	key, value := make([]byte, 16), make([]byte, 100)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		bt.Reset()
		for j := 0; j < 8; j++ {
			bt.Put(key, value)
		}
		r, _ := NewReader(bt.Data())
		for {
			if _, _, _, err := r.Next(); err != nil {
				break
			}
		}
	}
}

// TestBatch_HasRangeDeletion: the flag follows the records through add,
// Append, SetData and Reset.
func TestBatch_HasRangeDeletion(t *testing.T) {
	var a, b, c Batch
	a.Put([]byte("k"), []byte("v"))
	a.Delete([]byte("k"))
	require.False(t, a.HasRangeDeletion())
	b.DeleteRange([]byte("a"), []byte("b"))
	require.True(t, b.HasRangeDeletion())
	require.NoError(t, Append(&c, &a))
	require.False(t, c.HasRangeDeletion())
	require.NoError(t, Append(&c, &b))
	require.True(t, c.HasRangeDeletion())
	var d Batch
	require.NoError(t, d.SetData(append([]byte(nil), c.Data()...)))
	require.True(t, d.HasRangeDeletion())
	require.NoError(t, d.SetData(append([]byte(nil), a.Data()...)))
	require.False(t, d.HasRangeDeletion())
	c.Reset()
	require.False(t, c.HasRangeDeletion())
}
