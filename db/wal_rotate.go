package db

import (
	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/vfs"
)

// The WAL work of a memtable rotation, kept off the writer that rotates.
//
// A rotation runs under the commit lock and d.mu: every writer waits for it.
// Closing the old WAL there (stop its mapping helper, which may be in the
// middle of a preallocation, unmap it, trim its tail) took milliseconds on a
// busy machine. So the old WAL is synced by the rotation, as before (its
// sync must be done before any write lands in the new WAL, see
// openWALLocked), and closed in the background (closeWALInBackground). A
// WAL is deleted only after its close is done (waitWALClosedLocked). The
// close joins d.mu.bgWG, which Close and a failed Open wait for.
//
// The new WAL's file comes from createWALFile. Creating it ahead of need,
// on another goroutine, took the rest of the rotation's time off the write
// path. The power-loss stress mode's failures with it came from crash
// images that were no instant (fixed in MemFS.CrashClone, see docs/wal.md).
// It is not done yet: it must take its file from the recycled WALs.

// createWALFile creates WAL num, ready to be written: a new file (mapped,
// unless Options.WALWriteSyscalls) or a kept one renamed and overwritten
// (Options.RecycleLogFileNum, see createWALFileLocked), with its directory
// entry durable. It is the one place a new WAL's file comes from. d.mu
// must be held (the kept WALs are under it).
func (d *DB) createWALFile(num uint64) (vfs.File, error) {
	name := d.path(base.MakeFilename(base.FileKindLog, num))
	f, err := d.createWALFileLocked(name)
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
