package db_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// TestConcurrentMemtableWrites: many goroutines write batches (Put, Delete,
// Merge, SingleDelete, some with a DeleteRange), so writers meet in the
// commit pipeline and insert into the memtable concurrently, while readers
// check that sequence numbers become visible in order: at any snapshot, each
// writer's batches are visible as a prefix of its history, whole, and a
// snapshot reads the same later. Then each writer's key range is compared
// with its model. It runs with concurrent memtable writes on (the default)
// and off.
func TestConcurrentMemtableWrites(t *testing.T) {
	for _, disable := range []bool{false, true} {
		t.Run(fmt.Sprintf("disable=%v", disable), func(t *testing.T) {
			testConcurrentMemtableWrites(t, disable)
		})
	}
}

// cmwWriter's batch i writes <id>/log/<i> and <id>/progress = i, plus a few
// random records on <id>/k/...: a reader that sees progress p must see
// log/p and must not see log/p+1.
type cmwWriter struct {
	id    int
	rng   *rand.Rand
	model map[string]string
	// sdNext is the next <id>/sd/<n> key: each is Put once and, later,
	// SingleDeleted once, as SingleDelete requires.
	sdNext, sdDeleted int
}

func cmwKey(id int, kind string, n int) []byte {
	return []byte(fmt.Sprintf("%02d/%s/%04d", id, kind, n))
}

func (w *cmwWriter) batch(i int) *db.Batch {
	b := &db.Batch{}
	set := func(k []byte, v string) { b.Put(k, []byte(v)); w.model[string(k)] = v }
	set(cmwKey(w.id, "log", i), strconv.Itoa(i))
	for n := 1 + w.rng.Intn(4); n > 0; n-- {
		k := cmwKey(w.id, "k", w.rng.Intn(60))
		switch r := w.rng.Intn(10); {
		case r < 4:
			set(k, fmt.Sprintf("v%d.%d", i, n))
		case r < 6:
			b.Delete(k)
			delete(w.model, string(k))
		case r < 8:
			op := fmt.Sprintf("m%d.%d", i, n)
			b.Merge(k, []byte(op))
			if old, ok := w.model[string(k)]; ok {
				w.model[string(k)] = old + "," + op
			} else {
				w.model[string(k)] = op
			}
		case r < 9:
			set(cmwKey(w.id, "sd", w.sdNext), "once")
			w.sdNext++
		default:
			if w.sdDeleted < w.sdNext {
				k := cmwKey(w.id, "sd", w.sdDeleted)
				b.SingleDelete(k)
				delete(w.model, string(k))
				w.sdDeleted++
			}
		}
	}
	if w.rng.Intn(25) == 0 {
		lo, hi := w.rng.Intn(60), w.rng.Intn(60)
		if lo > hi {
			lo, hi = hi, lo
		}
		start, end := cmwKey(w.id, "k", lo), cmwKey(w.id, "k", hi)
		b.DeleteRange(start, end)
		for k := range w.model {
			if k >= string(start) && k < string(end) {
				delete(w.model, k)
			}
		}
	}
	// The progress record goes last: a reader that sees it and not log/i
	// saw half a batch.
	set(cmwKey(w.id, "progress", 0), strconv.Itoa(i))
	return b
}

func testConcurrentMemtableWrites(t *testing.T, disable bool) {
	seed := testutil.Seed(t)
	const writers, readers = 8, 2
	ops := 400
	if testutil.Long() {
		ops = 5000
	}
	opts := &db.Options{FS: vfs.NewMem(), CreateIfMissing: true, WriteBufferSize: 64 << 10,
		MergeOperator: db.NewStringAppendOperator(","), DisableConcurrentMemtableWrites: disable,
		Level0SlowdownWritesTrigger: 1 << 20, Level0StopWritesTrigger: 1 << 20}
	d, err := db.Open("/db", opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()

	errs := make(chan error, writers+readers)
	var wg, rg sync.WaitGroup
	var stop atomic.Bool
	ws := make([]*cmwWriter, writers)
	for i := range ws {
		ws[i] = &cmwWriter{id: i, rng: rand.New(rand.NewSource(seed + int64(i))), model: map[string]string{}}
		wg.Add(1)
		go func(w *cmwWriter) {
			defer wg.Done()
			for i := 1; i <= ops && !stop.Load(); i++ {
				if err := d.Write(w.batch(i), nil); err != nil {
					errs <- fmt.Errorf("writer %d, batch %d: %w", w.id, i, err)
					stop.Store(true)
					return
				}
			}
		}(ws[i])
	}
	for r := 0; r < readers; r++ {
		rg.Add(1)
		go func(rng *rand.Rand) {
			defer rg.Done()
			last := make([]int, writers) // progress seen before: never goes back
			for !stop.Load() {
				if err := cmwRead(d, rng, last); err != nil {
					errs <- err
					stop.Store(true)
					return
				}
			}
		}(rand.New(rand.NewSource(seed + 100 + int64(r))))
	}
	wg.Wait()
	stop.Store(true)
	rg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, w := range ws {
		var got []string
		it := d.NewIterator(&db.ReadOptions{LowerBound: []byte(fmt.Sprintf("%02d/", w.id)), UpperBound: []byte(fmt.Sprintf("%02d0", w.id))})
		for it.SeekToFirst(); it.Valid(); it.Next() {
			got = append(got, string(it.Key())+"="+string(it.Value()))
		}
		require.NoError(t, it.Err())
		require.NoError(t, it.Close())
		var want []string
		for k, v := range w.model {
			want = append(want, k+"="+v)
		}
		sort.Strings(want)
		require.Equal(t, want, got, "writer %d", w.id)
	}
}

// cmwRead checks, at one snapshot, for a random writer, that its progress
// p has not gone back since this reader's last look, that log/p is there
// and log/p+1 is not; and, at the latest state, that progress does not go
// back either.
func cmwRead(d *db.DB, rng *rand.Rand, last []int) error {
	id := rng.Intn(len(last))
	get := func(ro *db.ReadOptions, k []byte) (string, bool, error) {
		v, err := d.Get(k, ro)
		if errors.Is(err, db.ErrNotFound) {
			return "", false, nil
		}
		return string(v), err == nil, err
	}
	progress := func(ro *db.ReadOptions) (int, error) {
		v, ok, err := get(ro, cmwKey(id, "progress", 0))
		if err != nil || !ok {
			return 0, err
		}
		return strconv.Atoi(v)
	}
	snap := d.NewSnapshot()
	defer snap.Release()
	ro := &db.ReadOptions{Snapshot: snap}
	p, err := progress(ro)
	if err != nil {
		return err
	}
	if p < last[id] {
		return fmt.Errorf("writer %d: progress %d after %d", id, p, last[id])
	}
	last[id] = p
	if p > 0 {
		if v, ok, err := get(ro, cmwKey(id, "log", p)); err != nil || !ok || v != strconv.Itoa(p) {
			return fmt.Errorf("writer %d: progress %d but log/%d = %q, %v, %v", id, p, p, v, ok, err)
		}
		j := 1 + rng.Intn(p)
		if _, ok, err := get(ro, cmwKey(id, "log", j)); err != nil || !ok {
			return fmt.Errorf("writer %d: progress %d but log/%d missing (%v)", id, p, j, err)
		}
	}
	if v, ok, err := get(ro, cmwKey(id, "log", p+1)); err != nil || ok {
		return fmt.Errorf("writer %d: progress %d but log/%d = %q (%v)", id, p, p+1, v, err)
	}
	// Backward over the writer's log: the visible batches are 1..p.
	it := d.NewIterator(&db.ReadOptions{Snapshot: snap, LowerBound: cmwKey(id, "log", 0), UpperBound: cmwKey(id, "log", 9999)})
	n := p
	for it.SeekToLast(); it.Valid() && n > 0; it.Prev() {
		if !bytes.Equal(it.Key(), cmwKey(id, "log", n)) {
			break
		}
		n--
	}
	valid, key := it.Valid(), string(it.Key())
	if err := errors.CombineErrors(it.Err(), it.Close()); err != nil {
		return err
	}
	if n != 0 || valid {
		return fmt.Errorf("writer %d: progress %d, walking back the log stopped before log/%d at %q", id, p, n, key)
	}
	// A snapshot never changes: had the sequence number been published
	// before some write at or below it was inserted, that write could
	// appear now.
	if p2, err := progress(ro); err != nil || p2 != p {
		return fmt.Errorf("writer %d: snapshot's progress %d, then %d (%v)", id, p, p2, err)
	}
	q, err := progress(nil)
	if err != nil {
		return err
	}
	if q < p {
		return fmt.Errorf("writer %d: latest progress %d below snapshot's %d", id, q, p)
	}
	last[id] = q
	return nil
}

// TestWriteVisibleOnReturn: more writers than cores, so that writers wait
// in the commit pipeline both polling and asleep (for the commit lock and
// for their predecessors' publication), each read their own write as soon
// as Put returns: a write returns only once its sequence numbers are
// visible.
func TestWriteVisibleOnReturn(t *testing.T) {
	opts := &db.Options{FS: vfs.NewMem(), CreateIfMissing: true, WriteBufferSize: 256 << 10}
	d, err := db.Open("/db", opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()

	const writers, perWriter = 8, 3000
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for id := 0; id < writers; id++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				k := []byte(fmt.Sprintf("%02d/%05d", id, i))
				v := []byte(strconv.Itoa(i))
				if err := d.Put(k, v, nil); err != nil {
					errs <- err
					return
				}
				got, err := d.Get(k, nil)
				if err != nil {
					errs <- errors.Wrapf(err, "writer %d: Get of %s right after its Put", id, k)
					return
				}
				if !bytes.Equal(got, v) {
					errs <- errors.Newf("writer %d: %s = %q after Put of %q", id, k, got, v)
					return
				}
			}
		}(id)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
