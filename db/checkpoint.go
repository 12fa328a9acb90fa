package db

import (
	"io"
	"os"
	"path/filepath"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/optionsfile"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
)

// checkpointTempSuffix names the staging directory a checkpoint is built in
// before it is renamed to its final name (RocksDB uses the same suffix).
const checkpointTempSuffix = ".tmp"

// Checkpoint makes a consistent, openable copy of the database in dir, which
// must not exist yet (ErrInvalidArgument otherwise) and must be on the same
// file system as the database for table files to be shared.
//
// The checkpoint holds every write acknowledged before Checkpoint was called
// and, under concurrent writes, exactly the writes up to some sequence
// number: a prefix of the acknowledged writes. It is made as RocksDB's
// Checkpoint::CreateCheckpoint with log_size_for_flush 0 makes one:
//
//  1. the memtables are flushed (DisableWAL writes included), so no WAL is
//     needed; a read-only database flushes nothing, and its WALs are copied;
//  2. the current version is pinned, so that no compaction deletes a table
//     while it is being linked;
//  3. in dir+".tmp", each table is hard-linked, or copied when the file
//     system refuses the link (across devices, say);
//  4. an OPTIONS file describing the options in force is written, and a
//     fresh MANIFEST describing exactly the pinned version, then CURRENT;
//  5. the staging directory is synced, renamed to dir, and dir's parent is
//     synced.
//
// A crash or an error at any point leaves either no dir or a complete
// checkpoint; a staging directory left by a crash is removed by the next
// Checkpoint to the same dir. The source database is never modified, apart
// from the flush.
func (d *DB) Checkpoint(dir string) (err error) {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if dir == "" {
		return errors.Wrap(ErrInvalidArgument, "strata: Checkpoint: empty directory name")
	}
	dir = filepath.Clean(dir)
	if dir == filepath.Clean(d.dirname) {
		return errors.Wrapf(ErrInvalidArgument, "strata: Checkpoint: %s is the database directory", dir)
	}
	if _, err := d.fs.Stat(dir); err == nil {
		return errors.Wrapf(ErrInvalidArgument, "strata: Checkpoint: %s already exists", dir)
	} else if !errors.Is(err, os.ErrNotExist) {
		return errors.Wrapf(err, "strata: Checkpoint: checking %s", dir)
	}
	if !d.opts.ReadOnly {
		// Every write acknowledged so far reaches a table.
		for _, cf := range d.ColumnFamilies() {
			if err := cf.Flush(); err != nil && !cf.dropped.Load() {
				return errors.Wrapf(err, "strata: Checkpoint: flushing column family %q", cf.name)
			}
		}
	}
	if f := d.testing.checkpointFlushed; f != nil {
		f()
	}
	if err := d.beginOp("Checkpoint"); err != nil {
		return err
	}
	defer d.endOp()

	var (
		fams    []version.SnapshotFamily
		st      version.SnapshotState
		nextNum uint64
		options []byte
		minLog  uint64
	)
	pin := func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if err := d.mu.bgErr; err != nil {
			return err
		}
		if !d.opts.ReadOnly && d.unflushedLocked() {
			// Writes arrived after the flushes above (or an ingestion
			// made a table newer than writes still in a memtable): the
			// tables alone would not be one point in time across the
			// families. With the pipeline drained (the caller), nothing
			// can come between this flush and the pin.
			if err := d.flushAllLocked(); err != nil {
				return errors.Wrap(err, "strata: Checkpoint: flushing the memtables")
			}
		}
		vs := d.mu.versions
		minLog = vs.MinLogNumber()
		for _, cf := range d.mu.fams {
			v := cf.mu.vf.Current()
			v.Ref()
			fams = append(fams, version.SnapshotFamily{ID: cf.id, Name: cf.name, Version: v,
				LogNumber: cf.mu.vf.LogNumber()})
		}
		st = version.SnapshotState{
			PrevLogNumber:   vs.PrevLogNumber(),
			LastSequence:    vs.LastSeq(),
			MaxColumnFamily: vs.MaxColumnFamily(),
		}
		nextNum = vs.PeekNextFileNum()
		options = optionsfile.Render(d.optionsEntries())
		return nil
	}
	if d.opts.ReadOnly {
		err = pin()
	} else {
		// Pinned with the commit pipeline drained: no write or ingestion
		// runs between the check above and the pin.
		err = d.exclusive(pin)
	}
	if err != nil {
		return err
	}
	// Tables the pinned versions alone keep become obsolete at the next
	// flush, compaction or Close, as for any released version.
	defer func() {
		for _, f := range fams {
			d.unrefVersion(f.Version)
		}
	}()
	if f := d.testing.checkpointPinned; f != nil {
		f()
	}

	var wals []uint64
	if d.opts.ReadOnly {
		l, err := d.listDir()
		if err != nil {
			return err
		}
		for _, n := range l.logs {
			if n >= minLog || (n != 0 && n == st.PrevLogNumber) {
				wals = append(wals, n)
			}
		}
		if len(l.logs) > 0 && l.logs[len(l.logs)-1] >= nextNum {
			nextNum = l.logs[len(l.logs)-1] + 1
		}
	}

	tmp := dir + checkpointTempSuffix
	if err := d.removeCheckpointDir(tmp); err != nil {
		return err
	}
	if err := vfs.MkdirAllSynced(d.fs, tmp); err != nil {
		return errors.Wrapf(err, "strata: Checkpoint: creating %s", tmp)
	}
	defer func() {
		if err != nil {
			_ = d.removeCheckpointDir(tmp)
		}
	}()

	link := true
	for _, fam := range fams {
		for _, files := range fam.Version.Levels {
			for _, f := range files {
				name := base.MakeFilename(base.FileKindTable, f.FileNum)
				src, dst := d.path(name), filepath.Join(tmp, name)
				if link {
					if vfs.Link(d.fs, src, dst) == nil {
						continue
					}
					// EXDEV, a file system without hard links, or any other
					// refusal: copy this table and the rest.
					link = false
				}
				if err := d.copyFile(src, dst, int64(f.Size)); err != nil {
					return err
				}
			}
		}
		// The blob files the version lists, linked or copied alike
		// (immutable once written, as tables are).
		for _, b := range fam.Version.BlobFiles {
			name := base.MakeFilename(base.FileKindBlob, b.FileNum)
			src, dst := d.path(name), filepath.Join(tmp, name)
			if link {
				if vfs.Link(d.fs, src, dst) == nil {
					continue
				}
				link = false
			}
			if err := d.copyFile(src, dst, -1); err != nil {
				return err
			}
		}
	}
	for _, n := range wals {
		name := base.MakeFilename(base.FileKindLog, n)
		if err := d.copyFile(d.path(name), filepath.Join(tmp, name), -1); err != nil {
			return err
		}
	}
	manifestNum, optionsNum := nextNum, nextNum+1
	st.NextFileNumber = nextNum + 2
	if err := d.writeFileSynced(filepath.Join(tmp, base.MakeFilename(base.FileKindOptions, optionsNum)), options); err != nil {
		return errors.Wrap(err, "strata: Checkpoint")
	}
	// The MANIFEST, then CURRENT: the last files of the checkpoint.
	if err := version.WriteSnapshotManifestFamilies(d.fs, tmp, manifestNum, fams, st); err != nil {
		return errors.Wrap(err, "strata: Checkpoint")
	}
	if err := syncDirPath(d.fs, tmp); err != nil {
		return err
	}
	if err := d.fs.Rename(tmp, dir); err != nil {
		return errors.Wrapf(err, "strata: Checkpoint: renaming %s to %s", tmp, dir)
	}
	return syncDirPath(d.fs, filepath.Dir(dir))
}

// copyFile copies size bytes of src (all of it when size < 0) into a new
// file dst and syncs it.
func (d *DB) copyFile(src, dst string, size int64) error {
	in, err := d.fs.Open(src)
	if err != nil {
		return errors.Wrapf(err, "strata: Checkpoint: opening %s", src)
	}
	defer in.Close()
	out, err := d.fs.Create(dst)
	if err != nil {
		return errors.Wrapf(err, "strata: Checkpoint: creating %s", dst)
	}
	var r io.Reader = in
	if size >= 0 {
		r = io.LimitReader(in, size)
	}
	buf := make([]byte, 256<<10)
	n, err := io.CopyBuffer(out, r, buf)
	if err == nil && size >= 0 && n != size {
		err = base.CorruptionErrorf("%s: %d bytes, want %d", src, n, size)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Wrapf(err, "strata: Checkpoint: copying %s to %s", src, dst)
	}
	return nil
}

// removeCheckpointDir removes a staging directory and its files, if any.
func (d *DB) removeCheckpointDir(dir string) error {
	names, err := d.fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errors.Wrapf(err, "strata: Checkpoint: listing %s", dir)
	}
	for _, name := range names {
		if err := d.fs.Remove(filepath.Join(dir, name)); err != nil {
			return errors.Wrapf(err, "strata: Checkpoint: removing %s", filepath.Join(dir, name))
		}
	}
	if err := d.fs.Remove(dir); err != nil {
		return errors.Wrapf(err, "strata: Checkpoint: removing %s", dir)
	}
	return nil
}
