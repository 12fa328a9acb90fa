package db

import (
	"bytes"
	"slices"
	"sort"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/table"
)

// IngestOptions configure DB.Ingest. The zero value (or nil) is the
// default: copy the files, flush a memtable that overlaps them, verify
// every block before anything changes.
type IngestOptions struct {
	// Move hard-links each file into the database (copying it when a link
	// is impossible, e.g. across devices) and, once the ingestion is
	// durable, removes the caller's name for it: RocksDB's move_files.
	// Without Move each file is copied and the caller's files are left as
	// they were, and stay the caller's: a link would let a caller that
	// later rewrites the path (os.Create truncates) rewrite the database's
	// table. RocksDB copies too when move_files is false.
	Move bool
	// NoBlockingFlush refuses the ingestion, with an error wrapping
	// ErrInvalidArgument, when a memtable overlaps the files and would
	// have to be flushed first: RocksDB's allow_blocking_flush = false.
	NoBlockingFlush bool
	// SkipVerify skips reading every data block of the files before the
	// ingestion: only the footer, index, filter, properties and the first
	// and last keys are read. RocksDB's default
	// (verify_checksums_before_ingest = false); it makes the cost of an
	// ingestion independent of the file size.
	SkipVerify bool
}

// ingestFile is one file being ingested.
type ingestFile struct {
	cmp     *base.Comparer // the family's order
	name    string         // as the caller gave it
	path    string         // name with its symlinks resolved: the file read and linked
	size    uint64
	fileNum uint64 // in the database, once assigned
	linked  bool   // created in the database directory (to remove on failure)
	// smallest and largest bound the user keys (largest is exclusive when
	// largestExclusive: the end of a range deletion).
	smallest, largest []byte
	largestExclusive  bool
	hasPoints         bool
	pointSmallest     []byte
	pointLargest      []byte
	tombs             []base.Tombstone
}

// Ingest adds the external table files at paths to the database,
// atomically: after a crash at any point the database holds all of them or
// none. Files come from table.ExternalWriter or RocksDB's SstFileWriter
// (`ldb write_extern_sst`); see docs/ingestion.md.
//
// The files must not overlap one another. All of them get one new sequence
// number, so they are newer than every write acknowledged before Ingest
// returns and invisible to snapshots taken before. Each goes to the
// deepest level where nothing above it overlaps it. A file whose range
// overlaps a memtable forces a flush first (refused with NoBlockingFlush).
// Bad files (damaged, unsorted, with another comparator, not written for
// ingestion) are refused before anything changes.
func (d *DB) Ingest(paths []string, opts *IngestOptions) error { return d.def.Ingest(paths, opts) }

// Ingest adds external table files to the family (see DB.Ingest). A file
// stamped with another family's id is refused; files from an SstFileWriter
// (table.ExternalWriter) carry no family and go into any.
func (cf *ColumnFamily) Ingest(paths []string, opts *IngestOptions) error {
	d := cf.d
	if err := cf.check(d); err != nil {
		return err
	}
	if d.opts.ReadOnly {
		return errors.Wrap(ErrReadOnly, "strata: Ingest on a read-only database")
	}
	if len(paths) == 0 {
		return errors.Wrap(ErrInvalidArgument, "strata: Ingest of no files")
	}
	var o IngestOptions
	if opts != nil {
		o = *opts
	}
	// Registered with Close, which waits for the ingestion to end (it then
	// fails with ErrClosed) before it releases the directory: the links,
	// syncs and removals below never run after Close has returned.
	if err := d.beginOp("Ingest"); err != nil {
		return err
	}
	defer d.endOp()
	files := make([]*ingestFile, len(paths))
	for i, p := range paths {
		// The file a symlink names, not the symlink: with Move the table
		// is a hard link, and one to a symlink would break (the database
		// no longer opens) once the caller removes what it points to.
		rp, err := vfs.Resolve(d.fs, p)
		if err != nil {
			return errors.Wrapf(err, "strata: Ingest: resolving %s", p)
		}
		f, err := d.inspectIngestFile(cf, rp, !o.SkipVerify)
		if err != nil {
			return err
		}
		f.name = p
		files[i] = f
	}
	sort.Slice(files, func(i, j int) bool { return cf.cmp.CompareUser(files[i].smallest, files[j].smallest) < 0 })
	for i := 1; i < len(files); i++ {
		if files[i-1].overlaps(files[i].smallest, files[i].largest) {
			return errors.Wrapf(ErrInvalidArgument, "strata: Ingest: files %s and %s overlap",
				files[i-1].name, files[i].name)
		}
	}

	err := d.linkIngestFiles(files, o.Move)
	if err == nil {
		err = d.exclusive(func() error { return d.ingestApply(cf, files, &o) })
	}
	d.mu.Lock()
	for _, f := range files {
		delete(d.mu.pendingOutputs, f.fileNum)
	}
	d.mu.Unlock()
	if err != nil {
		for _, f := range files {
			if f.linked {
				d.fs.Remove(d.path(base.MakeFilename(base.FileKindTable, f.fileNum)))
			}
		}
		return err
	}
	if o.Move {
		for _, f := range files {
			// The database holds its own link; failing to remove the
			// caller's is not an error of the ingestion. Through a
			// symlink, the file's name goes (it may be a second name of
			// the table, which the caller must not keep) and the symlink.
			_ = d.fs.Remove(f.path)
			if f.name != f.path {
				_ = d.fs.Remove(f.name)
			}
		}
	}
	return nil
}

// overlaps reports whether f's key range intersects [start, end] (end
// treated as inclusive, conservatively).
func (f *ingestFile) overlaps(start, end []byte) bool {
	if f.largestExclusive {
		if f.cmp.CompareUser(f.largest, start) <= 0 {
			return false
		}
	} else if f.cmp.CompareUser(f.largest, start) < 0 {
		return false
	}
	return f.cmp.CompareUser(f.smallest, end) <= 0
}

func invalidIngest(path, format string, args ...interface{}) error {
	return errors.Wrapf(ErrInvalidArgument, "strata: Ingest: file %s: "+format, append([]interface{}{path}, args...)...)
}

// inspectIngestFile opens the file at path as a table, checks that it was
// written for ingestion with our comparator, and finds its bounds. With
// verify it reads every block (checksums) and checks the key order.
func (d *DB) inspectIngestFile(cf *ColumnFamily, path string, verify bool) (_ *ingestFile, err error) {
	fh, err := d.fs.Open(path)
	if err != nil {
		return nil, errors.Wrapf(err, "strata: Ingest: opening %s", path)
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, errors.Wrapf(err, "strata: Ingest: stat of %s", path)
	}
	r, err := table.Open(fh, st.Size(), table.ReaderOptions{FileName: path, Comparer: cf.cmp})
	if err != nil {
		fh.Close()
		return nil, errors.Wrapf(err, "strata: Ingest")
	}
	defer r.Close()
	p := r.Properties()
	if p.ComparatorName != "" && p.ComparatorName != cf.cmp.Name {
		return nil, invalidIngest(path, "comparator %s does not match the column family's, %s", p.ComparatorName, cf.cmp.Name)
	}
	if _, ok := r.GlobalSeqNum(); !ok || p.ExternalSSTVersion != table.ExternalFileVersion {
		return nil, invalidIngest(path, "not an external table file (rocksdb.external_sst_file.version 2 absent)")
	}
	if g, _ := r.GlobalSeqNum(); g != 0 {
		return nil, invalidIngest(path, "already ingested elsewhere (global sequence number %d)", g)
	}
	const unknownCF = 0x7fffffff
	if p.ColumnFamilyID != uint64(cf.id) && p.ColumnFamilyID != unknownCF {
		return nil, invalidIngest(path, "written for column family %d (%q), not for %d (%q)",
			p.ColumnFamilyID, p.ColumnFamilyName, cf.id, cf.name)
	}
	f := &ingestFile{path: path, size: uint64(st.Size()), cmp: cf.cmp}
	it := r.NewIter()
	defer func() {
		if cerr := it.Close(); err == nil && cerr != nil {
			err = errors.Wrapf(cerr, "strata: Ingest")
		}
	}()
	check := func(k base.InternalKey) error {
		switch k.Kind() {
		case base.KindSet, base.KindDelete, base.KindSingleDelete:
			return nil
		case base.KindBlobIndex:
			// Its value lies in a blob file of another database, which
			// an ingestion does not bring (RocksDB refuses these too).
			return invalidIngest(path, "key %q is a blob index: its value is in a blob file, and blob files cannot be ingested", k.UserKey)
		}
		return invalidIngest(path, "key %q of kind %s cannot be ingested", k.UserKey, k.Kind())
	}
	if it.First() {
		f.hasPoints = true
		f.pointSmallest = slices.Clone(it.Key().UserKey)
		if err := check(it.Key()); err != nil {
			return nil, err
		}
		if verify {
			prev := slices.Clone(it.Key().UserKey)
			for it.Next() {
				k := it.Key()
				if cf.cmp.CompareUser(prev, k.UserKey) >= 0 {
					return nil, base.MarkCorruption(invalidIngest(path, "keys out of order: %q after %q", k.UserKey, prev))
				}
				if err := check(k); err != nil {
					return nil, err
				}
				prev = append(prev[:0], k.UserKey...)
			}
			if it.Error() == nil {
				f.pointLargest = prev
			}
		} else if it.Last() {
			f.pointLargest = slices.Clone(it.Key().UserKey)
			if err := check(it.Key()); err != nil {
				return nil, err
			}
		}
	}
	if err := it.Error(); err != nil {
		return nil, errors.Wrapf(err, "strata: Ingest")
	}
	if verify {
		if err := r.VerifyChecksums(); err != nil {
			return nil, errors.Wrapf(err, "strata: Ingest")
		}
	}
	if f.hasPoints && cf.cmp.CompareUser(f.pointSmallest, f.pointLargest) > 0 {
		return nil, base.MarkCorruption(invalidIngest(path, "first key %q after last key %q", f.pointSmallest, f.pointLargest))
	}
	for _, t := range r.Tombstones() {
		f.tombs = append(f.tombs, base.Tombstone{Start: slices.Clone(t.Start), End: slices.Clone(t.End)})
	}
	if !f.hasPoints && len(f.tombs) == 0 {
		return nil, invalidIngest(path, "no entries")
	}
	f.setBounds()
	return f, nil
}

// setBounds computes the user-key range of points and tombstones. The
// largest bound is exclusive when it is a tombstone end beyond every point.
func (f *ingestFile) setBounds() {
	have := f.hasPoints
	f.smallest, f.largest = f.pointSmallest, f.pointLargest
	for _, t := range f.tombs {
		if !have || f.cmp.CompareUser(t.Start, f.smallest) < 0 {
			f.smallest = t.Start
		}
		if !have || f.cmp.CompareUser(t.End, f.largest) > 0 {
			f.largest, f.largestExclusive = t.End, true
		}
		have = true
	}
}

// metadata returns the MANIFEST entry of f ingested at seq: both sequence
// bounds are seq, which is how RocksDB (and table.Reader) learn the global
// sequence number of a file whose global_seqno property is 0.
func (f *ingestFile) metadata(seq base.SeqNum) *version.FileMetadata {
	m := &version.FileMetadata{
		FileNum: f.fileNum, Size: f.size, SmallestSeq: seq, LargestSeq: seq,
		NumRangeDeletions: uint64(len(f.tombs)), RangeDelsKnown: true,
	}
	now := time.Now().Unix()
	m.CreationTime, m.OldestAncesterTime = now, now
	// Smallest: the point key (seq, kind) or the tombstone start
	// (seq, RangeDelete), whichever sorts first; as the table writer does.
	var lo, hi base.InternalKey
	have := false
	if f.hasPoints {
		lo = base.MakeInternalKey(f.pointSmallest, seq, base.KindSet)
		hi = base.MakeInternalKey(f.pointLargest, seq, base.KindSet)
		have = true
	}
	for _, t := range f.tombs {
		tl := base.MakeInternalKey(t.Start, seq, base.KindRangeDelete)
		th := base.MakeInternalKey(t.End, base.MaxSeqNum, base.KindRangeDelete)
		if !have || f.cmp.InternalCompare(tl, lo) < 0 {
			lo = tl
		}
		if !have || f.cmp.InternalCompare(th, hi) > 0 {
			hi = th
		}
		have = true
	}
	m.Smallest, m.Largest = lo.Clone(), hi.Clone()
	return m
}

// linkIngestFiles gives each file a new file number and copies it into the
// database directory (with move, links it when possible), syncs it and
// then the directory. The numbers are pending outputs, safe from the
// obsolete-file sweep, until Ingest clears them.
func (d *DB) linkIngestFiles(files []*ingestFile, move bool) error {
	d.mu.Lock()
	for _, f := range files {
		f.fileNum = d.mu.versions.NextFileNum()
		d.mu.pendingOutputs[f.fileNum] = struct{}{}
	}
	d.mu.Unlock()
	for _, f := range files {
		name := d.path(base.MakeFilename(base.FileKindTable, f.fileNum))
		var linked bool
		var err error
		if move {
			linked, err = vfs.LinkOrCopy(d.fs, f.path, name)
		} else {
			err = vfs.Copy(d.fs, f.path, name)
		}
		if err != nil {
			return errors.Wrapf(err, "strata: Ingest: linking or copying %s to %s", f.path, name)
		}
		f.linked = true
		if linked {
			// The caller may not have synced the file.
			if err := syncFile(d.fs, name); err != nil {
				return errors.Wrapf(err, "strata: Ingest: syncing %s", name)
			}
		}
		if hook := d.testing.ingestAfterLink; hook != nil {
			hook(f.fileNum)
		}
	}
	return d.syncDir()
}

func syncFile(fs vfs.FS, name string) error {
	fh, err := fs.Open(name)
	if err != nil {
		return err
	}
	err = fh.Sync()
	return errors.CombineErrors(err, fh.Close())
}

// ingestApply runs as the commit pipeline's leader: no write commits
// meanwhile. It flushes overlapping memtables, takes the next sequence
// number, places each file and records them all in one MANIFEST edit.
func (d *DB) ingestApply(cf *ColumnFamily, files []*ingestFile, o *IngestOptions) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.bgErr != nil {
		return d.mu.bgErr
	}
	if cf.mu.vf.Dropped() {
		return errors.Wrapf(ErrInvalidArgument, "strata: Ingest: column family %q was dropped", cf.name)
	}
	if cf.memtablesOverlapLocked(files) {
		if o.NoBlockingFlush {
			return errors.Wrap(ErrInvalidArgument,
				"strata: Ingest: the files overlap the memtable and NoBlockingFlush forbids flushing it")
		}
		if err := d.flushFamilyLocked(cf); err != nil {
			return err
		}
	}
	if d.mu.closing {
		return errors.Wrap(ErrClosed, "strata: database closed during Ingest")
	}
	// Every write acknowledged before the ingestion must be as durable as
	// the sequence number the MANIFEST edit makes durable. The pipeline
	// is drained: nothing is appended to the WAL until the edit is done.
	if err := d.syncLogToEndLocked(); err != nil {
		err = errors.Wrap(err, "strata: Ingest")
		d.setBgErrLocked(err)
		return err
	}
	// The levels are chosen from the Version the edit will apply to: wait
	// out a MANIFEST write in progress (it releases d.mu), then keep d.mu
	// until LogAndApply takes the writer role.
	d.mu.versions.WaitForWriter()
	if d.mu.closing {
		return errors.Wrap(ErrClosed, "strata: database closed during Ingest")
	}
	if d.mu.bgErr != nil {
		return d.mu.bgErr
	}
	if cf.mu.vf.Dropped() {
		return errors.Wrapf(ErrInvalidArgument, "strata: Ingest: column family %q was dropped", cf.name)
	}
	seq := base.SeqNum(d.visibleSeq.Load()) + 1
	v := cf.mu.vf.Current()
	ve := &version.Edit{ColumnFamily: cf.id, LastSequence: seq, HasLastSequence: true}
	for _, f := range files {
		m := f.metadata(seq)
		ve.NewFiles = append(ve.NewFiles, version.NewFileEntry{Level: cf.ingestLevelLocked(v, m), Meta: m})
	}
	if f := d.testing.ingestBeforeManifest; f != nil {
		f()
	}
	// LogAndApply releases d.mu while it writes: until the edit is in the
	// current version, the picker must treat the files' levels and ranges
	// as in flight (see ingestingOverLocked).
	for _, e := range ve.NewFiles {
		cf.comp.ingesting = append(cf.comp.ingesting,
			ingestRange{level: e.Level, smallest: e.Meta.Smallest.UserKey, largest: e.Meta.Largest.UserKey})
	}
	err := d.mu.versions.LogAndApply(ve)
	// Emptying the whole list is right because ingestions run one at a
	// time: ingestApply runs under the commit lock (DB.exclusive), so no
	// other ingestion's ranges can be in it.
	cf.comp.ingesting = cf.comp.ingesting[:0]
	d.mu.cond.Broadcast()
	if err != nil {
		// The edit may have reached the MANIFEST: the files must stay.
		for _, f := range files {
			f.linked = false
		}
		err = errors.Wrap(err, "strata: recording ingestion in MANIFEST")
		d.setBgErrLocked(err)
		return err
	}
	// The new read view holds the files before the sequence number that
	// makes them visible is published.
	d.updateReadStateLocked(cf)
	d.visibleSeq.Store(uint64(seq))
	d.evIngested(cf, files, ve, seq)
	for _, e := range ve.NewFiles {
		d.stats.level[e.Level].bytesWritten.Add(e.Meta.Size)
		d.stats.ingestedBytes.Add(e.Meta.Size)
	}
	d.stats.ingestions.Add(1)
	d.maybeScheduleCompactionLocked()
	return nil
}

// memtablesOverlapLocked reports whether a memtable holds a key or a range
// deletion inside a file's range. d.mu must be held.
func (cf *ColumnFamily) memtablesOverlapLocked(files []*ingestFile) bool {
	mems := append([]*memTable{cf.mu.mem}, cf.mu.imm...)
	for _, m := range mems {
		if m.Empty() {
			continue
		}
		it := m.NewIter()
		for _, f := range files {
			if it.SeekGE(f.smallest) && f.overlaps(it.Key().UserKey, it.Key().UserKey) {
				it.Close()
				return true
			}
		}
		it.Close()
		for _, t := range m.Tombstones(base.MaxSeqNum) {
			for _, f := range files {
				if f.overlaps(t.Start, t.End) && !bytes.Equal(t.End, f.smallest) {
					return true
				}
			}
		}
	}
	return false
}

// ingestLevelLocked picks the level of a file: the deepest level L such
// that no file of levels 0..L overlaps it and no running compaction writes
// into levels 0..L over its range. A file that overlaps level 0 goes to
// level 0, where its sequence number makes it the newest. d.mu must be
// held.
func (cf *ColumnFamily) ingestLevelLocked(v *version.Version, m *version.FileMetadata) int {
	lo, hi := m.Smallest.UserKey, m.Largest.UserKey
	target := 0
	if cf.opts.CompactionStyle == FIFOCompaction {
		return 0
	}
	for lvl := 0; lvl < version.NumLevels; lvl++ {
		if len(v.Overlaps(lvl, lo, hi)) > 0 {
			break
		}
		busy := false
		for _, c := range cf.comp.inflight {
			if c.pick.OutputLevel == lvl && cf.cmp.CompareUser(c.pick.Smallest, hi) <= 0 &&
				cf.cmp.CompareUser(lo, c.pick.Largest) <= 0 {
				busy = true
			}
		}
		if busy {
			break
		}
		target = lvl
	}
	return target
}
