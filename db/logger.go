package db

import (
	"bytes"
	"context"
	"fmt"
	"github.com/stratadb/strata/internal/optionsfile"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/vfs"
)

// Logger receives the database's informational log: the options at Open,
// WAL recovery, flushes, compactions, write stalls, ingestions and
// background errors. Nothing is logged per read or write. *slog.Logger
// implements it, so any slog handler can be used; slog.New(slog.DiscardHandler)
// turns the log off.
//
// The default, when Options.Logger is nil, writes text records (log/slog's
// TextHandler) to the file LOG in the database directory, as RocksDB does;
// at Open an existing LOG is renamed LOG.old.<microseconds since 1970>, as
// RocksDB rotates it. The records of Open are kept in memory until Open
// succeeds, so that a failed Open leaves the directory as it was (unlike
// RocksDB, which writes its LOG first). A read-only database writes no LOG.
//
// Records are handed to the Logger by one goroutine of the DB, in order,
// never with the DB's mutex held (the same queue as EventListener events);
// Close delivers those queued before it returns.
type Logger interface {
	Log(ctx context.Context, level slog.Level, msg string, args ...any)
}

// infoLogWriter is where the default logger writes: a buffer until Open
// has succeeded (a failed Open leaves the directory as it was), then the
// LOG file.
type infoLogWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
	f   vfs.File
	err error
}

func (w *infoLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return w.buf.Write(p)
	}
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.f.Write(p)
	w.err = err
	return n, err
}

// openInfoLog sets up d.logger: Options.Logger, or the default one, which
// buffers until startInfoLogFile.
func (d *DB) openInfoLog() error {
	if d.opts.Logger != nil {
		d.logger = d.opts.Logger
		return nil
	}
	if d.opts.ReadOnly {
		return nil
	}
	d.infoLogW = &infoLogWriter{}
	d.logger = slog.New(slog.NewTextHandler(d.infoLogW, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return nil
}

// startInfoLogFile rotates LOG and moves the default logger's records to
// a new LOG, once Open has succeeded.
func (d *DB) startInfoLogFile() error {
	w := d.infoLogW
	if w == nil {
		return nil
	}
	name := d.path(base.MakeFilename(base.FileKindInfoLog, 0))
	if _, err := d.fs.Stat(name); err == nil {
		old := fmt.Sprintf("%s.old.%d", name, time.Now().UnixMicro())
		if err := d.fs.Rename(name, old); err != nil {
			return errors.Wrapf(err, "strata: rotating %s", name)
		}
	}
	f, err := d.fs.Create(name)
	if err != nil {
		return errors.Wrapf(err, "strata: creating %s", name)
	}
	d.pruneOldInfoLogs()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := f.Write(w.buf.Bytes()); err != nil {
		f.Close()
		return errors.Wrapf(err, "strata: writing %s", name)
	}
	w.buf = bytes.Buffer{}
	w.f = f
	return nil
}

// pruneOldInfoLogs deletes the oldest LOG.old.<timestamp> files so that at
// most KeepLogFileNum info logs remain, LOG included, as RocksDB does with
// keep_log_file_num. Failures are not errors: the next Open tries again.
func (d *DB) pruneOldInfoLogs() {
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return
	}
	prefix := base.MakeFilename(base.FileKindInfoLog, 0) + ".old."
	type old struct {
		name string
		ts   uint64
	}
	var olds []old
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, prefix)
		if !ok {
			continue
		}
		ts, err := strconv.ParseUint(rest, 10, 64)
		if err != nil {
			continue // not a name Strata or RocksDB writes: leave it
		}
		olds = append(olds, old{n, ts})
	}
	keep := d.opts.KeepLogFileNum - 1
	if len(olds) <= keep {
		return
	}
	sort.Slice(olds, func(i, j int) bool { return olds[i].ts < olds[j].ts })
	for _, o := range olds[:len(olds)-keep] {
		_ = d.fs.Remove(d.path(o.name))
	}
}

// closeInfoLog closes the LOG file, after the last record was delivered.
func (d *DB) closeInfoLog() error {
	w := d.infoLogW
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.f
	w.f, w.err = nil, errors.Wrap(ErrClosed, "strata: LOG closed")
	if f == nil {
		return nil
	}
	return errors.CombineErrors(f.Sync(), f.Close())
}

// logf queues one log record. Arguments are key-value pairs as for slog.
func (d *DB) logf(level slog.Level, msg string, args ...any) {
	if d.logger == nil || d.events == nil {
		return
	}
	l := d.logger
	d.events.push(func() { l.Log(context.Background(), level, msg, args...) })
}

// logOptionsLocked records the options in force, one record per setting.
func (d *DB) logOptions() {
	if d.logger == nil {
		return
	}
	d.logf(slog.LevelInfo, "open", "dir", d.dirname, "read_only", d.opts.ReadOnly,
		"wal_recovery_mode", d.opts.WALRecoveryMode.String())
	for _, e := range d.optionsEntries() {
		if e.Section == optionsfile.SecVersion {
			continue
		}
		d.logf(slog.LevelInfo, "option", "section", e.Section, "name", e.Key, "value", e.Value)
	}
}
