package table

import (
	"bytes"
	"testing"

	"github.com/stratadb/strata/internal/base"
)

func seedTable(tb testing.TB) []byte {
	model := []kv{
		{base.MakeInternalKey([]byte("apple"), 3, base.KindSet), []byte("red")},
		{base.MakeInternalKey([]byte("banana"), 2, base.KindDelete), nil},
		{base.MakeInternalKey([]byte("cherry"), 1, base.KindMerge), []byte("x")},
	}
	f, _ := buildTable(tb, model, []base.Tombstone{{Start: []byte("d"), End: []byte("e"), Seq: 4}},
		WriterOptions{BlockSize: 32, BloomBitsPerKey: 10, WholeKeyFiltering: true, Compression: SnappyCompression})
	return f.b
}

// FuzzBlockIter feeds arbitrary bytes to the block iterator in each of its
// forms: it must never panic.
func FuzzBlockIter(f *testing.F) {
	bw := blockWriter{restartInterval: 2}
	for _, k := range []string{"a", "ab", "abc", "b"} {
		bw.add(base.MakeInternalKey([]byte(k), 1, base.KindSet).Append(nil), []byte("v"))
	}
	f.Add(bytes.Clone(bw.finish()), uint8(0))
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0}, uint8(1))
	f.Add([]byte{0, 3, 0, 'a', 'b', 'c', 0, 0, 0, 0, 1, 0, 0, 128}, uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, mode uint8) {
		var it blockIter
		it.isIndex = mode&1 != 0
		it.deltaValues = mode&2 != 0
		it.firstKey = mode&4 != 0
		if !it.init(b, base.CompareEncoded) {
			return
		}
		n := 0
		for ok := it.first(); ok && n < 1000; ok = it.next() {
			n++
		}
		for ok := it.last(); ok && n < 2000; ok = it.prev() {
			n++
		}
		it.seekGE([]byte("ab\x00\x00\x00\x00\x00\x00\x00\x00"))
		it.seekLT([]byte("b"))
	})
}

// FuzzTableOpen opens arbitrary bytes as a table and reads everything: it
// must never panic.
func FuzzTableOpen(f *testing.F) {
	good := seedTable(f)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(make([]byte, 53))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Open(&memFile{b: b}, int64(len(b)), ReaderOptions{FileName: "fuzz.sst"})
		if err != nil {
			return
		}
		it := r.NewIter()
		n := 0
		for ok := it.First(); ok && n < 10000; ok = it.Next() {
			n++
		}
		for ok := it.Last(); ok && n < 20000; ok = it.Prev() {
			n++
		}
		it.SeekGE([]byte("b"))
		it.SeekLT([]byte("c"))
		_ = it.Close()
		_, _, _, _, _ = r.Get([]byte("apple"), base.MaxSeqNum)
		r.KeyMayMatch([]byte("apple"))
		_ = r.VerifyChecksums()
		_ = r.Properties().String()
		_ = r.Close()
	})
}
