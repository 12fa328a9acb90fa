package harness

import (
	"errors"
	"fmt"

	"github.com/stratadb/strata/db"
)

type strataKV struct {
	d    *db.DB
	wo   *db.WriteOptions
	desc string
}

func openStrata(dir string, b Budget) (kv, error) {
	opts := &db.Options{
		CreateIfMissing: true,
		BlockCacheSize:  b.CacheBytes,
		WriteBufferSize: int(b.MemtableBytes),
	}
	d, err := db.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	// No sync, WAL on: the same durability as the other engines here.
	return &strataKV{d: d, wo: &db.WriteOptions{},
		desc: fmt.Sprintf("strata block_cache=%s write_buffer=%s (0 = default) wal=on sync=off",
			sizeStr(b.CacheBytes), sizeStr(b.MemtableBytes))}, nil
}

func (s *strataKV) get(key []byte) ([]byte, bool, error) {
	v, err := s.d.Get(key, nil)
	if errors.Is(err, db.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

func (s *strataKV) update(key []byte, fn func(old []byte) ([]byte, error)) error {
	old, _, err := s.get(key)
	if err != nil {
		return err
	}
	v, err := fn(old)
	if err != nil {
		return err
	}
	return s.d.Put(key, v, s.wo)
}

func (s *strataKV) put(key, val []byte) error { return s.d.Put(key, val, s.wo) }

func (s *strataKV) del(key []byte) error { return s.d.Delete(key, s.wo) }

func (s *strataKV) scan(start []byte, count int, fn func(k, v []byte) error) error {
	it := s.d.NewIterator(nil)
	n := 0
	for it.Seek(start); it.Valid() && n < count; it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			_ = it.Close()
			return err
		}
		n++
	}
	if err := it.Err(); err != nil {
		_ = it.Close()
		return err
	}
	return it.Close()
}

func (s *strataKV) close() error { return s.d.Close() }

func (s *strataKV) describe() string { return s.desc }

func sizeStr(n int64) string {
	if n == 0 {
		return "default"
	}
	return fmt.Sprintf("%dMiB", n>>20)
}

// memReport is what Strata says it holds: memtables (count and arena
// bytes used), the block cache's charge against its capacity, and the
// open tables' pinned index and filter bytes.
func (s *strataKV) memReport() string {
	m := s.d.Metrics()
	p := func(name string) string { v, _ := s.d.GetProperty(name); return v }
	return fmt.Sprintf("memtables=%d (%.1f MB used) block_cache_usage=%s of %s table_readers_mem=%s",
		m.MemTables.Count, float64(m.MemTables.Size)/(1<<20),
		p(db.PropBlockCacheUsage), p(db.PropBlockCacheCapacity), p(db.PropTableReadersMem))
}
