package harness

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

type badgerKV struct {
	d    *badger.DB
	desc string
}

func openBadger(dir string, b Budget) (kv, error) {
	// Conflict detection stays on (Badger's default): Update runs in one
	// read-write transaction as go-ycsb's Badger binding does, so
	// concurrent updates of a hot key can fail with ErrConflict, which the
	// client counts as UPDATE_ERROR.
	o := badger.DefaultOptions(dir).WithLogger(nil).WithSyncWrites(false).WithMetricsEnabled(false)
	if b.CacheBytes > 0 {
		// Badger keeps table indexes and bloom filters in memory unless
		// IndexCacheSize is set (its default, 0); Strata's default keeps
		// them outside the block cache too, so only the block cache is
		// given the budget.
		o = o.WithBlockCacheSize(b.CacheBytes)
	}
	if b.MemtableBytes > 0 {
		o = o.WithMemTableSize(b.MemtableBytes)
	}
	d, err := badger.Open(o)
	if err != nil {
		return nil, err
	}
	return &badgerKV{d: d, desc: fmt.Sprintf("badger v4.9.6 block_cache=%dMiB index_cache=%dMiB memtable=%dMiB num_memtables=%d value_threshold=%d sync=off",
		o.BlockCacheSize>>20, o.IndexCacheSize>>20, o.MemTableSize>>20, o.NumMemtables, o.ValueThreshold)}, nil
}

func (b *badgerKV) get(key []byte) ([]byte, bool, error) {
	var out []byte
	err := b.d.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		out, err = item.ValueCopy(nil)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

func (b *badgerKV) update(key []byte, fn func(old []byte) ([]byte, error)) error {
	return b.d.Update(func(txn *badger.Txn) error {
		var old []byte
		item, err := txn.Get(key)
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
		case err != nil:
			return err
		default:
			if old, err = item.ValueCopy(nil); err != nil {
				return err
			}
		}
		v, err := fn(old)
		if err != nil {
			return err
		}
		return txn.Set(key, v)
	})
}

func (b *badgerKV) put(key, val []byte) error {
	return b.d.Update(func(txn *badger.Txn) error { return txn.Set(key, val) })
}

func (b *badgerKV) del(key []byte) error {
	return b.d.Update(func(txn *badger.Txn) error { return txn.Delete(key) })
}

func (b *badgerKV) scan(start []byte, count int, fn func(k, v []byte) error) error {
	return b.d.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		// Prefetch as many values as the scan will read, at most Badger's
		// default of 100.
		opts.PrefetchSize = min(count, opts.PrefetchSize)
		it := txn.NewIterator(opts)
		defer it.Close()
		n := 0
		for it.Seek(start); it.Valid() && n < count; it.Next() {
			item := it.Item()
			err := item.Value(func(v []byte) error { return fn(item.Key(), v) })
			if err != nil {
				return err
			}
			n++
		}
		return nil
	})
}

func (b *badgerKV) close() error { return b.d.Close() }

func (b *badgerKV) describe() string { return b.desc }
