package harness

import (
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

var boltBucket = []byte("usertable")

type boltKV struct {
	d *bolt.DB
}

func openBbolt(dir string) (kv, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// NoSync matches the other engines' sync=off; everything else is
	// bbolt's default (it takes no cache or buffer budget).
	d, err := bolt.Open(filepath.Join(dir, "bolt.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	if err := d.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(boltBucket)
		return err
	}); err != nil {
		_ = d.Close()
		return nil, err
	}
	return &boltKV{d: d}, nil
}

func (b *boltKV) get(key []byte) ([]byte, bool, error) {
	var (
		out   []byte
		found bool
	)
	err := b.d.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(boltBucket).Get(key); v != nil {
			out, found = append([]byte{}, v...), true
		}
		return nil
	})
	return out, found, err
}

func (b *boltKV) update(key []byte, fn func(old []byte) ([]byte, error)) error {
	return b.d.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(boltBucket)
		v, err := fn(bk.Get(key))
		if err != nil {
			return err
		}
		return bk.Put(key, v)
	})
}

func (b *boltKV) put(key, val []byte) error {
	return b.d.Update(func(tx *bolt.Tx) error { return tx.Bucket(boltBucket).Put(key, val) })
}

func (b *boltKV) del(key []byte) error {
	return b.d.Update(func(tx *bolt.Tx) error { return tx.Bucket(boltBucket).Delete(key) })
}

func (b *boltKV) scan(start []byte, count int, fn func(k, v []byte) error) error {
	return b.d.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(boltBucket).Cursor()
		n := 0
		for k, v := c.Seek(start); k != nil && n < count; k, v = c.Next() {
			if err := fn(k, v); err != nil {
				return err
			}
			n++
		}
		return nil
	})
}

func (b *boltKV) close() error { return b.d.Close() }

func (b *boltKV) describe() string {
	return "bbolt v1.5.0 NoSync=true, otherwise defaults (no cache budget)"
}
