package db_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// watchFS records every change made through it once closed is set, and
// calls onCreate (when set) before each Create. onCreate is atomic: the DB
// creates files on its own goroutines (the WAL created ahead) while a test
// sets it.
type watchFS struct {
	vfs.FS
	closed   atomic.Bool
	onCreate atomic.Pointer[func(name string)]
	mu       sync.Mutex
	late     []string // changes made after closed was set
}

func (w *watchFS) note(op, name string) {
	if w.closed.Load() {
		w.mu.Lock()
		w.late = append(w.late, op+" "+filepath.Base(name))
		w.mu.Unlock()
	}
}

func (w *watchFS) lateChanges() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.late...)
}

func (w *watchFS) Create(name string) (vfs.File, error) {
	if f := w.onCreate.Load(); f != nil {
		(*f)(name)
	}
	w.note("create", name)
	f, err := w.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &watchFile{File: f, w: w, name: name}, nil
}

func (w *watchFS) Remove(name string) error {
	w.note("remove", name)
	return w.FS.Remove(name)
}

func (w *watchFS) Rename(oldname, newname string) error {
	w.note("rename", newname)
	return w.FS.Rename(oldname, newname)
}

type watchFile struct {
	vfs.File
	w    *watchFS
	name string
}

func (f *watchFile) Write(p []byte) (int, error) {
	f.w.note("write", f.name)
	return f.File.Write(p)
}

func (f *watchFile) Sync() error {
	f.w.note("sync", f.name)
	return f.File.Sync()
}

// TestCloseWaitsForCompactRange calls Close while a CompactRange on another
// goroutine has just created its output table. Close must wait for the
// compaction (or the compaction must give up) before it returns: nothing
// may write to the directory afterwards.
func TestCloseWaitsForCompactRange(t *testing.T) {
	fs := &watchFS{FS: vfs.Default}
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, FS: fs, DisableAutoCompactions: true})
	require.NoError(t, err)
	val := make([]byte, 100)
	for f := 0; f < 4; f++ {
		for i := 0; i < 500; i++ {
			require.NoError(t, d.Put([]byte(fmt.Sprintf("k%05d", (i*7+f)%1000)), val, nil))
		}
		require.NoError(t, d.Flush())
	}
	var armed atomic.Bool
	inCompaction := make(chan struct{})
	onCreate := func(name string) {
		if !strings.HasSuffix(name, ".sst") || !armed.CompareAndSwap(true, false) {
			return
		}
		close(inCompaction)
		// Go on only once Close has begun, so that Close and the rest of
		// the compaction overlap.
		for !db.IsClosing(d) {
			runtime.Gosched()
		}
	}
	fs.onCreate.Store(&onCreate)
	armed.Store(true)
	done := make(chan error, 1)
	go func() { done <- d.CompactRange(nil, nil) }()
	<-inCompaction
	require.NoError(t, d.Close())
	fs.closed.Store(true)
	after := dirState(t, dir)
	if err := <-done; err != nil {
		require.Truef(t, errors.Is(err, db.ErrClosed), "CompactRange racing Close: %v", err)
	}
	require.Empty(t, fs.lateChanges(), "changes to the directory after Close returned")
	require.Equal(t, after, dirState(t, dir), "the directory changed after Close returned")
}

// closeRaceIters is the number of rounds of TestCloseWaitsForManualWork;
// STRATA_CLOSE_RACE_ITERS raises it.
func closeRaceIters(t *testing.T) int {
	if s := os.Getenv("STRATA_CLOSE_RACE_ITERS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		return n
	}
	return 20
}

// dirState describes every file of dir: name, size, mode and a hash of the
// contents.
func dirState(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		info, err := e.Info()
		require.NoError(t, err)
		out = append(out, fmt.Sprintf("%s %d %v %x", e.Name(), len(b), info.ModTime().UnixNano(), sha256.Sum256(b)))
	}
	sort.Strings(out)
	return out
}

// TestCloseWaitsForManualWork races Close with CompactRange, Flush and
// SetOptions calls and writes on other goroutines. Each call must return nil
// or ErrClosed, and once Close has returned nothing may change in the
// directory: the calls still running finish or give up without writing.
func TestCloseWaitsForManualWork(t *testing.T) {
	for iter := 0; iter < closeRaceIters(t); iter++ {
		dir := t.TempDir()
		fs := &watchFS{FS: vfs.Default}
		d, err := db.Open(dir, &db.Options{CreateIfMissing: true, FS: fs, WriteBufferSize: 64 << 10,
			DisableAutoCompactions: iter%2 == 0, Level0FileNumCompactionTrigger: 2})
		require.NoError(t, err)
		val := make([]byte, 100)
		for f := 0; f < 4; f++ {
			for i := 0; i < 200; i++ {
				require.NoError(t, d.Put([]byte(fmt.Sprintf("k%05d", (i*7+f)%500)), val, nil))
			}
			require.NoError(t, d.Flush())
		}

		start := make(chan struct{})
		type result struct {
			op  string
			err error
		}
		ops := []func() result{
			func() result { return result{"CompactRange", d.CompactRange(nil, nil)} },
			func() result { return result{"CompactRange(range)", d.CompactRange([]byte("k001"), []byte("k003"))} },
			func() result { return result{"Flush", d.Flush()} },
			func() result {
				return result{"SetOptions", d.SetOptions(map[string]string{"level0_file_num_compaction_trigger": "3"})}
			},
			func() result {
				for i := 0; i < 100; i++ {
					if err := d.Put([]byte(fmt.Sprintf("w%05d", i)), val, nil); err != nil {
						return result{"Put", err}
					}
				}
				return result{"Put", nil}
			},
		}
		results := make(chan result, len(ops))
		for _, op := range ops {
			go func() {
				<-start
				results <- op()
			}()
		}
		close(start)
		require.NoError(t, d.Close())
		fs.closed.Store(true)
		after := dirState(t, dir)
		for range ops {
			r := <-results
			if r.err != nil {
				require.Truef(t, errors.Is(r.err, db.ErrClosed), "%s racing Close: %v", r.op, r.err)
			}
		}
		require.Empty(t, fs.lateChanges(), "changes to the directory after Close returned (round %d)", iter)
		require.Equal(t, after, dirState(t, dir), "the directory changed after Close returned (round %d)", iter)

		// The database reopens with everything written before the race.
		d, err = db.Open(dir, nil)
		require.NoError(t, err)
		_, err = d.Get([]byte("k00007"), nil)
		require.NoError(t, err)
		require.NoError(t, d.Close())
	}
}

// gatedFS holds every table creation until gate is closed, so that a
// flush cannot finish.
type gatedFS struct {
	vfs.FS
	gate    chan struct{}
	waiting atomic.Int32
}

func (g *gatedFS) Create(name string) (vfs.File, error) {
	if strings.HasSuffix(name, ".sst") {
		g.waiting.Add(1)
		<-g.gate
	}
	return g.FS.Create(name)
}

// TestCloseEndsWriteStall: a writer stalled because every memtable is full
// (the flush cannot finish) holds the commit lock that Close needs to drain
// the pipeline; Close wakes it and it returns ErrClosed, instead of Close
// waiting behind it until the stall ends on its own.
func TestCloseEndsWriteStall(t *testing.T) {
	fs := &gatedFS{FS: vfs.NewMem(), gate: make(chan struct{})}
	stalled := make(chan struct{}, 1)
	d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true, WriteBufferSize: 64 << 10,
		EventListener: &db.EventListener{WriteStallBegin: func(db.WriteStallBeginInfo) {
			select {
			case stalled <- struct{}{}:
			default:
			}
		}}})
	require.NoError(t, err)
	value := make([]byte, 1024)
	putErr := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			if err := d.Put([]byte(fmt.Sprintf("k%06d", i)), value, nil); err != nil {
				putErr <- err
				return
			}
		}
	}()
	// Wait until the writer is stalled behind the held flush.
	select {
	case <-stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer never stalled")
	}
	for fs.waiting.Load() == 0 {
		time.Sleep(time.Millisecond) // the flush reaches its table's creation
	}
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	var stalledErr error
	select {
	case stalledErr = <-putErr:
	case <-time.After(5 * time.Second):
	}
	close(fs.gate) // let the flush, and so Close, finish either way
	require.NoError(t, <-closed)
	require.ErrorIs(t, stalledErr, db.ErrClosed, "the stalled writer did not return when Close began")
}
