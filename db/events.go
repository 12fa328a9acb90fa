package db

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/version"
)

// EventListener receives notice of the database's background work, in the
// manner of Pebble's EventListener and RocksDB's EventListener. Every field
// is optional. Set it in Options.EventListener.
//
// Delivery: events are queued when they happen and delivered, in the order
// they happened, by one goroutine of the DB, never with the DB's internal
// mutex held. A listener may therefore call back into the DB (GetProperty,
// Metrics, Get, even Put or Flush); it must not call Close, which waits for
// the queue to drain. A slow listener delays later events, not the
// database. Because delivery is asynchronous, an event may arrive after the
// call that caused it returned; Close delivers every queued event before
// it returns.
type EventListener struct {
	// BackgroundError: a flush, compaction, WAL write or MANIFEST update
	// failed; writes now fail with this error (reads go on).
	BackgroundError func(error)
	// FlushBegin and FlushEnd bracket the flush of one memtable to L0.
	FlushBegin func(FlushInfo)
	FlushEnd   func(FlushInfo)
	// CompactionBegin and CompactionEnd bracket one compaction (trivial
	// moves included).
	CompactionBegin func(CompactionInfo)
	CompactionEnd   func(CompactionInfo)
	// TableCreated: a flush or compaction finished writing a table and
	// recorded it in the MANIFEST.
	TableCreated func(TableCreateInfo)
	// TableDeleted: an obsolete table file was deleted.
	TableDeleted func(TableDeleteInfo)
	// WALCreated and WALDeleted: a write-ahead log was created, or deleted
	// once all its writes were flushed.
	WALCreated func(WALCreateInfo)
	WALDeleted func(WALDeleteInfo)
	// WriteStallBegin and WriteStallEnd bracket a time during which writes
	// wait for background work (every memtable full, too many L0 files, or
	// too many pending compaction bytes). The short slowdown of a single
	// write is not reported.
	WriteStallBegin func(WriteStallBeginInfo)
	WriteStallEnd   func()
	// TableIngested: DB.Ingest added tables.
	TableIngested func(TableIngestInfo)
}

// TableInfo describes one table file.
type TableInfo struct {
	FileNum uint64
	Level   int
	Size    uint64
	// Smallest and Largest are the smallest and largest user keys.
	Smallest, Largest []byte
}

func tableInfo(level int, m *version.FileMetadata) TableInfo {
	return TableInfo{FileNum: m.FileNum, Level: level, Size: m.Size,
		Smallest: append([]byte(nil), m.Smallest.UserKey...), Largest: append([]byte(nil), m.Largest.UserKey...)}
}

// FlushInfo describes a flush. Output, Duration and Err are set at its end.
type FlushInfo struct {
	JobID int
	// ColumnFamilyName is the family the job belongs to.
	ColumnFamilyName string
	// InputBytes is the memory the flushed memtable used.
	InputBytes uint64
	// Output is the table written (none when the memtable held nothing).
	Output   []TableInfo
	Duration time.Duration
	Done     bool
	Err      error
}

// LevelInfo is the input of a compaction from one level.
type LevelInfo struct {
	Level  int
	Tables []TableInfo
}

// CompactionInfo describes a compaction. Output, OutputBytes, Duration and
// Err are set at its end.
type CompactionInfo struct {
	JobID int
	// ColumnFamilyName is the family the job belongs to.
	ColumnFamilyName string
	// Reason: "auto", "manual" or "move" (a trivial move of one file).
	Reason      string
	Input       []LevelInfo
	OutputLevel int
	Output      []TableInfo
	InputBytes  uint64
	OutputBytes uint64
	Duration    time.Duration
	Done        bool
	Err         error
}

// TableCreateInfo describes a new table.
type TableCreateInfo struct {
	JobID int
	// ColumnFamilyName is the family the table belongs to.
	ColumnFamilyName string
	// Reason: "flush" or "compaction".
	Reason string
	Path   string
	Table  TableInfo
}

// TableDeleteInfo describes a deleted table file.
type TableDeleteInfo struct {
	FileNum uint64
	Path    string
	Err     error
}

// WALCreateInfo describes a new WAL.
type WALCreateInfo struct {
	FileNum uint64
	Path    string
}

// WALDeleteInfo describes a deleted WAL.
type WALDeleteInfo struct {
	FileNum uint64
	Path    string
	Err     error
}

// WriteStallBeginInfo says why writes stall.
type WriteStallBeginInfo struct {
	// ColumnFamilyName is the family whose memtables or debt stall the
	// write (a write stalls on the family it writes to).
	ColumnFamilyName string
	// Reason: "memtables full", "too many L0 files" or "pending compaction
	// bytes".
	Reason string
}

// TableIngestInfo describes an ingestion.
type TableIngestInfo struct {
	// ColumnFamilyName is the family the files went into.
	ColumnFamilyName string
	// Paths are the ingested files as given to Ingest.
	Paths []string
	// Tables are the tables in the database, with the levels they went to.
	Tables []TableInfo
	// GlobalSeqNum is the sequence number the ingested keys were given.
	GlobalSeqNum uint64
}

// eventQueue delivers events in order from one goroutine, outside DB.mu.
type eventQueue struct {
	mu      sync.Mutex
	cond    sync.Cond
	pending []func()
	closing bool
	done    chan struct{}
	jobs    atomic.Int64
}

// startEvents starts delivery when a listener is set or a LOG may be
// written.
func (d *DB) startEvents() {
	d.lis = d.opts.EventListener
	if d.lis == nil {
		if d.opts.Logger == nil && d.opts.ReadOnly {
			return
		}
		d.lis = &EventListener{} // events feed the log only
	}
	q := &eventQueue{done: make(chan struct{})}
	q.cond.L = &q.mu
	d.events = q
	go q.run()
}

func (q *eventQueue) run() {
	defer close(q.done)
	q.mu.Lock()
	for {
		for len(q.pending) == 0 && !q.closing {
			q.cond.Wait()
		}
		if len(q.pending) == 0 {
			q.mu.Unlock()
			return
		}
		batch := q.pending
		q.pending = nil
		q.mu.Unlock()
		for _, f := range batch {
			f()
		}
		q.mu.Lock()
	}
}

func (q *eventQueue) push(f func()) {
	q.mu.Lock()
	q.pending = append(q.pending, f)
	q.cond.Signal()
	q.mu.Unlock()
}

// stopEvents delivers what is queued and stops the goroutine.
func (d *DB) stopEvents() {
	q := d.events
	if q == nil {
		return
	}
	q.mu.Lock()
	q.closing = true
	q.cond.Signal()
	q.mu.Unlock()
	<-q.done
}

// listener returns the listener (empty when only the log hears events),
// or nil when events are off.
func (d *DB) listener() *EventListener {
	if d.events == nil {
		return nil
	}
	return d.lis
}

func (d *DB) newJobID() int {
	if d.events == nil {
		return 0
	}
	return int(d.events.jobs.Add(1))
}

func (d *DB) evBackgroundError(err error) {
	d.logf(slog.LevelError, "background error: writes stop", "err", err)
	if l := d.listener(); l != nil && l.BackgroundError != nil {
		d.events.push(func() { l.BackgroundError(err) })
	}
}

func (d *DB) evFlushBegin(info FlushInfo) {
	if l := d.listener(); l != nil && l.FlushBegin != nil {
		d.events.push(func() { l.FlushBegin(info) })
	}
}

// evFlushEnd reports the end of a flush and the table it created.
func (d *DB) evFlushEnd(info FlushInfo, meta *version.FileMetadata, start time.Time, err error) {
	l := d.listener()
	if l == nil {
		return
	}
	info.Done, info.Err, info.Duration = true, err, time.Since(start)
	if meta != nil && err == nil {
		info.Output = []TableInfo{tableInfo(0, meta)}
		d.evTableCreated(info.JobID, info.ColumnFamilyName, "flush", info.Output[0])
		d.logf(slog.LevelInfo, "flush finished", "job", info.JobID, "table", meta.FileNum,
			"bytes", meta.Size, "memtable_bytes", info.InputBytes, "duration", info.Duration)
	} else if err != nil {
		d.logf(slog.LevelError, "flush failed", "job", info.JobID, "err", err)
	}
	if l.FlushEnd != nil {
		d.events.push(func() { l.FlushEnd(info) })
	}
}

func (d *DB) evTableCreated(job int, family, reason string, t TableInfo) {
	if l := d.listener(); l != nil && l.TableCreated != nil {
		info := TableCreateInfo{JobID: job, ColumnFamilyName: family, Reason: reason, Table: t,
			Path: d.path(base.MakeFilename(base.FileKindTable, t.FileNum))}
		d.events.push(func() { l.TableCreated(info) })
	}
}

// compactionInfo describes c before it runs.
func (d *DB) compactionInfo(c *compaction) CompactionInfo {
	p := c.pick
	info := CompactionInfo{JobID: d.newJobID(), ColumnFamilyName: c.cf.name, Reason: "auto", OutputLevel: p.OutputLevel}
	switch {
	case c.kind == compactionMove:
		info.Reason = "move"
	case c.manual:
		info.Reason = "manual"
	}
	for i, files := range p.Inputs {
		level := p.StartLevel
		if i == 1 {
			level = p.OutputLevel
		}
		if len(files) == 0 || (i == 1 && level == p.StartLevel) {
			continue
		}
		li := LevelInfo{Level: level}
		for _, f := range files {
			li.Tables = append(li.Tables, tableInfo(level, f))
			info.InputBytes += f.Size
		}
		info.Input = append(info.Input, li)
	}
	return info
}

func (d *DB) evCompactionBegin(c *compaction) (CompactionInfo, bool) {
	l := d.listener()
	if l == nil {
		return CompactionInfo{}, false
	}
	info := d.compactionInfo(c)
	if l.CompactionBegin != nil {
		begin := info
		d.events.push(func() { l.CompactionBegin(begin) })
	}
	return info, true
}

func (d *DB) evCompactionEnd(info CompactionInfo, c *compaction, start time.Time, err error) {
	l := d.listener()
	if l == nil {
		return
	}
	info.Done, info.Err, info.Duration = true, err, time.Since(start)
	defer func() {
		if err != nil {
			d.logf(slog.LevelWarn, "compaction failed", "job", info.JobID, "reason", info.Reason, "err", err)
			return
		}
		var in strings.Builder
		for _, li := range info.Input {
			fmt.Fprintf(&in, "L%d:%d ", li.Level, len(li.Tables))
		}
		d.logf(slog.LevelInfo, "compaction finished", "job", info.JobID, "reason", info.Reason,
			"inputs", strings.TrimSpace(in.String()), "output_level", info.OutputLevel, "outputs", len(info.Output),
			"bytes_in", info.InputBytes, "bytes_out", info.OutputBytes, "duration", info.Duration)
	}()
	if err == nil {
		for _, f := range c.outputs {
			t := tableInfo(c.pick.OutputLevel, f)
			info.Output = append(info.Output, t)
			info.OutputBytes += f.Size
			if c.kind != compactionMove {
				d.evTableCreated(info.JobID, info.ColumnFamilyName, "compaction", t)
			}
		}
	}
	if l.CompactionEnd != nil {
		d.events.push(func() { l.CompactionEnd(info) })
	}
}

// evFileDeleted reports the deletion of a table or WAL.
func (d *DB) evFileDeleted(kind base.FileKind, num uint64, path string, err error) {
	l := d.listener()
	if l == nil {
		return
	}
	if kind == base.FileKindTable || kind == base.FileKindLog {
		d.logf(slog.LevelInfo, "deleted file", "file", path, "err", err)
	}
	switch {
	case kind == base.FileKindTable && l.TableDeleted != nil:
		info := TableDeleteInfo{FileNum: num, Path: path, Err: err}
		d.events.push(func() { l.TableDeleted(info) })
	case kind == base.FileKindLog && l.WALDeleted != nil:
		info := WALDeleteInfo{FileNum: num, Path: path, Err: err}
		d.events.push(func() { l.WALDeleted(info) })
	}
}

func (d *DB) evWALCreated(num uint64, path string) {
	d.logf(slog.LevelInfo, "created WAL", "file", path)
	if l := d.listener(); l != nil && l.WALCreated != nil {
		info := WALCreateInfo{FileNum: num, Path: path}
		d.events.push(func() { l.WALCreated(info) })
	}
}

// evStallBeginLocked reports the start of a stall of a write to family
// once; d.mu must be held.
func (d *DB) evStallBeginLocked(family, reason string) {
	l := d.listener()
	if l == nil || d.mu.stalled {
		return
	}
	d.mu.stalled = true
	d.logf(slog.LevelWarn, "write stall begins", "column_family", family, "reason", reason)
	if l.WriteStallBegin != nil {
		info := WriteStallBeginInfo{ColumnFamilyName: family, Reason: reason}
		d.events.push(func() { l.WriteStallBegin(info) })
	}
}

// evStallEndLocked reports the end of a stall begun; d.mu must be held.
func (d *DB) evStallEndLocked() {
	if !d.mu.stalled {
		return
	}
	d.mu.stalled = false
	d.logf(slog.LevelInfo, "write stall ends")
	if l := d.listener(); l != nil && l.WriteStallEnd != nil {
		d.events.push(l.WriteStallEnd)
	}
}

func (d *DB) evIngested(cf *ColumnFamily, files []*ingestFile, ve *version.Edit, seq base.SeqNum) {
	l := d.listener()
	if l == nil {
		return
	}
	info := TableIngestInfo{ColumnFamilyName: cf.name, Paths: ingestPaths(files), GlobalSeqNum: uint64(seq)}
	for _, e := range ve.NewFiles {
		info.Tables = append(info.Tables, tableInfo(e.Level, e.Meta))
		d.logf(slog.LevelInfo, "ingested table", "table", e.Meta.FileNum, "level", e.Level, "bytes", e.Meta.Size, "seq", uint64(seq))
	}
	if l.TableIngested == nil {
		return
	}
	d.events.push(func() { l.TableIngested(info) })
}

func ingestPaths(files []*ingestFile) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.path
	}
	return out
}
