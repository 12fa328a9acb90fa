package db_test

import (
	"errors"
	"fmt"
	"log"
	"sync"

	"github.com/stratadb/strata/db"
)

// Writers on several goroutines share one DB: each write appends its WAL
// record in turn and inserts into the memtable alongside the others; a
// write returns once it and every earlier write are visible.
func ExampleOptions_disableConcurrentMemtableWrites() {
	for _, disable := range []bool{false, true} {
		d, done := exampleDB(&db.Options{DisableConcurrentMemtableWrites: disable})
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 1000; i++ {
					k := fmt.Sprintf("writer%d/%04d", g, i)
					if err := d.Put([]byte(k), []byte("v"), nil); err != nil {
						log.Fatal(err)
					}
				}
			}(g)
		}
		wg.Wait()
		n := 0
		it := d.NewIterator(nil)
		for it.SeekToFirst(); it.Valid(); it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("one at a time: %v, keys: %d\n", disable, n)
		done()
	}
	// Output:
	// one at a time: false, keys: 4000
	// one at a time: true, keys: 4000
}

// Filters read through the block cache instead of pinned per table: the
// memory the open tables pin (Metrics.TableReadersMem) no longer includes
// them.
func ExampleOptions_cacheIndexAndFilterBlocks() {
	pinned := map[bool]int64{}
	for _, cached := range []bool{false, true} {
		d, done := exampleDB(&db.Options{BloomBitsPerKey: 10, CacheIndexAndFilterBlocks: cached})
		fillTable(d)
		if _, err := d.Get([]byte("key000042"), nil); err != nil {
			log.Fatal(err)
		}
		pinned[cached] = d.Metrics().TableReadersMem
		done()
	}
	fmt.Println("cached filters pin less:", pinned[true] < pinned[false])
	// Output:
	// cached filters pin less: true
}

// Partitioned indexes and filters (RocksDB's kTwoLevelIndexSearch with
// partition_filters): with CacheIndexAndFilterBlocks a table pins only its
// two small top-level indexes, and a lookup reads the one filter partition
// and index partition it needs through the block cache.
func ExampleOptions_partitionFilters() {
	pinned := map[bool]int64{}
	for _, partitioned := range []bool{false, true} {
		o := &db.Options{BloomBitsPerKey: 10, CacheIndexAndFilterBlocks: true}
		if partitioned {
			o.IndexType, o.PartitionFilters, o.MetadataBlockSize = db.IndexTwoLevelSearch, true, 4096
		}
		d, done := exampleDB(o)
		fillTable(d)
		v, err := d.Get([]byte("key000042"), nil)
		if err != nil {
			log.Fatal(err)
		}
		_, err = d.Get([]byte("key999999"), nil)
		fmt.Printf("partitioned: %v, found %s, absent key not found: %v\n", partitioned, v, errors.Is(err, db.ErrNotFound))
		pinned[partitioned] = d.Metrics().TableReadersMem
		done()
	}
	fmt.Println("partitioned index pins less:", pinned[true] < pinned[false])
	// Output:
	// partitioned: false, found v, absent key not found: true
	// partitioned: true, found v, absent key not found: true
	// partitioned index pins less: true
}

// With CacheIndexAndFilterBlocks, index and filter partitions go into a
// high-priority pool of the block cache (HighPriPoolRatio of it, 0.5 by
// default), which data blocks cannot evict them from: reads that touch
// many data blocks leave the partitions cached. RocksDB's
// cache_index_and_filter_blocks_with_high_priority and
// high_pri_pool_ratio.
func ExampleOptions_highPriPoolRatio() {
	for _, disable := range []bool{false, true} {
		d, done := exampleDB(&db.Options{BloomBitsPerKey: 10, CacheIndexAndFilterBlocks: true,
			IndexType: db.IndexTwoLevelSearch, PartitionFilters: true,
			BlockCacheSize: 256 << 10, HighPriPoolRatio: 0.25,
			DisableCacheIndexAndFilterBlocksWithHighPriority: disable})
		fillTable(d)
		if _, err := d.Get([]byte("key000042"), nil); err != nil {
			log.Fatal(err)
		}
		m := d.Metrics()
		fmt.Printf("high priority: %v, pool %d KiB, index and filter blocks in it: %v\n",
			!disable, m.BlockCacheHighPri.Capacity>>10, m.BlockCacheHighPri.Size > 0)
		done()
	}
	// Output:
	// high priority: true, pool 64 KiB, index and filter blocks in it: true
	// high priority: false, pool 64 KiB, index and filter blocks in it: false
}

// Tables read through memory mappings (64-bit Linux): reads answer exactly
// as with pread.
func ExampleOptions_allowMmapReads() {
	d, done := exampleDB(&db.Options{AllowMmapReads: true})
	defer done()
	if err := d.Put([]byte("k"), []byte("v"), nil); err != nil {
		log.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		log.Fatal(err)
	}
	v, err := d.Get([]byte("k"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", v)
	// Output:
	// v
}

// fillTable writes key000000..key019999 to d and flushes them to a table,
// exiting on an error.
func fillTable(d *db.DB) {
	for i := 0; i < 20000; i++ {
		if err := d.Put([]byte(fmt.Sprintf("key%06d", i)), []byte("v"), nil); err != nil {
			log.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		log.Fatal(err)
	}
}
