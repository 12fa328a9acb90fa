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

func openMemTest(t *testing.T, opts *Options) *DB {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/db", 0o755))
	opts.CreateIfMissing, opts.FS = true, fs
	d, err := Open("/db", opts)
	require.NoError(t, err)
	return d
}

// Gets from several goroutines while writers overwrite keys, flushes and
// compactions replace the view, and finally Close runs: every Get sees at
// least the value acknowledged for its key before it began (a read through
// a stale or unreferenced view misses it or reads a recycled memtable), and
// after Close every Get returns ErrClosed. Run under -race.
func TestConcurrentGetsDuringFlushCompactClose(t *testing.T) {
	d := openMemTest(t, &Options{WriteBufferSize: 64 << 10, Level0FileNumCompactionTrigger: 2})
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
}
