package version

import (
	"path/filepath"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/killpoint"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/internal/vfs"
)

// DefaultMaxManifestFileSize is the default of Options.MaxManifestFileSize.
const DefaultMaxManifestFileSize = 64 << 20

// Options configures a VersionSet. The zero value means defaults.
type Options struct {
	// MaxManifestFileSize is the size past which LogAndApply starts a new
	// MANIFEST holding a snapshot of the state. Default: 64 MiB. Smaller
	// values make recovery faster and rotation more frequent.
	MaxManifestFileSize int64
}

func (o Options) withDefaults() Options {
	if o.MaxManifestFileSize <= 0 {
		o.MaxManifestFileSize = DefaultMaxManifestFileSize
	}
	return o
}

// VersionSet owns the current Version, the file-number and sequence
// counters, and the MANIFEST that records them.
//
// Locking: a VersionSet is not internally synchronized. The caller (the db)
// must serialize LogAndApply, Current and every counter method under its
// own mutex. Only Version.Ref/Unref and LiveFileNums may run without it:
// they use listMu, which guards the live list.
//
// After SetMutex, LogAndApply releases that mutex while it writes and syncs
// the MANIFEST, so that writers and readers needing it are not held up by
// the fsync. Edits stay serialized: one LogAndApply writes at a time (the
// others wait for it, with the mutex released), and the Version an edit
// produces is installed, under the mutex again, only once its record is
// durable. Meanwhile Current is the previous Version and the counters may
// advance (NextFileNum, MarkFileNumUsed, SetLastSeq).
//
// Invariants: current is in the live list and holds a reference owned by the
// VersionSet; nextFileNum is above every file number in use (tables, logs,
// manifests); when manifest is non-nil it is the open writer of
// MANIFEST-manifestNum, which CURRENT names.
type VersionSet struct {
	fs   vfs.FS
	dir  string
	opts Options

	// Guarded by the caller's mutex.
	current         *Version
	nextFileNum     uint64
	lastSeq         base.SeqNum
	logNum          uint64
	prevLogNum      uint64
	minLogNumToKeep uint64
	manifestNum     uint64
	manifestFile    vfs.File
	manifest        *record.Writer
	scratch         []byte

	// mu, when set (SetMutex), is the caller's mutex: LogAndApply releases
	// it during MANIFEST I/O. writing (guarded by mu) is true while a
	// LogAndApply runs; writerCond (on mu) is signalled when it ends.
	mu         *sync.Mutex
	writing    bool
	writerCond sync.Cond

	listMu sync.Mutex
	// live is the sentinel of a circular list of the Versions with a
	// reference. Guarded by listMu.
	live Version
}

func newVersionSet(fs vfs.FS, dir string, opts Options) *VersionSet {
	vs := &VersionSet{fs: fs, dir: dir, opts: opts.withDefaults(), nextFileNum: 1}
	vs.live.prev, vs.live.next = &vs.live, &vs.live
	return vs
}

// Create starts a new, empty VersionSet in dir: it writes MANIFEST-000001
// and points CURRENT at it.
func Create(fs vfs.FS, dir string, opts Options) (*VersionSet, error) {
	vs := newVersionSet(fs, dir, opts)
	vs.install(&Version{})
	num := vs.NextFileNum()
	if err := vs.writeNewManifest(num, vs.encodeSnapshot(), nil); err != nil {
		return nil, err
	}
	vs.manifestNum = num
	return vs, nil
}

// SetMutex names the mutex the caller holds around every call (see the
// type's comment): from now on LogAndApply releases it while it writes the
// MANIFEST. Call it once, before the VersionSet is shared.
func (vs *VersionSet) SetMutex(mu *sync.Mutex) {
	vs.mu = mu
	vs.writerCond.L = mu
}

// WaitForWriter waits, releasing the caller's mutex, until no LogAndApply is
// writing. A caller that then builds an edit from Current and calls
// LogAndApply without releasing the mutex in between has its edit applied
// to that very Version. Without SetMutex it returns at once.
func (vs *VersionSet) WaitForWriter() {
	for vs.writing {
		vs.writerCond.Wait()
	}
}

// install makes v current, giving the VersionSet's reference to it.
func (vs *VersionSet) install(v *Version) {
	v.vs = vs
	v.refs.Store(1)
	vs.listMu.Lock()
	v.prev, v.next = vs.live.prev, &vs.live
	v.prev.next, v.next.prev = v, v
	vs.listMu.Unlock()
	old := vs.current
	vs.current = v
	if old != nil {
		old.Unref()
	}
}

func (vs *VersionSet) removeLive(v *Version) {
	vs.listMu.Lock()
	v.prev.next, v.next.prev = v.next, v.prev
	v.prev, v.next = nil, nil
	vs.listMu.Unlock()
}

// LiveFileNums returns the numbers of the files of every Version that still
// has a reference. A table file not in this set (and not being written) is
// obsolete. Safe without the caller's mutex.
func (vs *VersionSet) LiveFileNums() map[uint64]struct{} {
	m := make(map[uint64]struct{})
	vs.listMu.Lock()
	for v := vs.live.next; v != &vs.live; v = v.next {
		v.AddLiveFileNums(m)
	}
	vs.listMu.Unlock()
	return m
}

// Current returns the current Version. The caller Refs it to keep it past
// the next LogAndApply.
func (vs *VersionSet) Current() *Version { return vs.current }

// NextFileNum allocates a file number.
func (vs *VersionSet) NextFileNum() uint64 {
	n := vs.nextFileNum
	vs.nextFileNum++
	return n
}

// MarkFileNumUsed makes sure NextFileNum never returns n or less.
func (vs *VersionSet) MarkFileNumUsed(n uint64) {
	if vs.nextFileNum <= n {
		vs.nextFileNum = n + 1
	}
}

// PeekNextFileNum returns the next number NextFileNum would allocate.
func (vs *VersionSet) PeekNextFileNum() uint64 { return vs.nextFileNum }

// LastSeq returns the last sequence number recorded as used.
func (vs *VersionSet) LastSeq() base.SeqNum { return vs.lastSeq }

// SetLastSeq sets the last used sequence number; the next LogAndApply
// records it.
func (vs *VersionSet) SetLastSeq(s base.SeqNum) { vs.lastSeq = s }

// LogNumber returns the number of the oldest WAL that may hold data not yet
// in tables: WALs numbered below it are obsolete.
func (vs *VersionSet) LogNumber() uint64 { return vs.logNum }

// PrevLogNumber returns the recorded previous log number (0 in practice).
func (vs *VersionSet) PrevLogNumber() uint64 { return vs.prevLogNum }

// MinLogNumberToKeep returns the recorded min log number to keep.
func (vs *VersionSet) MinLogNumberToKeep() uint64 { return vs.minLogNumToKeep }

// ManifestFileNum returns the number of the live MANIFEST (the one CURRENT
// names). Other MANIFEST files in the directory are obsolete.
func (vs *VersionSet) ManifestFileNum() uint64 { return vs.manifestNum }

// Close closes the MANIFEST being written, if any.
func (vs *VersionSet) Close() error {
	if vs.manifestFile == nil {
		return nil
	}
	err := vs.manifestFile.Close()
	vs.manifestFile, vs.manifest = nil, nil
	return err
}

func (vs *VersionSet) path(name string) string { return filepath.Join(vs.dir, name) }

// LogAndApply records e in the MANIFEST and installs the Version it
// produces. The caller's mutex must be held; after SetMutex it is released
// while LogAndApply waits for another LogAndApply to finish and while the
// record is written and synced (see the type's comment), and held again on
// return.
//
// It fills the counters e lacks from the VersionSet (LogNumber,
// PrevLogNumber, LastSequence) and always sets NextFileNumber, so e is
// modified. If no MANIFEST is open for writing (after Load, or after an
// error) or the current one reached Options.MaxManifestFileSize, it first
// writes a new MANIFEST holding a snapshot of the current state, appends e,
// syncs, points CURRENT at it and removes the old MANIFEST.
//
// On error nothing is installed and the counters other than the file
// number are unchanged. The edit may nonetheless have reached the old
// MANIFEST (a failed sync), so the caller must treat the error as fatal for
// writes and must not delete the files e adds; the next LogAndApply starts a
// new MANIFEST.
func (vs *VersionSet) LogAndApply(e *Edit) error {
	vs.WaitForWriter()
	vs.writing = true
	defer func() {
		vs.writing = false
		if vs.mu != nil {
			vs.writerCond.Broadcast()
		}
	}()
	if err := checkSupported(e); err != nil {
		return err
	}
	if e.HasComparator && e.ComparatorName != base.ComparatorName {
		return base.InvalidArgumentf("version: comparator %q, want %q", e.ComparatorName, base.ComparatorName)
	}
	if e.HasLogNumber && (e.LogNumber < vs.logNum || e.LogNumber >= vs.nextFileNum) {
		return base.AssertionFailedf("version: log number %d outside [%d, %d)",
			e.LogNumber, vs.logNum, vs.nextFileNum)
	}
	b := newBuilder(vs.current)
	if err := b.apply(e); err != nil {
		return base.AssertionFailedf("version: applying edit: %v", err)
	}
	v, err := b.finish()
	if err != nil {
		return base.AssertionFailedf("version: applying edit: %v", err)
	}
	if invariantsEnabled {
		if err := v.CheckOrdering(); err != nil {
			return err
		}
	}
	vs.fillCounters(e)
	rotate := vs.manifest == nil || vs.manifest.Size() >= vs.opts.MaxManifestFileSize
	var newNum uint64
	var snap [][]byte
	if rotate {
		newNum = vs.NextFileNum()
	}
	e.NextFileNumber, e.HasNextFileNumber = vs.nextFileNum, true
	if rotate {
		// The snapshot is taken under the mutex: it reads current and
		// the counters.
		snap = vs.encodeSnapshot()
	}
	vs.scratch = e.Encode(vs.scratch[:0])
	// Only this LogAndApply touches the MANIFEST writer and scratch until
	// it returns (writing is set), so the I/O runs without the mutex.
	if vs.mu != nil {
		vs.mu.Unlock()
	}
	if rotate {
		err = vs.writeNewManifest(newNum, snap, vs.scratch)
	} else {
		err = vs.appendManifest(vs.scratch)
	}
	if vs.mu != nil {
		vs.mu.Lock()
	}
	if err != nil {
		return err
	}
	if rotate {
		vs.manifestNum = newNum
	}
	// No other edit ran meanwhile, so v still derives from current; only
	// SetLastSeq may have moved lastSeq on.
	vs.logNum, vs.prevLogNum = e.LogNumber, e.PrevLogNumber
	if e.LastSequence > vs.lastSeq {
		vs.lastSeq = e.LastSequence
	}
	if e.HasMinLogNumberToKeep && e.MinLogNumberToKeep > vs.minLogNumToKeep {
		vs.minLogNumToKeep = e.MinLogNumberToKeep
	}
	vs.install(v)
	return nil
}

// fillCounters completes e's counters from the VersionSet's.
func (vs *VersionSet) fillCounters(e *Edit) {
	if !e.HasLogNumber {
		e.LogNumber, e.HasLogNumber = vs.logNum, true
	}
	if !e.HasPrevLogNumber {
		e.PrevLogNumber, e.HasPrevLogNumber = vs.prevLogNum, true
	}
	if !e.HasLastSequence || e.LastSequence < vs.lastSeq {
		e.LastSequence, e.HasLastSequence = vs.lastSeq, true
	}
}

// appendManifest appends one encoded edit to the open MANIFEST and syncs.
// On failure the writer is dropped, so that the next edit starts afresh.
func (vs *VersionSet) appendManifest(rec []byte) error {
	_, err := vs.manifest.WriteRecord(rec)
	if err == nil {
		err = vs.manifest.Flush()
	}
	if err == nil {
		err = vs.manifestFile.Sync()
	}
	killpoint.Maybe("manifest.after_append")
	if err != nil {
		_ = vs.Close()
		return errors.Wrapf(err, "strata: version: writing %s", base.MakeFilename(base.FileKindManifest, vs.manifestNum))
	}
	return nil
}

// snapshotEdits returns the edits that recreate the current state: the
// comparator, then the counters and every file.
func (vs *VersionSet) snapshotEdits() [2]Edit {
	var s [2]Edit
	s[0] = Edit{ComparatorName: base.ComparatorName, HasComparator: true}
	e := &s[1]
	e.LogNumber, e.HasLogNumber = vs.logNum, true
	e.PrevLogNumber, e.HasPrevLogNumber = vs.prevLogNum, true
	e.NextFileNumber, e.HasNextFileNumber = vs.nextFileNum, true
	e.LastSequence, e.HasLastSequence = vs.lastSeq, true
	if vs.minLogNumToKeep != 0 {
		e.MinLogNumberToKeep, e.HasMinLogNumberToKeep = vs.minLogNumToKeep, true
	}
	for level, files := range vs.current.Levels {
		for _, f := range files {
			e.NewFiles = append(e.NewFiles, NewFileEntry{Level: level, Meta: f})
		}
	}
	return s
}

// encodeSnapshot returns the encoded records of snapshotEdits.
func (vs *VersionSet) encodeSnapshot() [][]byte {
	edits := vs.snapshotEdits()
	recs := make([][]byte, len(edits))
	for i := range edits {
		recs[i] = edits[i].Encode(nil)
	}
	return recs
}

// writeNewManifest writes MANIFEST-num holding snap (the encoded snapshot of
// the state, from encodeSnapshot) followed by rec (if any), syncs it, and
// points CURRENT at it. On success the old MANIFEST is closed and removed;
// on failure the new one is removed and the old one stays as it was. It
// reads no state but the MANIFEST writer's, so it may run without the
// caller's mutex while LogAndApply holds the writer role.
func (vs *VersionSet) writeNewManifest(num uint64, snap [][]byte, rec []byte) (err error) {
	name := base.MakeFilename(base.FileKindManifest, num)
	f, err := vs.fs.Create(vs.path(name))
	if err != nil {
		return errors.Wrapf(err, "strata: version: creating %s", name)
	}
	keep := false
	defer func() {
		if err != nil && !keep {
			_ = f.Close()
			_ = vs.fs.Remove(vs.path(name))
			err = errors.Wrapf(err, "strata: version: writing %s", name)
		}
	}()
	w := record.NewWriter(f, num)
	for _, r := range snap {
		if _, err := w.WriteRecord(r); err != nil {
			return err
		}
	}
	if rec != nil {
		if _, err := w.WriteRecord(rec); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	killpoint.Maybe("manifest.before_current")
	if renamed, err := vs.setCurrent(num); err != nil {
		if renamed {
			// CURRENT may name the new MANIFEST already: keep it, and
			// write neither MANIFEST again; the next edit starts a third.
			keep = true
			_ = f.Close()
			_ = vs.Close()
			return errors.Wrapf(err, "strata: version: syncing the directory for %s", name)
		}
		return err
	}
	oldNum, hadOld := vs.manifestNum, vs.manifestNum != 0
	_ = vs.Close()
	// The caller sets manifestNum (under its mutex: ManifestFileNum reads
	// it).
	vs.manifestFile, vs.manifest = f, w
	if hadOld && oldNum != num {
		// Best effort: the db's obsolete-file sweep removes it otherwise.
		_ = vs.fs.Remove(vs.path(base.MakeFilename(base.FileKindManifest, oldNum)))
	}
	return nil
}

// setCurrent atomically points CURRENT at MANIFEST-num: it writes
// NNNNNN.dbtmp, syncs it, renames it over CURRENT and syncs the directory.
// renamed reports whether the rename happened (then CURRENT may name the
// new MANIFEST even if err is not nil).
func (vs *VersionSet) setCurrent(num uint64) (renamed bool, err error) {
	tmp := vs.path(base.MakeFilename(base.FileKindTemp, num))
	err = vfs.WriteFileSynced(vs.fs, tmp, []byte(base.MakeFilename(base.FileKindManifest, num)+"\n"))
	killpoint.Maybe("manifest.before_current_rename")
	if err == nil {
		err = vs.fs.Rename(tmp, vs.path(base.MakeFilename(base.FileKindCurrent, 0)))
	}
	if err != nil {
		_ = vs.fs.Remove(tmp)
		return false, err
	}
	return true, vfs.SyncDir(vs.fs, vs.dir)
}

// checkSupported rejects edits of column families other than the default.
func checkSupported(e *Edit) error {
	switch {
	case e.ColumnFamily != 0 && e.HasColumnFamilyAdd:
		return errors.Wrapf(ErrUnsupportedColumnFamily, "version: column family %d (%q) is not supported",
			e.ColumnFamily, e.ColumnFamilyAdd)
	case e.ColumnFamily != 0:
		return errors.Wrapf(ErrUnsupportedColumnFamily, "version: column family %d is not supported",
			e.ColumnFamily)
	case e.HasColumnFamilyAdd && e.ColumnFamilyAdd != "default":
		return errors.Wrapf(ErrUnsupportedColumnFamily, "version: column family %q is not supported",
			e.ColumnFamilyAdd)
	case e.ColumnFamilyDrop:
		return errors.Wrapf(ErrUnsupportedColumnFamily, "version: dropping the default column family")
	}
	return nil
}
