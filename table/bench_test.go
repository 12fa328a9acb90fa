package table

import (
	"encoding/binary"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/cache"
)

func benchModel(n int) []kv {
	out := make([]kv, n)
	for i := range out {
		k := binary.BigEndian.AppendUint64(nil, uint64(i))
		out[i] = kv{base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), make([]byte, 100)}
	}
	return out
}

func benchReader(b testing.TB, n int, c Compression) (*Reader, []kv) {
	model := benchModel(n)
	f, _ := buildTable(b, model, nil, WriterOptions{Compression: c, BloomBitsPerKey: 10, WholeKeyFiltering: true})
	return openMem(b, f, cache.New(64<<20)), model
}

func BenchmarkTableGet(b *testing.B) {
	r, model := benchReader(b, 10000, SnappyCompression)
	defer r.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := model[(i*7919)%len(model)].key.UserKey
		if _, _, _, found, err := r.Get(k, base.MaxSeqNum); !found || err != nil {
			b.Fatal("missing", err)
		}
	}
}

func BenchmarkTableIterNext(b *testing.B) {
	r, _ := benchReader(b, 10000, SnappyCompression)
	defer r.Close()
	it := r.NewIter()
	it.First()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !it.Next() {
			it.First()
		}
		_ = it.Key()
		_ = it.Value()
	}
}

func BenchmarkBlockDecode(b *testing.B) {
	bw := blockWriter{restartInterval: 16}
	for _, e := range benchModel(36) {
		bw.add(e.key.Append(nil), e.val)
	}
	block := bw.finish()
	var it blockIter
	b.SetBytes(int64(len(block)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it.init(block, base.CompareEncoded)
		for ok := it.first(); ok; ok = it.next() {
		}
	}
}

func BenchmarkWriter(b *testing.B) {
	model := benchModel(10000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := NewWriter(&memFile{b: make([]byte, 0, 2<<20)}, WriterOptions{Compression: SnappyCompression, BloomBitsPerKey: 10, WholeKeyFiltering: true})
		for _, e := range model {
			if err := w.Add(e.key, e.val); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Finish(); err != nil {
			b.Fatal(err)
		}
	}
}
