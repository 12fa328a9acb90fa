package db_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// concKey is key j of writer w; each writer owns the keys of its prefix.
func concKey(w, j int) []byte { return []byte(fmt.Sprintf("w%d/%04d", w, j)) }

// concValue encodes its key, so that readers can tell a torn or misplaced
// value from a valid one.
func concValue(key []byte, version int) []byte {
	return []byte(fmt.Sprintf("%s#%d#%s", key, version, bytes.Repeat([]byte("v"), version%40)))
}

func validConcValue(key, value []byte) bool {
	return bytes.HasPrefix(value, append(append([]byte{}, key...), '#'))
}

// concWriter is one writer goroutine's state: its model is exactly the
// state of its key range, since no one else writes there.
type concWriter struct {
	id    int
	rng   *rand.Rand
	model *testutil.Model
}

const concKeysPerWriter = 150

func (w *concWriter) step(t require.TestingT, d *db.DB, version int) {
	k := concKey(w.id, w.rng.Intn(concKeysPerWriter))
	switch w.rng.Intn(10) {
	case 0, 1, 2, 3:
		v := concValue(k, version)
		require.NoError(t, d.Put(k, v, nil))
		w.model.Put(k, v)
	case 4:
		require.NoError(t, d.Delete(k, nil))
		w.model.Delete(k)
	case 5:
		k2 := concKey(w.id, w.rng.Intn(concKeysPerWriter))
		if bytes.Compare(k, k2) > 0 {
			k, k2 = k2, k
		}
		require.NoError(t, d.DeleteRange(k, k2, nil))
		w.model.DeleteRange(k, k2)
	default:
		b := db.NewBatch()
		var apply []func()
		for i := 0; i < 1+w.rng.Intn(5); i++ {
			k := concKey(w.id, w.rng.Intn(concKeysPerWriter))
			if w.rng.Intn(3) == 0 {
				b.Delete(k)
				apply = append(apply, func() { w.model.Delete(k) })
				continue
			}
			v := concValue(k, version)
			b.Put(k, v)
			apply = append(apply, func() { w.model.Put(k, v) })
		}
		require.NoError(t, d.Write(b, &db.WriteOptions{Sync: w.rng.Intn(20) == 0}))
		for _, f := range apply {
			f()
		}
	}
}

// checkRange compares writer id's key range at ro with m.
func checkRange(t require.TestingT, d *db.DB, ro *db.ReadOptions, id int, m *testutil.Model, what string) {
	lo, hi := []byte(fmt.Sprintf("w%d/", id)), []byte(fmt.Sprintf("w%d0", id))
	ro.LowerBound, ro.UpperBound = lo, hi
	it := d.NewIterator(ro)
	got := []testutil.KV{}
	for it.SeekToFirst(); it.Valid(); it.Next() {
		got = append(got, testutil.KV{Key: string(it.Key()), Value: string(it.Value())})
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.Equal(t, m.Range(lo, hi), got, "%s: writer %d's range", what, id)
	keys := make([][]byte, 0, 20)
	for j := 0; j < concKeysPerWriter; j += 8 {
		keys = append(keys, concKey(id, j))
	}
	vals, errs := d.MultiGet(keys, ro)
	for i, k := range keys {
		want, ok := m.Get(k)
		if !ok {
			require.ErrorIs(t, errs[i], db.ErrNotFound, "%s: MultiGet %q", what, k)
			continue
		}
		require.NoError(t, errs[i], "%s: MultiGet %q", what, k)
		require.Equal(t, want, vals[i], "%s: MultiGet %q", what, k)
	}
}

// TestConcurrentReadWrite runs writers, readers, iterators, snapshot
// checkers, Flush, CompactRange and SetOptions at once (run it with -race).
// Each writer owns a key range, so the state of its range at any snapshot
// it takes is its own model at that moment: snapshots are checked when
// taken and again after later writes and flushes; the final state is
// checked, and again after a reopen.
func TestConcurrentReadWrite(t *testing.T) {
	seed := testutil.Seed(t)
	const writers, readers = 4, 3
	ops := 2500
	if testutil.Long() {
		ops = 10000
	}
	fs := vfs.NewMem()
	opts := &db.Options{FS: fs, CreateIfMissing: true, WriteBufferSize: 16 << 10, BloomBitsPerKey: 10,
		Level0SlowdownWritesTrigger: 1 << 20, Level0StopWritesTrigger: 1 << 20}
	d, err := db.Open("/db", opts)
	require.NoError(t, err)
	var stop atomic.Bool
	var bg, wg sync.WaitGroup
	// Workers assert through rep; the test goroutine checks it after joining.
	rep := &testutil.Reporter{}
	ws := make([]*concWriter, writers)
	for i := range ws {
		ws[i] = &concWriter{id: i, rng: rand.New(rand.NewSource(seed + int64(i))), model: testutil.NewModel()}
		wg.Add(1)
		go func(w *concWriter) {
			defer wg.Done()
			type held struct {
				s *db.Snapshot
				m *testutil.Model
			}
			var snaps []held
			for n := 0; n < ops && !rep.Failed(); n++ {
				w.step(rep, d, n)
				if n%50 == 0 {
					s := held{d.NewSnapshot(), w.model.Clone()}
					checkRange(rep, d, &db.ReadOptions{Snapshot: s.s}, w.id, s.m, "new snapshot")
					snaps = append(snaps, s)
				}
				if len(snaps) > 3 {
					s := snaps[0]
					checkRange(rep, d, &db.ReadOptions{Snapshot: s.s}, w.id, s.m, "old snapshot")
					s.s.Release()
					snaps = snaps[1:]
				}
			}
			for _, s := range snaps {
				checkRange(rep, d, &db.ReadOptions{Snapshot: s.s}, w.id, s.m, "final snapshot")
				s.s.Release()
			}
		}(ws[i])
	}
	for i := 0; i < readers; i++ {
		bg.Add(1)
		go func(rng *rand.Rand) {
			defer bg.Done()
			for !stop.Load() && !rep.Failed() {
				concRead(rep, d, rng, writers)
			}
		}(rand.New(rand.NewSource(seed + 100 + int64(i))))
	}
	bg.Add(1)
	go func(rng *rand.Rand) {
		defer bg.Done()
		for !stop.Load() && !rep.Failed() {
			concMaintenance(rep, d, rng)
		}
	}(rand.New(rand.NewSource(seed + 200)))
	wg.Wait()
	stop.Store(true)
	bg.Wait()
	require.NoError(t, rep.Err())
	for _, w := range ws {
		checkRange(t, d, &db.ReadOptions{}, w.id, w.model, "final state")
	}
	require.NoError(t, d.Close())
	d, err = db.Open("/db", opts)
	require.NoError(t, err)
	for _, w := range ws {
		checkRange(t, d, &db.ReadOptions{}, w.id, w.model, "after reopen")
	}
	require.NoError(t, d.Close())
}

// concRead does one random read and checks what can be checked while
// writes run: values belong to their keys, iteration is ordered, and a
// snapshot reads the same twice.
func concRead(t require.TestingT, d *db.DB, rng *rand.Rand, writers int) {
	k := concKey(rng.Intn(writers), rng.Intn(concKeysPerWriter))
	switch rng.Intn(4) {
	case 0:
		v, err := d.Get(k, nil)
		if err != nil {
			require.ErrorIs(t, err, db.ErrNotFound)
			return
		}
		require.True(t, validConcValue(k, v), "Get(%q) = %q", k, v)
	case 1:
		keys := [][]byte{k, concKey(rng.Intn(writers), rng.Intn(concKeysPerWriter)), k}
		vals, errs := d.MultiGet(keys, nil)
		for i := range keys {
			if errs[i] != nil {
				require.ErrorIs(t, errs[i], db.ErrNotFound)
				continue
			}
			require.True(t, validConcValue(keys[i], vals[i]), "MultiGet(%q) = %q", keys[i], vals[i])
		}
		// Read at one sequence number: duplicates agree.
		require.Equal(t, errs[0] == nil, errs[2] == nil)
		require.Equal(t, vals[0], vals[2])
	case 2:
		it := d.NewIterator(&db.ReadOptions{TotalOrderSeek: rng.Intn(2) == 0})
		var prev []byte
		n := 0
		for it.Seek(k); it.Valid() && n < 200; it.Next() {
			require.True(t, prev == nil || bytes.Compare(prev, it.Key()) < 0, "order: %q then %q", prev, it.Key())
			require.True(t, validConcValue(it.Key(), it.Value()), "iterator %q = %q", it.Key(), it.Value())
			prev = append(prev[:0], it.Key()...)
			n++
		}
		require.NoError(t, it.Err())
		require.NoError(t, it.Close())
	default:
		s := d.NewSnapshot()
		defer s.Release()
		ro := &db.ReadOptions{Snapshot: s}
		first := snapshotContents(t, d, ro)
		for i := 0; i < 3; i++ {
			require.Equal(t, first, snapshotContents(t, d, ro), "a snapshot's view changed")
		}
	}
}

func snapshotContents(t require.TestingT, d *db.DB, ro *db.ReadOptions) []testutil.KV {
	it := d.NewIterator(ro)
	var out []testutil.KV
	for it.SeekToLast(); it.Valid(); it.Prev() {
		out = append(out, testutil.KV{Key: string(it.Key()), Value: string(it.Value())})
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return out
}

// concMaintenance runs one Flush, CompactRange or SetOptions.
func concMaintenance(t require.TestingT, d *db.DB, rng *rand.Rand) {
	switch rng.Intn(5) {
	case 0, 1:
		require.NoError(t, d.Flush())
	case 2:
		require.NoError(t, d.CompactRange(nil, nil))
	case 3:
		v := fmt.Sprint((8 + rng.Intn(56)) << 10)
		require.NoError(t, d.SetOptions(map[string]string{"write_buffer_size": v}))
	default:
		v := []string{"fixed:2", "fixed:3", "capped:4", "nullptr", "noop"}[rng.Intn(5)]
		require.NoError(t, d.SetOptions(map[string]string{"prefix_extractor": v}))
	}
}
