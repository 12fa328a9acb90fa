package db_test

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/internal/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// commitFaultKey is writer w's i-th key.
func commitFaultKey(w, i int) []byte { return []byte(fmt.Sprintf("w%02d/%06d", w, i)) }

// commitFaultResult is what one writer of TestCommitConcurrentWALFailure
// saw: the writes it had acknowledged, the one that failed first, and
// whether a write after that failure was refused.
type commitFaultResult struct {
	acked      int  // index of the last acknowledged write, -1 if none
	syncAcked  int  // index of the last acknowledged write made with Sync, -1 if none
	failed     bool // a write failed
	failErr    error
	afterErr   error // the write attempted after the first failure
	notVisible string
}

// TestCommitConcurrentWALFailure: more writers than cores, half of their
// writes with Sync, so that they meet in the commit pipeline (polling,
// yielding and asleep, inserting concurrently, sharing fsyncs), while the
// WAL's next write or sync fails. Every writer must see the failure (its
// own or the sticky background error, both of the injected class), a
// write after it must fail too, every write acknowledged before it must be
// visible, and a reopen must find each writer's writes as a prefix of its
// history: with every acknowledged write when nothing was lost, with every
// write acknowledged with Sync (and every write before it) after a power
// loss, and never the write after the failure.
func TestCommitConcurrentWALFailure(t *testing.T) {
	for _, op := range []errorfs.Op{errorfs.OpWrite, errorfs.OpSync} {
		for _, sticky := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sticky=%v", op, sticky), func(t *testing.T) {
				testCommitConcurrentWALFailure(t, op, sticky)
			})
		}
	}
}

// testCommitConcurrentWALFailure runs TestCommitConcurrentWALFailure with
// the next WAL operation op failing, and with sticky every one after it
// (a disk that stays broken); otherwise the writers that do not hit it
// must fail on the background error it leaves. Syncs return late, so that
// synced writers queue behind one another and share fsyncs.
func testCommitConcurrentWALFailure(t *testing.T, op errorfs.Op, sticky bool) {
	var armed, fired atomic.Bool
	inj := errorfs.InjectorFunc(func(o errorfs.Op, path string) error {
		if o != op || !strings.HasSuffix(path, ".log") {
			return nil
		}
		if armed.CompareAndSwap(true, sticky) || (sticky && armed.Load()) {
			fired.Store(true)
			return errorfs.Injected(o, path)
		}
		return nil
	})
	mem := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: errorfs.Wrap(slowSyncFS{mem}, inj), CreateIfMissing: true,
		WriteBufferSize: 256 << 10})
	require.NoError(t, err)

	const writers, maxWrites, failAfter = 8, 20000, 2000
	var total atomic.Int64
	results := make([]commitFaultResult, writers)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := &results[w]
			r.acked, r.syncAcked = -1, -1
			for i := 0; i < maxWrites; i++ {
				sync := (i+w)%2 == 0
				v := []byte(strconv.Itoa(i))
				if err := d.Put(commitFaultKey(w, i), v, &db.WriteOptions{Sync: sync}); err != nil {
					r.failed, r.failErr = true, err
					r.afterErr = d.Put(commitFaultKey(w, maxWrites), v, nil)
					return
				}
				r.acked = i
				if sync {
					r.syncAcked = i
				}
				if got, err := d.Get(commitFaultKey(w, i), nil); err != nil || !bytes.Equal(got, v) {
					r.notVisible = fmt.Sprintf("write %d read back %q, %v", i, got, err)
					return
				}
				if total.Add(1) == failAfter {
					armed.Store(true)
				}
			}
		}(w)
	}
	wg.Wait()
	crash := mem.CrashClone()
	armed.Store(false)
	require.True(t, fired.Load(), "no WAL %s failed", op)
	d.Close() // reports the background error

	for w, r := range results {
		require.Empty(t, r.notVisible, "writer %d: an acknowledged write was not visible on return", w)
		require.True(t, r.failed, "writer %d never saw the WAL failure", w)
		require.ErrorIs(t, r.failErr, errorfs.ErrInjected, "writer %d", w)
		require.ErrorIs(t, r.afterErr, errorfs.ErrInjected, "writer %d: a write after the failure", w)
	}
	check := func(name string, fs vfs.FS, lost bool) {
		d, err := db.Open("/db", &db.Options{FS: fs, WriteBufferSize: 256 << 10})
		require.NoError(t, err, name)
		defer func() { require.NoError(t, d.Close(), name) }()
		for w, r := range results {
			// The writes present form a prefix 0..k-1 of the
			// writer's history.
			k := 0
			for ; k <= r.acked+1; k++ {
				v, err := d.Get(commitFaultKey(w, k), nil)
				if err != nil {
					require.ErrorIs(t, err, db.ErrNotFound, "%s: writer %d, write %d", name, w, k)
					break
				}
				require.Equal(t, strconv.Itoa(k), string(v), "%s: writer %d, write %d", name, w, k)
			}
			for j := k + 1; j <= r.acked+1; j++ {
				_, err := d.Get(commitFaultKey(w, j), nil)
				require.ErrorIs(t, err, db.ErrNotFound, "%s: writer %d has write %d but not write %d", name, w, j, k)
			}
			_, err := d.Get(commitFaultKey(w, maxWrites), nil)
			require.ErrorIs(t, err, db.ErrNotFound, "%s: writer %d: the write after the failure survived", name, w)
			if lost {
				require.Greater(t, k, r.syncAcked, "%s: writer %d lost a write acknowledged with Sync", name, w)
			} else {
				require.Greater(t, k, r.acked, "%s: writer %d lost an acknowledged write", name, w)
			}
		}
	}
	check("reopen", mem, false)
	check("power loss", crash, true)
}
