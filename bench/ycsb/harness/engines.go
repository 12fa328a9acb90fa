// Package harness runs YCSB's core workloads (go-ycsb's client, workload
// and measurement packages) against Strata, Pebble, Badger and bbolt.
//
// The bindings follow go-ycsb's own (db/badger, db/boltdb): a record is one
// key, "<table>:<key>", whose value is the fields encoded with go-ycsb's
// RowCodec; Update is Get + merge the new fields into the decoded row + Put,
// and Scan decodes count rows from the start key on. go-ycsb v1.0.3 ships
// bindings only for Badger v1.5.4 and boltdb v1.3.1, so these are written
// here against the current releases.
package harness

import (
	"context"
	"fmt"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/util"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

// Engines lists the engines the harness can open, in the order run.sh
// interleaves them.
var Engines = []string{"strata", "pebble", "badger", "bbolt"}

// Budget is the memory an engine may use for caching and buffering. Zero
// fields keep the engine's default. bbolt takes neither (it is a
// memory-mapped B+tree whose cache is the page cache) and runs as it is.
type Budget struct {
	// CacheBytes is the block cache: Strata's and Pebble's block cache,
	// Badger's block cache.
	CacheBytes int64
	// MemtableBytes is the size of one memtable (Strata's write buffer,
	// Pebble's and Badger's memtable).
	MemtableBytes int64
}

// kv is the surface a binding needs from an engine; the record encoding
// and the Update merge live in ycsbDB, once for every engine.
type kv interface {
	// get returns the value of key; found is false when there is none.
	get(key []byte) (val []byte, found bool, err error)
	// update reads key, lets fn produce the new value from the old one and
	// writes it. Engines with transactions (Badger, bbolt) do both inside
	// one, as go-ycsb's bindings do; the others Get then Put.
	update(key []byte, fn func(old []byte) ([]byte, error)) error
	put(key, val []byte) error
	del(key []byte) error
	// scan calls fn for up to count entries from start on; fn must copy
	// what it keeps.
	scan(start []byte, count int, fn func(k, v []byte) error) error
	close() error
	describe() string
}

// errNotFound is what Read and Update return for a missing record; the
// client counts it as READ_ERROR / UPDATE_ERROR.
var errNotFound = fmt.Errorf("ycsb: record not found")

// ycsbDB adapts a kv to go-ycsb's ycsb.DB.
type ycsbDB struct {
	kv kv
	r  *util.RowCodec
}

var _ ycsb.DB = (*ycsbDB)(nil)

// Open opens engine in dir under budget. p supplies the field names
// (fieldcount) for the row codec.
func Open(engine, dir string, budget Budget, p *properties.Properties) (ycsb.DB, string, error) {
	var (
		e   kv
		err error
	)
	switch engine {
	case "strata":
		e, err = openStrata(dir, budget)
	case "pebble":
		e, err = openPebble(dir, budget)
	case "badger":
		e, err = openBadger(dir, budget)
	case "bbolt":
		e, err = openBbolt(dir)
	default:
		return nil, "", fmt.Errorf("unknown engine %q (strata|pebble|badger|bbolt)", engine)
	}
	if err != nil {
		return nil, "", fmt.Errorf("open %s in %s: %w", engine, dir, err)
	}
	return &ycsbDB{kv: e, r: util.NewRowCodec(p)}, e.describe(), nil
}

func rowKey(table, key string) []byte {
	return []byte(table + ":" + key)
}

func (d *ycsbDB) Close() error { return d.kv.close() }

func (d *ycsbDB) InitThread(ctx context.Context, _, _ int) context.Context { return ctx }

func (d *ycsbDB) CleanupThread(context.Context) {}

func (d *ycsbDB) Read(_ context.Context, table, key string, fields []string) (map[string][]byte, error) {
	v, found, err := d.kv.get(rowKey(table, key))
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("read %s:%s: %w", table, key, errNotFound)
	}
	return d.r.Decode(v, fields)
}

func (d *ycsbDB) Scan(_ context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	res := make([]map[string][]byte, 0, count)
	err := d.kv.scan(rowKey(table, startKey), count, func(_, v []byte) error {
		// The decoded fields alias their input, and v is the engine's.
		m, err := d.r.Decode(append([]byte(nil), v...), fields)
		if err != nil {
			return err
		}
		res = append(res, m)
		return nil
	})
	return res, err
}

func (d *ycsbDB) Update(_ context.Context, table, key string, values map[string][]byte) error {
	k := rowKey(table, key)
	return d.kv.update(k, func(old []byte) ([]byte, error) {
		if old == nil {
			return nil, fmt.Errorf("update %s: %w", k, errNotFound)
		}
		row, err := d.r.Decode(old, nil)
		if err != nil {
			return nil, err
		}
		for f, v := range values {
			row[f] = v
		}
		return d.r.Encode(nil, row)
	})
}

func (d *ycsbDB) Insert(_ context.Context, table, key string, values map[string][]byte) error {
	v, err := d.r.Encode(nil, values)
	if err != nil {
		return err
	}
	return d.kv.put(rowKey(table, key), v)
}

func (d *ycsbDB) Delete(_ context.Context, table, key string) error {
	return d.kv.del(rowKey(table, key))
}
