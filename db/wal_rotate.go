package db

import (
	"log/slog"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/vfs"
)

// The WAL work of a memtable rotation, kept off the writer that rotates.
//
// A rotation runs under the commit lock and d.mu: every writer waits for it.
// Creating a WAL there (create, preallocate and map it, sync the directory)
// and closing the old one (stop its mapping helper, which may be in the
// middle of a preallocation, unmap it, trim its tail) took milliseconds on a
// busy machine, and made the slowest writes of a load. So:
//
//   - After each rotation, the next WAL is created in the background
//     (startNextWALLocked), under a file number taken then; the next
//     rotation takes it (takeNextWALLocked), waiting for it only when it
//     is not done. A WAL that could not be made ahead is made again by the
//     rotation itself, under the same number; a failure there fails the
//     rotation and is the background error (openWALLocked).
//   - With recycling on (Options.RecycleLogFileNum) no WAL is created
//     ahead: the rotation renames the oldest kept WAL and writes it with
//     write(2), with no preallocation or mapping, the costly part of a
//     create; and a WAL made ahead would take a kept file one rotation
//     early and hold one WAL file more than the RecycleLogFileNum kept
//     beside the live ones, where RocksDB holds none.
//   - A rotation whose current WAL holds no record keeps it
//     (currentWALWrittenLocked) and leaves the created-ahead WAL for the
//     next one.
//   - The old WAL is synced by the rotation, as before (its sync must be
//     done before any write lands in the new WAL, see openWALLocked), and
//     closed in the background (closeWALInBackground). A WAL is deleted or
//     kept for recycling only after its close is done (waitWALClosedLocked).
//
// The created-ahead WAL holds no record until it is current, and is in no
// list of live WALs (d.mu.wals) before: a crash leaves an empty WAL newer
// than the last one written, which recovery replays as empty and Open's
// sweep deletes (it is older than the WAL that Open starts). Close deletes
// an unused one. Both kinds of background work join d.mu.bgWG, which Close
// and a failed Open wait for.

// preparedWAL is a WAL created ahead of the rotation that makes it current.
type preparedWAL struct {
	num uint64
	// file and err are set before done is closed.
	file vfs.File
	err  error
	done chan struct{}
}

// createWALFile creates WAL num, ready to be written: a new file (mapped,
// unless Options.WALWriteSyscalls) or, when recycle is not 0, the kept WAL
// recycle renamed and overwritten (see createWALFileFrom), with its
// directory entry durable. It takes no lock. It is the one place a new
// WAL's file comes from, ahead of need or at the rotation itself.
func (d *DB) createWALFile(num, recycle uint64) (vfs.File, error) {
	name := d.path(base.MakeFilename(base.FileKindLog, num))
	f, err := d.createWALFileFrom(name, recycle)
	if err != nil {
		return nil, errors.Wrapf(err, "strata: creating WAL %s", name)
	}
	if err := d.syncDir(); err != nil {
		f.Close()
		_ = d.fs.Remove(name)
		return nil, err
	}
	return f, nil
}

// startNextWALLocked starts creating the WAL the next rotation will take,
// unless one is made already, recycling is on or the database is closing.
// d.mu must be held.
func (d *DB) startNextWALLocked() {
	if d.mu.walNext != nil || d.opts.RecycleLogFileNum > 0 || d.opts.ReadOnly || d.closed.Load() || d.mu.closing || d.mu.bgErr != nil {
		return
	}
	p := &preparedWAL{num: d.mu.versions.NextFileNum(), done: make(chan struct{})}
	d.mu.walNext = p
	d.mu.bgWG.Add(1)
	go func() {
		defer d.mu.bgWG.Done()
		p.file, p.err = d.createWALFile(p.num, 0)
		close(p.done)
	}()
}

// takeNextWALLocked returns the WAL created ahead, waiting for its creation
// if it is not done: its number and its file, or a nil file when there is
// none (num is 0) or its creation failed (num is the number reserved for
// it, which the caller uses to create it again). d.mu must be held.
func (d *DB) takeNextWALLocked() (uint64, vfs.File) {
	p := d.mu.walNext
	if p == nil {
		return 0, nil
	}
	d.mu.walNext = nil
	<-p.done
	if p.err != nil {
		d.logf(slog.LevelWarn, "creating the next WAL ahead failed; the rotation creates it", "wal", p.num, "err", p.err)
		return p.num, nil
	}
	return p.num, p.file
}

// dropNextWALLocked closes and deletes the WAL created ahead, if any: Close
// and a failed Open, after waiting for the background work. d.mu must be
// held.
func (d *DB) dropNextWALLocked() error {
	p := d.mu.walNext
	if p == nil {
		return nil
	}
	d.mu.walNext = nil
	<-p.done
	if p.err != nil {
		return nil // it failed alone, and left nothing (createWALFile)
	}
	err := p.file.Close()
	name := d.path(base.MakeFilename(base.FileKindLog, p.num))
	if rerr := d.fs.Remove(name); rerr != nil {
		err = errors.CombineErrors(err, rerr)
	}
	if err != nil {
		return errors.Wrapf(err, "strata: removing the unused WAL %06d.log", p.num)
	}
	return nil
}

// closeWALInBackground closes WAL num, which rotation replaced after syncing
// it, on a goroutine of its own. Its failure is the background error (its
// records are durable, but the directory may keep its preallocated tail, and
// a file system that fails a close is one to stop writing to). d.mu must be
// held.
func (d *DB) closeWALInBackground(num uint64, f vfs.File) {
	done := make(chan struct{})
	if d.mu.walClosing == nil {
		d.mu.walClosing = make(map[uint64]chan struct{})
	}
	d.mu.walClosing[num] = done
	d.mu.bgWG.Add(1)
	go func() {
		defer d.mu.bgWG.Done()
		err := f.Close()
		// done is closed before d.mu is taken: waitWALClosedLocked waits
		// for it under d.mu.
		close(done)
		d.mu.Lock()
		delete(d.mu.walClosing, num)
		if err != nil {
			d.setBgErrLocked(errors.Wrapf(err, "strata: closing WAL %06d.log", num))
			d.mu.cond.Broadcast()
		}
		d.mu.Unlock()
	}()
}

// waitWALClosedLocked waits until the background close of WAL num, if one
// runs, is done: a WAL is deleted only once closed (on Windows an open file
// cannot be removed). d.mu must be held; the close never needs it.
func (d *DB) waitWALClosedLocked(num uint64) {
	if done, ok := d.mu.walClosing[num]; ok {
		<-done
	}
}
