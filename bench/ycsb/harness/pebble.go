package harness

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

type pebbleKV struct {
	d     *pebble.DB
	cache *pebble.Cache
	desc  string
}

type pebbleLogger struct{}

func (pebbleLogger) Infof(string, ...interface{}) {}
func (pebbleLogger) Errorf(format string, args ...interface{}) {
	fmt.Printf("pebble: "+format+"\n", args...)
}
func (pebbleLogger) Fatalf(format string, args ...interface{}) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}

func openPebble(dir string, b Budget) (kv, error) {
	opts := &pebble.Options{Logger: pebbleLogger{}}
	var cache *pebble.Cache
	if b.CacheBytes > 0 {
		cache = pebble.NewCache(b.CacheBytes)
		opts.Cache = cache
	}
	if b.MemtableBytes > 0 {
		opts.MemTableSize = uint64(b.MemtableBytes)
	}
	d, err := pebble.Open(dir, opts)
	if err != nil {
		if cache != nil {
			cache.Unref()
		}
		return nil, err
	}
	eff := opts.Clone()
	eff.EnsureDefaults()
	return &pebbleKV{d: d, cache: cache,
		desc: fmt.Sprintf("pebble v2.1.7 cache=%s memtable=%dMiB wal=on sync=off",
			sizeStr(b.CacheBytes), eff.MemTableSize>>20)}, nil
}

func (p *pebbleKV) get(key []byte) ([]byte, bool, error) {
	v, closer, err := p.d.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	return out, true, closer.Close()
}

func (p *pebbleKV) update(key []byte, fn func(old []byte) ([]byte, error)) error {
	old, _, err := p.get(key)
	if err != nil {
		return err
	}
	v, err := fn(old)
	if err != nil {
		return err
	}
	return p.d.Set(key, v, pebble.NoSync)
}

func (p *pebbleKV) put(key, val []byte) error { return p.d.Set(key, val, pebble.NoSync) }

func (p *pebbleKV) del(key []byte) error { return p.d.Delete(key, pebble.NoSync) }

func (p *pebbleKV) scan(start []byte, count int, fn func(k, v []byte) error) error {
	it, err := p.d.NewIter(nil)
	if err != nil {
		return err
	}
	n := 0
	for it.SeekGE(start); it.Valid() && n < count; it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return err
		}
		if err := fn(it.Key(), v); err != nil {
			_ = it.Close()
			return err
		}
		n++
	}
	return it.Close()
}

func (p *pebbleKV) close() error {
	err := p.d.Close()
	if p.cache != nil {
		p.cache.Unref()
	}
	return err
}

func (p *pebbleKV) describe() string { return p.desc }
