package harness

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/pingcap/go-ycsb/pkg/util"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
	"github.com/stretchr/testify/require"
)

// TestBindings loads 1000 records into every engine through go-ycsb's
// client on two threads, checks that each loaded record reads back with its
// ten 100-byte fields, runs every workload for a few hundred operations
// (the only failures allowed: misses of keys never loaded, and Badger's
// update conflicts), then checks that every record still has all its
// fields and that a full scan returns the keys in order.
func TestBindings(t *testing.T) {
	pr := Params{Records: 1000, Ops: 300, Threads: 2}
	for _, engine := range Engines {
		t.Run(engine, func(t *testing.T) {
			// Badger needs a memtable of at least 7 MiB for its default
			// 1 MiB value threshold.
			inner, desc, err := Open(engine, filepath.Join(t.TempDir(), engine),
				Budget{CacheBytes: 8 << 20, MemtableBytes: 8 << 20}, pr.Properties(""))
			require.NoError(t, err)
			require.NotEmpty(t, desc)
			d := &failures{DB: inner}
			defer func() { require.NoError(t, d.Close()) }()
			ctx := context.Background()

			load, err := RunPhase(ctx, pr, "", d)
			require.NoError(t, err)
			ins, ok := load.Op("INSERT")
			require.True(t, ok, "load stats: %+v", load.Stats)
			require.EqualValues(t, pr.Records, ins.Count)
			require.Empty(t, d.take(), "load")

			// Every loaded record reads back whole. With insertorder=hashed,
			// record i is "user" + the FNV-64 hash of i (go-ycsb's
			// buildKeyName with zeropadding 1).
			loaded := map[string]bool{}
			for i := int64(0); i < pr.Records; i++ {
				key := fmt.Sprintf("user%d", util.Hash64(i))
				loaded[key] = true
				row, err := d.Read(ctx, "usertable", key, nil)
				require.NoError(t, err, "record %d (%s)", i, key)
				require.Len(t, row, 10, "record %s", key)
				for f, v := range row {
					require.Len(t, v, 100, "record %s field %s", key, f)
				}
			}
			rows, err := d.Scan(ctx, "usertable", "", 100, []string{"field3"})
			require.NoError(t, err)
			require.Len(t, rows, 100)
			for _, row := range rows {
				require.Len(t, row["field3"], 100)
			}

			for _, w := range []string{"a", "b", "c", "d", "e", "f"} {
				r, err := RunPhase(ctx, pr, w, d)
				require.NoError(t, err, "workload %s", w)
				total, ok := r.Op("TOTAL")
				require.True(t, ok, "workload %s stats: %+v", w, r.Stats)
				// TOTAL counts successful calls; at least one per operation.
				fails := d.take()
				require.GreaterOrEqual(t, total.Count+int64(len(fails)), pr.Ops, "workload %s", w)
				for _, f := range fails {
					switch {
					case errors.Is(f.err, errNotFound):
						// go-ycsb's zipfian key chooser spans [0, recordcount]
						// inclusive, and D and F can choose keys above the
						// inserted ones: a miss must be of a key never loaded.
						require.False(t, loaded[f.key], "workload %s: loaded record %s missing: %v", w, f.key, f.err)
					case engine == "badger" && errors.Is(f.err, badger.ErrConflict):
						// Two threads updating one hot key in Badger
						// transactions: its model, as in go-ycsb's binding.
					default:
						require.NoError(t, f.err, "workload %s: %s %s", w, f.op, f.key)
					}
				}
			}

			// Updates merged fields into whole rows: every record still has
			// all ten fields, and keys come back in order.
			var prev string
			n := 0
			err = inner.(*ycsbDB).kv.scan([]byte("usertable:"), 1<<20, func(k, v []byte) error {
				require.Greater(t, string(k), prev)
				prev = string(k)
				row, err := inner.(*ycsbDB).r.Decode(append([]byte(nil), v...), nil)
				if err != nil {
					return err
				}
				if len(row) != 10 {
					return fmt.Errorf("record %s has %d fields", k, len(row))
				}
				n++
				return nil
			})
			require.NoError(t, err)
			require.GreaterOrEqual(t, n, int(pr.Records))

			_, err = d.Read(ctx, "usertable", "no-such-record", nil)
			require.ErrorIs(t, err, errNotFound)
		})
	}
}

// failures wraps a binding and records every failed call, so that the
// test can tell a miss of a never-loaded key from a binding fault (the
// client itself only counts errors).
type failures struct {
	ycsb.DB
	mu   sync.Mutex
	list []failure
}

type failure struct {
	op, key string
	err     error
}

func (f *failures) note(op, key string, err error) error {
	if err != nil {
		f.mu.Lock()
		f.list = append(f.list, failure{op: op, key: key, err: err})
		f.mu.Unlock()
	}
	return err
}

// take returns and clears the failures so far.
func (f *failures) take() []failure {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.list
	f.list = nil
	return l
}

func (f *failures) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	m, err := f.DB.Read(ctx, table, key, fields)
	return m, f.note("read", key, err)
}

func (f *failures) Scan(ctx context.Context, table, key string, n int, fields []string) ([]map[string][]byte, error) {
	m, err := f.DB.Scan(ctx, table, key, n, fields)
	return m, f.note("scan", key, err)
}

func (f *failures) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	return f.note("update", key, f.DB.Update(ctx, table, key, values))
}

func (f *failures) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	return f.note("insert", key, f.DB.Insert(ctx, table, key, values))
}

func (f *failures) Delete(ctx context.Context, table, key string) error {
	return f.note("delete", key, f.DB.Delete(ctx, table, key))
}
