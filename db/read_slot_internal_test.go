package db

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

func openSlotTest(t *testing.T, opts *Options) *DB {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/db", 0o755))
	opts.CreateIfMissing, opts.FS = true, fs
	d, err := Open("/db", opts)
	require.NoError(t, err)
	return d
}

// A view a Get cached in a read slot is released by the publish that
// replaces it: once a flush installs a new view, the old one (and its
// memtable) is referenced by nothing.
func TestReadSlotsReleaseReplacedView(t *testing.T) {
	d := openSlotTest(t, &Options{DisableAutoCompactions: true})
	defer d.Close()
	require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
	for i := 0; i < 4; i++ { // a few Gets: every slot they use caches the view
		_, err := d.Get([]byte("a"), nil)
		require.NoError(t, err)
	}
	old := d.def.readState.Load()
	oldMem := old.mems[0]
	require.Greater(t, old.refs.Load(), int32(1), "a slot holds a reference besides the family's")

	require.NoError(t, d.Flush())
	require.NotSame(t, old, d.def.readState.Load())
	require.Equal(t, int32(0), old.refs.Load(), "the replaced view is still referenced")
	require.Equal(t, int32(0), oldMem.refs.Load(), "the flushed memtable is still referenced")

	v, err := d.Get([]byte("a"), nil)
	require.NoError(t, err)
	require.Equal(t, "1", string(v))

	// A view held by a Get while a publish scrapes its slot is dropped
	// by the Get when it is done.
	h, held := d.slots.acquire(d.def)
	require.NoError(t, d.Put([]byte("a"), []byte("2"), nil))
	require.NoError(t, d.Flush())
	require.Equal(t, int32(1), held.refs.Load(), "only the Get's reference is left")
	d.slots.release(h, held)
	require.Equal(t, int32(0), held.refs.Load(), "the held view outlived its Get")
}

// A slot still holding a replaced view (as one does between a publish and
// its scrape) is not read through: a Get compares the slot's view with the
// family's current one, drops the stale reference and reads the current
// view, which has the writes made after the stale one was replaced.
func TestReadSlotsStaleViewNotUsed(t *testing.T) {
	d := openSlotTest(t, &Options{DisableAutoCompactions: true})
	defer d.Close()
	require.NoError(t, d.Put([]byte("a"), []byte("old"), nil))
	_, err := d.Get([]byte("a"), nil)
	require.NoError(t, err)
	stale := d.loadReadState() // our reference keeps it alive
	require.NoError(t, d.Flush())
	require.NoError(t, d.Put([]byte("a"), []byte("new"), nil))
	require.NoError(t, d.Put([]byte("b"), []byte("only-new"), nil))

	// Plant the stale view, referenced, in every slot.
	d.slots.mu.Lock()
	planted := 0
	for _, s := range d.slots.all {
		stale.refs.Add(1)
		if prev := s.view.Swap(stale); prev != nil && prev != slotInUse {
			prev.unref()
		}
		planted++
	}
	d.slots.mu.Unlock()
	require.Positive(t, planted)

	for i := 0; i < 2*planted; i++ {
		v, err := d.Get([]byte("a"), nil)
		require.NoError(t, err)
		require.Equal(t, "new", string(v))
		v, err = d.Get([]byte("b"), nil)
		require.NoError(t, err)
		require.Equal(t, "only-new", string(v))
	}
	d.slots.scrape()
	require.Equal(t, int32(1), stale.refs.Load(), "a slot's stale reference was kept or dropped twice")
	stale.unref()
}

// Gets from several goroutines while writers overwrite keys, flushes and
// compactions replace the view, and finally Close runs: every Get sees at
// least the value acknowledged for its key before it began (a read through
// a stale or unreferenced view misses it or reads a recycled memtable), and
// after Close every Get returns ErrClosed. Run under -race.
func TestReadSlotsConcurrentGetsDuringFlushCompactClose(t *testing.T) {
	d := openSlotTest(t, &Options{WriteBufferSize: 64 << 10, Level0FileNumCompactionTrigger: 2})
	const keys = 200
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%04d", i)) }
	var acked [keys]atomic.Uint64 // the highest value acknowledged per key
	val := make([]byte, 200)

	stop := make(chan struct{})
	// closed is set just before Close starts, closeDone once it returned.
	var closed, closeDone atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	// One writer per key range, so each key's values only grow.
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			buf := append([]byte(nil), val...)
			for n := uint64(1); ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				i := w*keys/2 + int(n)%(keys/2)
				binary.BigEndian.PutUint64(buf, n)
				if err := d.Put(key(i), buf, nil); err != nil {
					if !closed.Load() {
						report(err)
					}
					return
				}
				acked[i].Store(n)
			}
		}(w)
	}
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := rng.Intn(keys)
				want := acked[i].Load()
				wasClosed := closeDone.Load()
				v, err := d.Get(key(i), nil)
				switch {
				case errors.Is(err, ErrClosed):
					if !closed.Load() {
						report(errors.Newf("key %d: ErrClosed before Close", i))
					}
					continue
				case wasClosed:
					report(errors.Newf("key %d: Get after Close returned %v", i, err))
					return
				case errors.Is(err, ErrNotFound):
					if want > 0 {
						report(errors.Newf("key %d: not found, %d acknowledged", i, want))
					}
					continue
				case err != nil:
					report(err)
					return
				}
				if got := binary.BigEndian.Uint64(v); got < want || len(v) != len(val) {
					report(errors.Newf("key %d: read %d (%d bytes), %d acknowledged", i, got, len(v), want))
				}
			}
		}(int64(r))
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := d.Flush(); err != nil && !closed.Load() {
				report(err)
				return
			}
			if err := d.CompactRange(nil, nil); err != nil && !closed.Load() {
				report(err)
				return
			}
		}
	}()

	time.Sleep(time.Second)
	closed.Store(true)
	closeErr := d.Close()
	closeDone.Store(true)
	time.Sleep(50 * time.Millisecond) // Gets after Close
	close(stop)
	wg.Wait()
	require.NoError(t, closeErr)
	select {
	case err := <-errs:
		require.NoError(t, err)
	default:
	}
	// No slot pins a view but the closed one.
	cur := d.def.readState.Load()
	require.True(t, cur.closed)
	d.slots.mu.Lock()
	defer d.slots.mu.Unlock()
	for _, s := range d.slots.all {
		v := s.view.Load()
		require.True(t, v == nil || v == cur, "a slot holds a view older than the closed one")
	}
}

// The read counters a Get keeps in its slot show in the properties and
// Metrics, summed with the iterators' counts.
func TestReadSlotsCounters(t *testing.T) {
	d := openSlotTest(t, &Options{DisableAutoCompactions: true, BloomBitsPerKey: 10})
	defer d.Close()
	require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
	require.NoError(t, d.Put([]byte("c"), []byte("3"), nil))
	require.NoError(t, d.Flush())
	_, err := d.Get([]byte("a"), nil) // opens the table: a table cache miss
	require.NoError(t, err)
	before := d.Metrics()
	const n = 10
	for i := 0; i < n; i++ {
		_, err = d.Get([]byte("a"), nil)
		require.NoError(t, err)
		_, err = d.Get([]byte("b"), nil) // in the table's range; its filter says no
		require.ErrorIs(t, err, ErrNotFound)
	}
	after := d.Metrics()
	require.Equal(t, before.TableCache.Hits+2*n, after.TableCache.Hits)
	require.Equal(t, before.Filter.Checks+2*n, after.Filter.Checks)
	require.Equal(t, before.Filter.Useful+n, after.Filter.Useful)
	checks, ok := d.GetProperty(PropFilterChecks)
	require.True(t, ok)
	require.Equal(t, fmt.Sprint(after.Filter.Checks), checks)
}
