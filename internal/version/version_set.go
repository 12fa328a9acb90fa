package version

import (
	"os"
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
	// Comparer resolves the order of a family the MANIFEST holds: family is
	// its name and stored the comparator name its MANIFEST records ("" when
	// it records none). It returns the comparer to use, or an error
	// (ErrInvalidArgument when stored is not the comparer's Name). Nil:
	// the built-in comparer named stored (bytewise when ""), an
	// ErrInvalidArgument error for any other name.
	Comparer func(family, stored string) (*base.Comparer, error)
}

// resolveComparer applies o.Comparer, or its default.
func (o Options) resolveComparer(family, stored string) (*base.Comparer, error) {
	if o.Comparer != nil {
		return o.Comparer(family, stored)
	}
	if c := base.BuiltinComparer(stored); c != nil {
		return c, nil
	}
	return nil, base.InvalidArgumentf("version: column family %q: comparator %q is not built in", family, stored)
}

func (o Options) withDefaults() Options {
	if o.MaxManifestFileSize <= 0 {
		o.MaxManifestFileSize = DefaultMaxManifestFileSize
	}
	return o
}

// VersionSet owns the column families (each with its current Version and
// log number), the file-number and sequence counters, and the MANIFEST that
// records them.
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
// Invariants: each live family's current Version is in the live list and
// holds a reference owned by the VersionSet; family 0 is always live; ids of
// live families are at most maxColumnFamily; nextFileNum is above every file number in use (tables, logs,
// manifests); when manifest is non-nil it is the open writer of
// MANIFEST-manifestNum, which CURRENT names.
type VersionSet struct {
	fs   vfs.FS
	dir  string
	opts Options

	// Guarded by the caller's mutex.
	//
	// def is family 0; famByID and fams (by id ascending) hold the live
	// families; maxColumnFamily is the largest id ever used.
	def             *Family
	famByID         map[uint32]*Family
	fams            []*Family
	maxColumnFamily uint32
	nextFileNum     uint64
	lastSeq         base.SeqNum
	prevLogNum      uint64
	minLogNumToKeep uint64
	manifestNum     uint64
	manifestFile    vfs.File
	manifest        *record.Writer
	scratch         [][]byte
	// oldManifests are replaced MANIFESTs whose removal failed (on
	// Windows a file some handle holds open cannot be removed): the next
	// MANIFEST switch tries again, and so does the db's sweep at Open.
	// Only writeNewManifest, which runs in the writer role, touches it.
	oldManifests []uint64

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
	vs := &VersionSet{fs: fs, dir: dir, opts: opts.withDefaults(), nextFileNum: 1,
		famByID: make(map[uint32]*Family)}
	vs.live.prev, vs.live.next = &vs.live, &vs.live
	return vs
}

// Create starts a new, empty VersionSet in dir: it writes MANIFEST-000001
// and points CURRENT at it.
func Create(fs vfs.FS, dir string, opts Options) (*VersionSet, error) {
	vs := newVersionSet(fs, dir, opts)
	cmp, err := vs.opts.resolveComparer(DefaultFamilyName, "")
	if err != nil {
		return nil, err
	}
	vs.addFamily(&Family{id: 0, name: DefaultFamilyName})
	vs.install(vs.def, &Version{cmp: cmp})
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

// install makes v current in f, giving the VersionSet's reference to it.
func (vs *VersionSet) install(f *Family, v *Version) {
	v.vs = vs
	v.refs.Store(1)
	vs.listMu.Lock()
	v.prev, v.next = vs.live.prev, &vs.live
	v.prev.next, v.next.prev = v, v
	vs.listMu.Unlock()
	old := f.current
	f.current = v
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

// Current returns the default family's current Version. The caller Refs it
// to keep it past the next LogAndApply.
func (vs *VersionSet) Current() *Version { return vs.def.current }

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

// LogNumber returns the default family's log number: the oldest WAL that
// may hold data of it not yet in tables. With several families, WALs below
// MinLogNumber are obsolete.
func (vs *VersionSet) LogNumber() uint64 { return vs.def.logNum }

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
// produces in the column family e.ColumnFamily names (0 = default). The
// caller's mutex must be held; after SetMutex it is released while
// LogAndApply waits for another LogAndApply to finish and while the record
// is written and synced (see the type's comment), and held again on return.
//
// It fills the counters e lacks from the VersionSet (LogNumber from e's
// family, PrevLogNumber, LastSequence) and always sets NextFileNumber, so e
// is modified. If no MANIFEST is open for writing (after Load, or after an
// error) or the current one reached Options.MaxManifestFileSize, it first
// writes a new MANIFEST holding a snapshot of the current state, appends e,
// syncs, points CURRENT at it and removes the old MANIFEST.
//
// Column families: an edit with HasColumnFamilyAdd creates family
// e.ColumnFamily, named e.ColumnFamilyAdd, with an empty Version; its id
// must be above MaxColumnFamily (callers allocate MaxColumnFamily()+1) and
// its name unused by a live family. LogAndApply adds the comparator and
// MaxColumnFamily to such an edit; without HasLogNumber the new family
// starts at the default family's log number (no WAL below that can hold
// data of a family created now). An edit with ColumnFamilyDrop drops its
// family (not the default); the VersionSet drops its reference to the
// family's current Version, whose files stay live while others hold
// references. Add and drop edits carry no files: RocksDB ignores files in
// them. An edit for an unknown or dropped family fails with an
// AssertionFailed error.
//
// On error nothing is installed and the counters other than the file
// number are unchanged. The edit may nonetheless have reached the old
// MANIFEST (a failed sync), so the caller must treat the error as fatal for
// writes and must not delete the files e adds; the next LogAndApply starts a
// new MANIFEST.
func (vs *VersionSet) LogAndApply(e *Edit) error {
	return vs.logAndApply([]*Edit{e}, false)
}

// LogAndApplyGroup records edits as one RocksDB atomic group and installs
// the Versions they produce together, or none of them: each edit is its own
// MANIFEST record, marked InAtomicGroup with RemainingEntries counting down
// to 0, and all are flushed and synced once. A reader that finds the group
// cut short by a crash drops all of it. Each edit is handled as by
// LogAndApply (edits may name different families, or the same one: they
// apply in order); mutex release and error behaviour are LogAndApply's.
func (vs *VersionSet) LogAndApplyGroup(edits []*Edit) error {
	if len(edits) == 0 {
		return nil
	}
	return vs.logAndApply(edits, true)
}

// pendingFamily is a family's state while an edit group is prepared: the
// changes are installed only once the group is durable.
type pendingFamily struct {
	fam     *Family // nil when the group creates the family
	id      uint32
	name    string
	b       *builder
	logNum  uint64
	dropped bool
	v       *Version
}

// prepareGroup checks edits against the state and builds the resulting
// Versions, without changing the VersionSet; it completes each edit
// (counters, family records). It returns the families touched, in the
// order first touched, and the new MaxColumnFamily.
func (vs *VersionSet) prepareGroup(edits []*Edit) ([]*pendingFamily, uint32, error) {
	var order []*pendingFamily
	pending := make(map[uint32]*pendingFamily)
	maxCF := vs.maxColumnFamily
	nameTaken := func(name string) bool {
		for _, p := range order {
			if p.name == name && !p.dropped {
				return true
			}
		}
		f := vs.FamilyByName(name)
		return f != nil && pending[f.id] == nil
	}
	for _, e := range edits {
		if e.HasComparator && !e.HasColumnFamilyAdd {
			// A family's order never changes: only the add of a new
			// family may name one.
			f := vs.famByID[e.ColumnFamily]
			if f == nil || f.current == nil || f.current.Comparer().Name != e.ComparatorName {
				return nil, 0, base.InvalidArgumentf("version: column family %d: comparator %q does not match the family's",
					e.ColumnFamily, e.ComparatorName)
			}
		}
		if (e.HasColumnFamilyAdd || e.ColumnFamilyDrop) && (len(e.NewFiles) > 0 || len(e.DeletedFiles) > 0) {
			return nil, 0, base.InvalidArgumentf("version: column family %d: an add or drop edit carries files",
				e.ColumnFamily)
		}
		var p *pendingFamily
		switch {
		case e.HasColumnFamilyAdd && e.ColumnFamilyDrop:
			return nil, 0, base.InvalidArgumentf("version: column family %d: both added and dropped", e.ColumnFamily)
		case e.HasColumnFamilyAdd:
			if e.ColumnFamily <= maxCF {
				return nil, 0, base.AssertionFailedf("version: new column family id %d not above the largest used, %d",
					e.ColumnFamily, maxCF)
			}
			if nameTaken(e.ColumnFamilyAdd) {
				return nil, 0, base.InvalidArgumentf("version: column family %q exists", e.ColumnFamilyAdd)
			}
			maxCF = e.ColumnFamily
			p = &pendingFamily{id: e.ColumnFamily, name: e.ColumnFamilyAdd, b: newBuilder(&Version{cmp: e.Comparer}),
				logNum: vs.def.logNum}
			if e.HasLogNumber {
				p.logNum = e.LogNumber
			}
			pending[p.id] = p
			order = append(order, p)
			e.ComparatorName, e.HasComparator = e.Comparer.OrDefault().Name, true
			e.MaxColumnFamily, e.HasMaxColumnFamily = maxCF, true
		default:
			p = pending[e.ColumnFamily]
			if p == nil {
				f := vs.famByID[e.ColumnFamily]
				if f == nil {
					return nil, 0, base.AssertionFailedf("version: edit for unknown or dropped column family %d",
						e.ColumnFamily)
				}
				p = &pendingFamily{fam: f, id: f.id, name: f.name, b: newBuilder(f.current), logNum: f.logNum}
				pending[p.id] = p
				order = append(order, p)
			}
			if p.dropped {
				return nil, 0, base.AssertionFailedf("version: edit for dropped column family %d", e.ColumnFamily)
			}
		}
		if e.ColumnFamilyDrop {
			if e.ColumnFamily == 0 {
				return nil, 0, base.InvalidArgumentf("version: the default column family cannot be dropped")
			}
			p.dropped = true
		} else if e.HasLogNumber && (e.LogNumber < p.logNum || e.LogNumber >= vs.nextFileNum) {
			return nil, 0, base.AssertionFailedf("version: column family %d: log number %d outside [%d, %d)",
				e.ColumnFamily, e.LogNumber, p.logNum, vs.nextFileNum)
		}
		if err := p.b.apply(e); err != nil {
			return nil, 0, base.AssertionFailedf("version: column family %d: applying edit: %v", e.ColumnFamily, err)
		}
		if e.HasMaxColumnFamily && e.MaxColumnFamily > maxCF {
			maxCF = e.MaxColumnFamily
		}
		vs.fillCounters(e, p)
		if e.HasLogNumber {
			p.logNum = e.LogNumber
		}
	}
	for _, p := range order {
		if p.dropped {
			continue
		}
		v, err := p.b.finish()
		if err != nil {
			return nil, 0, base.AssertionFailedf("version: column family %d: applying edit: %v", p.id, err)
		}
		if invariantsEnabled {
			if err := v.CheckOrdering(); err != nil {
				return nil, 0, err
			}
		}
		p.v = v
	}
	return order, maxCF, nil
}

func (vs *VersionSet) logAndApply(edits []*Edit, atomic bool) error {
	vs.WaitForWriter()
	vs.writing = true
	defer func() {
		vs.writing = false
		if vs.mu != nil {
			vs.writerCond.Broadcast()
		}
	}()
	order, maxCF, err := vs.prepareGroup(edits)
	if err != nil {
		return err
	}
	rotate := vs.manifest == nil || vs.manifest.Size() >= vs.opts.MaxManifestFileSize
	var newNum uint64
	var snap [][]byte
	if rotate {
		newNum = vs.NextFileNum()
	}
	for len(vs.scratch) < len(edits) {
		vs.scratch = append(vs.scratch, nil)
	}
	recs := vs.scratch[:len(edits)]
	for i, e := range edits {
		e.NextFileNumber, e.HasNextFileNumber = vs.nextFileNum, true
		// The group marks are LogAndApplyGroup's to set: a stray mark
		// from LogAndApply's caller would leave an unfinished group in
		// the MANIFEST, which the next edit would make corrupt.
		e.InAtomicGroup, e.RemainingEntries = atomic, 0
		if atomic {
			e.RemainingEntries = uint32(len(edits) - 1 - i)
		}
		recs[i] = e.Encode(recs[i][:0])
	}
	if rotate {
		// The snapshot is taken under the mutex: it reads the families
		// and the counters.
		snap = vs.encodeSnapshot()
	}
	// Only this LogAndApply touches the MANIFEST writer and scratch until
	// it returns (writing is set), so the I/O runs without the mutex.
	if vs.mu != nil {
		vs.mu.Unlock()
	}
	if rotate {
		err = vs.writeNewManifest(newNum, snap, recs)
	} else {
		err = vs.appendManifest(recs)
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
	// No other edit ran meanwhile, so the Versions still derive from the
	// families' current ones; only SetLastSeq may have moved lastSeq on.
	for _, e := range edits {
		vs.prevLogNum = e.PrevLogNumber
		if e.LastSequence > vs.lastSeq {
			vs.lastSeq = e.LastSequence
		}
		if e.HasMinLogNumberToKeep && e.MinLogNumberToKeep > vs.minLogNumToKeep {
			vs.minLogNumToKeep = e.MinLogNumberToKeep
		}
	}
	for _, p := range order {
		f := p.fam
		if f == nil {
			f = &Family{id: p.id, name: p.name}
			vs.addFamily(f)
		}
		f.logNum = p.logNum
		if p.dropped {
			vs.dropFamily(f)
			continue
		}
		vs.install(f, p.v)
	}
	if maxCF > vs.maxColumnFamily {
		vs.maxColumnFamily = maxCF
	}
	return nil
}

// fillCounters completes e's counters from the VersionSet's and from p, the
// family e applies to. A drop edit gets no log number: its family has none
// left to record.
func (vs *VersionSet) fillCounters(e *Edit, p *pendingFamily) {
	if !e.HasLogNumber && !e.ColumnFamilyDrop {
		e.LogNumber, e.HasLogNumber = p.logNum, true
	}
	if !e.HasPrevLogNumber {
		e.PrevLogNumber, e.HasPrevLogNumber = vs.prevLogNum, true
	}
	if !e.HasLastSequence || e.LastSequence < vs.lastSeq {
		e.LastSequence, e.HasLastSequence = vs.lastSeq, true
	}
}

// appendManifest appends encoded edits to the open MANIFEST, one record
// each, and flushes and syncs once. On failure the writer is dropped, so
// that the next edit starts afresh.
func (vs *VersionSet) appendManifest(recs [][]byte) error {
	var err error
	for _, rec := range recs {
		if _, err = vs.manifest.WriteRecord(rec); err != nil {
			break
		}
	}
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

// snapshotEdits returns the edits that recreate the current state (see
// snapshotLayout).
func (vs *VersionSet) snapshotEdits() []Edit {
	fams := make([]SnapshotFamily, len(vs.fams))
	for i, f := range vs.fams {
		fams[i] = SnapshotFamily{ID: f.id, Name: f.name, Version: f.current, LogNumber: f.logNum}
	}
	return snapshotLayout(fams, SnapshotState{
		PrevLogNumber:   vs.prevLogNum,
		NextFileNumber:  vs.nextFileNum,
		LastSequence:    vs.lastSeq,
		MaxColumnFamily: vs.maxColumnFamily,
	}, vs.minLogNumToKeep)
}

// snapshotLayout returns the edits of a snapshot of fams (default first, ids
// ascending) and st, laid out as RocksDB's WriteCurrentStateToManifest does:
// for each family an edit naming it (ColumnFamily, ColumnFamilyAdd except
// for the default, which exists implicitly) with the comparator, then an
// edit with its files and log number. The global counters go on the
// default family's files edit.
func snapshotLayout(fams []SnapshotFamily, st SnapshotState, minLogNumToKeep uint64) []Edit {
	edits := make([]Edit, 0, 2*len(fams))
	for _, f := range fams {
		id := Edit{ColumnFamily: f.ID, ComparatorName: f.Version.Comparer().Name, HasComparator: true}
		if f.ID != 0 {
			id.ColumnFamilyAdd, id.HasColumnFamilyAdd = f.Name, true
		}
		e := Edit{ColumnFamily: f.ID}
		e.LogNumber, e.HasLogNumber = f.LogNumber, true
		if f.ID == 0 {
			e.PrevLogNumber, e.HasPrevLogNumber = st.PrevLogNumber, true
			e.NextFileNumber, e.HasNextFileNumber = st.NextFileNumber, true
			e.LastSequence, e.HasLastSequence = st.LastSequence, true
			if minLogNumToKeep != 0 {
				e.MinLogNumberToKeep, e.HasMinLogNumberToKeep = minLogNumToKeep, true
			}
			if st.MaxColumnFamily > 0 {
				e.MaxColumnFamily, e.HasMaxColumnFamily = st.MaxColumnFamily, true
			}
		}
		for level, files := range f.Version.Levels {
			for _, m := range files {
				e.NewFiles = append(e.NewFiles, NewFileEntry{Level: level, Meta: m})
			}
		}
		for _, b := range f.Version.BlobFiles {
			e.BlobFiles = append(e.BlobFiles, BlobFileAddition{FileNum: b.FileNum, TotalCount: b.TotalCount,
				TotalBytes: b.TotalBytes, ChecksumMethod: b.ChecksumMethod, ChecksumValue: b.ChecksumValue})
			if b.GarbageCount > 0 || b.GarbageBytes > 0 {
				e.BlobGarbage = append(e.BlobGarbage, BlobFileGarbage{FileNum: b.FileNum,
					GarbageCount: b.GarbageCount, GarbageBytes: b.GarbageBytes})
			}
		}
		edits = append(edits, id, e)
	}
	return edits
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
// the state, from encodeSnapshot) followed by recs, syncs it, and
// points CURRENT at it. On success the old MANIFEST is closed and removed;
// on failure the new one is removed and the old one stays as it was. It
// reads no state but the MANIFEST writer's, so it may run without the
// caller's mutex while LogAndApply holds the writer role.
func (vs *VersionSet) writeNewManifest(num uint64, snap, recs [][]byte) (err error) {
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
	for _, r := range recs {
		if _, err := w.WriteRecord(r); err != nil {
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
		// Removed only now that it is closed (Windows refuses to remove an
		// open file). A failure is kept for the next switch to retry; the
		// db's sweep at Open removes it otherwise.
		vs.oldManifests = append(vs.oldManifests, oldNum)
	}
	kept := vs.oldManifests[:0]
	for _, n := range vs.oldManifests {
		err := vs.fs.Remove(vs.path(base.MakeFilename(base.FileKindManifest, n)))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			kept = append(kept, n)
		}
	}
	vs.oldManifests = kept
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
