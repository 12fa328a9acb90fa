package memtable_test

import (
	"fmt"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/memtable"
)

const benchKeys = 100000

func benchKey(i int) []byte { return fmt.Appendf(nil, "key%010d", (i*7919)%benchKeys) }

func benchMemTable(b *testing.B) *memtable.MemTable {
	m := memtable.New(32 << 20)
	value := make([]byte, 100)
	for i := 0; i < benchKeys; i++ {
		if err := m.Add(base.MakeInternalKey(benchKey(i), base.SeqNum(i+1), base.KindSet), value); err != nil {
			b.Fatal(err)
		}
	}
	return m
}

func BenchmarkAdd(b *testing.B) {
	keys := make([][]byte, benchKeys)
	for i := range keys {
		keys[i] = benchKey(i)
	}
	value := make([]byte, 100)
	m := memtable.New(64 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := m.Add(base.MakeInternalKey(keys[i%benchKeys], base.SeqNum(i+1), base.KindSet), value)
		if err == memtable.ErrArenaFull {
			b.StopTimer()
			m = memtable.New(64 << 20)
			b.StartTimer()
			err = m.Add(base.MakeInternalKey(keys[i%benchKeys], base.SeqNum(i+1), base.KindSet), value)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGet(b *testing.B) {
	m := benchMemTable(b)
	keys := make([][]byte, benchKeys)
	for i := range keys {
		keys[i] = benchKey(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, _, found := m.Get(keys[i%benchKeys], base.MaxSeqNum); !found {
			b.Fatal("not found")
		}
	}
}

func BenchmarkIterNext(b *testing.B) {
	m := benchMemTable(b)
	var it memtable.Iter
	it.Init(m)
	it.First()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !it.Next() {
			it.First()
		}
		_ = it.Key()
	}
}

func BenchmarkIterPrev(b *testing.B) {
	m := benchMemTable(b)
	var it memtable.Iter
	it.Init(m)
	it.Last()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !it.Prev() {
			it.Last()
		}
		_ = it.Key()
	}
}
