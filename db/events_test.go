package db_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// eventLog records events as "Kind detail" lines, and the infos.
type eventLog struct {
	mu          sync.Mutex
	lines       []string
	flushes     []db.FlushInfo
	compactions []db.CompactionInfo
	created     []db.TableCreateInfo
	deleted     []db.TableDeleteInfo
	walsMade    []db.WALCreateInfo
	walsGone    []db.WALDeleteInfo
	ingests     []db.TableIngestInfo
	bgErrs      []error
}

func (e *eventLog) add(line string, f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lines = append(e.lines, line)
	if f != nil {
		f()
	}
}

func (e *eventLog) listener(onFlushEnd func()) *db.EventListener {
	return &db.EventListener{
		BackgroundError: func(err error) { e.add("BackgroundError", func() { e.bgErrs = append(e.bgErrs, err) }) },
		FlushBegin:      func(i db.FlushInfo) { e.add(fmt.Sprintf("FlushBegin %d", i.JobID), nil) },
		FlushEnd: func(i db.FlushInfo) {
			if onFlushEnd != nil {
				onFlushEnd()
			}
			e.add(fmt.Sprintf("FlushEnd %d", i.JobID), func() { e.flushes = append(e.flushes, i) })
		},
		CompactionBegin: func(i db.CompactionInfo) { e.add(fmt.Sprintf("CompactionBegin %d", i.JobID), nil) },
		CompactionEnd: func(i db.CompactionInfo) {
			e.add(fmt.Sprintf("CompactionEnd %d", i.JobID), func() { e.compactions = append(e.compactions, i) })
		},
		TableCreated: func(i db.TableCreateInfo) { e.add("TableCreated", func() { e.created = append(e.created, i) }) },
		TableDeleted: func(i db.TableDeleteInfo) { e.add("TableDeleted", func() { e.deleted = append(e.deleted, i) }) },
		WALCreated:   func(i db.WALCreateInfo) { e.add("WALCreated", func() { e.walsMade = append(e.walsMade, i) }) },
		WALDeleted:   func(i db.WALDeleteInfo) { e.add("WALDeleted", func() { e.walsGone = append(e.walsGone, i) }) },
		WriteStallBegin: func(i db.WriteStallBeginInfo) {
			e.add("WriteStallBegin "+i.Reason, nil)
		},
		WriteStallEnd: func() { e.add("WriteStallEnd", nil) },
		TableIngested: func(i db.TableIngestInfo) { e.add("TableIngested", func() { e.ingests = append(e.ingests, i) }) },
	}
}

// indexOf returns the position of the first line equal to s, or -1.
func (e *eventLog) indexOf(s string) int {
	for i, l := range e.lines {
		if l == s {
			return i
		}
	}
	return -1
}

// TestEventListener runs flushes, automatic and manual compactions and an
// ingestion with a listener that calls back into the DB, then checks after
// Close (which delivers every queued event) that each event came, in
// order, with information that matches the files on disk.
func TestEventListener(t *testing.T) {
	var e eventLog
	var dp atomic.Pointer[db.DB]
	var props atomic.Int64
	// Calling into the DB from a listener must not deadlock: events are
	// delivered outside DB.mu.
	onFlushEnd := func() {
		if d := dp.Load(); d != nil {
			if _, ok := d.GetProperty(db.PropNumImmutableMemTable); ok {
				props.Add(1)
			}
		}
	}
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, WriteBufferSize: 64 << 10,
		Level0FileNumCompactionTrigger: 3, EventListener: e.listener(onFlushEnd)})
	require.NoError(t, err)
	dp.Store(d)
	val := make([]byte, 100)
	for round := 0; round < 4; round++ {
		for i := 0; i < 300; i++ {
			require.NoError(t, d.Put([]byte(fmt.Sprintf("k%02d-%05d", round, i)), val, nil))
		}
		require.NoError(t, d.Flush())
	}
	require.NoError(t, d.CompactRange(nil, nil))
	ext := filepath.Join(t.TempDir(), "ext.sst")
	writeExtFile(t, vfs.Default, ext, []extOp{{key: "z1", value: "a"}, {key: "z2", value: "b"}})
	require.NoError(t, d.Ingest([]string{ext}, nil))
	dp.Store(nil)
	require.NoError(t, d.Close())

	e.mu.Lock()
	defer e.mu.Unlock()
	require.NotZero(t, props.Load(), "the listener read a property")
	require.Empty(t, e.bgErrs)

	// Flushes: begin before end, an L0 output each, announced as created.
	require.GreaterOrEqual(t, len(e.flushes), 4)
	created := map[uint64]db.TableCreateInfo{}
	for _, c := range e.created {
		created[c.Table.FileNum] = c
	}
	for _, f := range e.flushes {
		require.True(t, f.Done)
		require.NoError(t, f.Err)
		require.Less(t, e.indexOf(fmt.Sprintf("FlushBegin %d", f.JobID)), e.indexOf(fmt.Sprintf("FlushEnd %d", f.JobID)))
		require.NotZero(t, f.InputBytes)
		require.Len(t, f.Output, 1)
		require.Equal(t, 0, f.Output[0].Level)
		require.NotZero(t, f.Output[0].Size)
		c, ok := created[f.Output[0].FileNum]
		require.True(t, ok, "flush output %d announced", f.Output[0].FileNum)
		require.Equal(t, "flush", c.Reason)
		require.Equal(t, f.JobID, c.JobID)
	}
	// Compactions: an automatic one (three L0 files) and the manual one.
	require.NotEmpty(t, e.compactions)
	reasons := map[string]bool{}
	inputs := map[uint64]bool{}
	for _, c := range e.compactions {
		reasons[c.Reason] = true
		require.True(t, c.Done)
		require.NoError(t, c.Err)
		require.Less(t, e.indexOf(fmt.Sprintf("CompactionBegin %d", c.JobID)), e.indexOf(fmt.Sprintf("CompactionEnd %d", c.JobID)))
		require.NotEmpty(t, c.Input)
		var in, out uint64
		for _, l := range c.Input {
			for _, tb := range l.Tables {
				require.Equal(t, l.Level, tb.Level)
				in += tb.Size
				if c.Reason != "move" {
					inputs[tb.FileNum] = true
				}
			}
		}
		require.Equal(t, in, c.InputBytes)
		require.NotEmpty(t, c.Output)
		for _, tb := range c.Output {
			require.Equal(t, c.OutputLevel, tb.Level)
			out += tb.Size
			if c.Reason != "move" {
				require.Equal(t, "compaction", created[tb.FileNum].Reason)
			}
		}
		require.Equal(t, out, c.OutputBytes)
	}
	require.True(t, reasons["manual"] && reasons["auto"], "reasons: %v", reasons)
	// Every merged input was deleted, with an event, and is gone.
	deleted := map[uint64]bool{}
	for _, del := range e.deleted {
		require.NoError(t, del.Err)
		deleted[del.FileNum] = true
		_, err := os.Stat(del.Path)
		require.True(t, os.IsNotExist(err), del.Path)
	}
	require.Equal(t, inputs, deleted)
	// WALs: the one Open made and one per flush; all but the last deleted.
	require.GreaterOrEqual(t, len(e.walsMade), 5)
	require.Len(t, e.walsGone, len(e.walsMade)-1)
	for _, w := range e.walsGone {
		require.NoError(t, w.Err)
		require.True(t, strings.HasSuffix(w.Path, ".log"))
		_, err := os.Stat(w.Path)
		require.True(t, os.IsNotExist(err), w.Path)
	}
	// The ingestion.
	require.Len(t, e.ingests, 1)
	require.Equal(t, []string{ext}, e.ingests[0].Paths)
	require.Len(t, e.ingests[0].Tables, 1)
	require.Equal(t, "z1", string(e.ingests[0].Tables[0].Smallest))
	require.Equal(t, "z2", string(e.ingests[0].Tables[0].Largest))
	require.NotZero(t, e.ingests[0].GlobalSeqNum)
}

// blockingFS makes the creation of table files wait while armed.
type blockingFS struct {
	vfs.FS
	armed   atomic.Bool
	blocked chan struct{} // a creation is waiting
	release chan struct{}
}

func (fs *blockingFS) Create(name string) (vfs.File, error) {
	if strings.HasSuffix(name, ".sst") && fs.armed.CompareAndSwap(true, false) {
		fs.blocked <- struct{}{}
		<-fs.release
	}
	return fs.FS.Create(name)
}

// TestEventListenerWriteStall blocks a flush so that writes fill every
// memtable and stall: WriteStallBegin comes with the reason, and
// WriteStallEnd once the flush is let go.
func TestEventListenerWriteStall(t *testing.T) {
	fs := &blockingFS{FS: vfs.Default, blocked: make(chan struct{}), release: make(chan struct{})}
	stalled := make(chan string, 1)
	ended := make(chan struct{}, 1)
	l := &db.EventListener{
		WriteStallBegin: func(i db.WriteStallBeginInfo) { stalled <- i.Reason },
		WriteStallEnd:   func() { ended <- struct{}{} },
	}
	d, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true, WriteBufferSize: 64 << 10,
		MaxWriteBufferNumber: 2, EventListener: l, FS: fs})
	require.NoError(t, err)
	fs.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		val := make([]byte, 1000)
		for i := 0; i < 200; i++ {
			if err := d.Put([]byte(fmt.Sprintf("k%05d", i)), val, nil); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	<-fs.blocked // the first flush waits
	require.Equal(t, "memtables full", <-stalled)
	close(fs.release)
	<-ended
	require.NoError(t, <-done)
	require.NoError(t, d.Close())
}

// TestWriteSlowdownAfterSetOptions: with automatic compactions disabled,
// L0 at the slowdown trigger slows nothing; enabling them by SetOptions
// makes the next write, which fits in the memtable, wait its millisecond
// while the L0 compaction (blocked here) runs. (Writes that fit skip DB.mu
// while no slowdown is known: SetOptions must make them look again.)
func TestWriteSlowdownAfterSetOptions(t *testing.T) {
	fs := &blockingFS{FS: vfs.Default, blocked: make(chan struct{}), release: make(chan struct{})}
	d, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true, FS: fs,
		DisableAutoCompactions: true, Level0FileNumCompactionTrigger: 2,
		Level0SlowdownWritesTrigger: 2, Level0StopWritesTrigger: 100})
	require.NoError(t, err)
	for i := 0; i < 2; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("k%d", i)), []byte("v"), nil))
		require.NoError(t, d.Flush())
	}
	stalled := func() time.Duration { return d.Metrics().WriteStall.Duration }
	require.NoError(t, d.Put([]byte("a"), []byte("v"), nil))
	require.Zero(t, stalled(), "no slowdown while compactions are disabled")
	fs.armed.Store(true)
	require.NoError(t, d.SetOptions(map[string]string{"disable_auto_compactions": "false"}))
	<-fs.blocked // the L0 compaction waits to create its output
	require.NoError(t, d.Put([]byte("b"), []byte("v"), nil))
	require.Equal(t, time.Millisecond, stalled(), "the write after SetOptions was not slowed down")
	close(fs.release)
	require.NoError(t, d.Close())
}
