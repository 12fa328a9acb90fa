package version

import (
	"bytes"
	"io"
	"sort"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/errors/oserror"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/internal/vfs"
)

// maxCurrentSize bounds what Load reads of CURRENT.
const maxCurrentSize = 4096

// Load recovers the VersionSet of dir: it reads CURRENT, replays the MANIFEST
// it names and installs the resulting Version of each live column family.
// A torn last record (cut by a
// crash) is dropped: its edit was never acknowledged. Other damage gives an
// error of class base.ErrCorruption naming the MANIFEST and offset: a bad
// checksum, a malformed edit, a damaged fragment header (even in the last
// block, where a damaged length could pass for a torn write; see package
// record), a table whose sequence numbers exceed the last sequence, an edit
// for a column family never added, a second add of a live family's id or
// name. A family with another comparator gives ErrInvalidArgument.
//
// Column families are replayed as RocksDB does: an edit with
// ColumnFamilyAdd creates a family, one with ColumnFamilyDrop removes it, and
// later edits for a dropped family are ignored but for the global counters
// they carry (a flush of the family may commit after its drop).
//
// A MANIFEST cut exactly at a record boundary reads as a valid, older
// history: Load cannot tell it from a complete one. The db checks the
// recovered state against the directory (every table present with its
// size; the oldest live WAL present unless no later table is unrecorded).
// The loaded MANIFEST is not written to again; the first LogAndApply starts a
// new one.
func Load(fs vfs.FS, dir string, opts Options) (*VersionSet, error) {
	vs := newVersionSet(fs, dir, opts)
	num, err := readCurrent(fs, vs.path(base.MakeFilename(base.FileKindCurrent, 0)))
	if err != nil {
		return nil, err
	}
	name := base.MakeFilename(base.FileKindManifest, num)
	f, err := fs.Open(vs.path(name))
	if err != nil {
		err = errors.Wrapf(err, "strata: version: opening %s named by CURRENT", name)
		if oserror.IsNotExist(err) {
			// As RocksDB: CURRENT points to a non-existent file.
			err = base.MarkCorruption(err)
		}
		return nil, err
	}
	defer f.Close()
	r := newReplay(vs, name)
	if err := r.run(record.NewReader(f, num, name)); err != nil {
		return nil, err
	}
	vs.manifestNum = num
	vs.MarkFileNumUsed(num)
	vs.MarkFileNumUsed(vs.prevLogNum)
	vs.maxColumnFamily = r.maxCF
	for _, id := range r.ids() {
		rf := r.fams[id]
		cmp, err := vs.opts.resolveComparer(rf.name, rf.comparator)
		if err != nil {
			vs.unrefAll()
			return nil, errors.Wrapf(err, "%s", name)
		}
		rf.b.base.cmp = cmp
		v, err := rf.b.finish()
		if err == nil {
			err = v.CheckOrdering()
		}
		if err == nil {
			err = checkLastSeq(v, vs.lastSeq)
		}
		if err != nil {
			vs.unrefAll()
			return nil, base.CorruptionErrorf("version: %s: column family %d (%q): %v", name, id, rf.name, err)
		}
		vs.MarkFileNumUsed(rf.logNum)
		for n := range v.liveNums() {
			vs.MarkFileNumUsed(n)
		}
		fam := &Family{id: id, name: rf.name, logNum: rf.logNum}
		vs.addFamily(fam)
		vs.install(fam, v)
	}
	return vs, nil
}

// unrefAll drops the VersionSet's references to its families' Versions (a
// Load that fails part way).
func (vs *VersionSet) unrefAll() {
	for _, f := range vs.fams {
		if f.current != nil {
			f.current.Unref()
			f.current = nil
		}
	}
}

// checkLastSeq verifies that no table holds a sequence number above the
// recorded last sequence: new writes would reuse those numbers and be
// shadowed by older data.
func checkLastSeq(v *Version, last base.SeqNum) error {
	for level, files := range v.Levels {
		for _, f := range files {
			if f.LargestSeq > last {
				return errors.Newf("table %s (L%d) holds sequence number %d, above the last sequence %d",
					base.MakeFilename(base.FileKindTable, f.FileNum), level, f.LargestSeq, last)
			}
		}
	}
	return nil
}

func (v *Version) liveNums() map[uint64]struct{} {
	m := make(map[uint64]struct{})
	v.AddLiveFileNums(m)
	return m
}

// readCurrent returns the number of the MANIFEST that CURRENT names.
func readCurrent(fs vfs.FS, path string) (uint64, error) {
	f, err := fs.Open(path)
	if err != nil {
		return 0, errors.Wrap(err, "strata: version: opening CURRENT")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCurrentSize+1))
	if err != nil {
		return 0, errors.Wrap(err, "strata: version: reading CURRENT")
	}
	if len(data) > maxCurrentSize || len(data) == 0 || data[len(data)-1] != '\n' {
		return 0, base.CorruptionErrorf("version: CURRENT: %q does not end with a newline", truncate(data))
	}
	kind, num, ok := base.ParseFilename(string(data[:len(data)-1]))
	if !ok || kind != base.FileKindManifest || bytes.ContainsAny(data[:len(data)-1], "/\n") {
		return 0, base.CorruptionErrorf("version: CURRENT: %q does not name a MANIFEST", truncate(data))
	}
	return num, nil
}

func truncate(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// replay applies the edits of one MANIFEST.
type replay struct {
	vs   *VersionSet
	name string
	// fams holds the live families; dropped the ids of families dropped so
	// far, whose later edits are ignored. maxCF is the largest family id
	// recorded or seen.
	fams    map[uint32]*replayFamily
	dropped map[uint32]bool
	maxCF   uint32
	// group holds the edits of an atomic group until its last one.
	group []*Edit

	hasLogNum, hasNextFile, hasLastSeq bool
}

// replayFamily is one family being replayed.
type replayFamily struct {
	name   string
	b      *builder
	logNum uint64
	// comparator is the comparator name the family's records name ("" if
	// none does); Load resolves it through Options.Comparer once the whole
	// MANIFEST is read, before the family's Version is built.
	comparator string
}

func newReplay(vs *VersionSet, name string) *replay {
	return &replay{vs: vs, name: name, dropped: make(map[uint32]bool),
		fams: map[uint32]*replayFamily{0: {name: DefaultFamilyName, b: newBuilder(&Version{})}}}
}

// ids returns the ids of the live families, ascending.
func (r *replay) ids() []uint32 {
	ids := make([]uint32, 0, len(r.fams))
	for id := range r.fams {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func (r *replay) run(rr *record.Reader) error {
	for {
		rec, err := rr.Next()
		if err == io.EOF || errors.Is(err, record.ErrTornTail) {
			// An incomplete atomic group was never acknowledged: drop it.
			break
		}
		if err != nil {
			return err
		}
		e := &Edit{}
		if err := e.Decode(rec); err != nil {
			return errors.Wrapf(err, "%s: record at offset %d", r.name, rr.Offset())
		}
		if err := r.add(e); err != nil {
			if errors.Is(err, base.ErrInvalidArgument) {
				return errors.Wrapf(err, "%s", r.name)
			}
			return base.CorruptionErrorf("version: %s: record at offset %d: %v", r.name, rr.Offset(), err)
		}
	}
	switch {
	case !r.hasLogNum:
		return base.CorruptionErrorf("version: %s: no LogNumber entry", r.name)
	case !r.hasNextFile:
		return base.CorruptionErrorf("version: %s: no NextFileNumber entry", r.name)
	case !r.hasLastSeq:
		return base.CorruptionErrorf("version: %s: no LastSequence entry", r.name)
	}
	return nil
}

// add applies e, or buffers it while its atomic group is incomplete.
func (r *replay) add(e *Edit) error {
	if e.InAtomicGroup {
		if len(r.group) > 0 && r.group[len(r.group)-1].RemainingEntries != e.RemainingEntries+1 {
			return errors.Newf("atomic group: %d entries remaining after one that said %d",
				e.RemainingEntries, r.group[len(r.group)-1].RemainingEntries)
		}
		r.group = append(r.group, e)
		if e.RemainingEntries > 0 {
			return nil
		}
		group := r.group
		r.group = nil
		for _, g := range group {
			if err := r.apply(g); err != nil {
				return err
			}
		}
		return nil
	}
	if len(r.group) > 0 {
		return errors.New("atomic group interrupted by an edit outside it")
	}
	return r.apply(e)
}

func (r *replay) apply(e *Edit) error {
	id := e.ColumnFamily
	if id > r.maxCF {
		r.maxCF = id
	}
	if e.HasMaxColumnFamily && e.MaxColumnFamily > r.maxCF {
		r.maxCF = e.MaxColumnFamily
	}
	rf := r.fams[id]
	switch {
	case e.HasColumnFamilyAdd && e.ColumnFamilyDrop:
		return errors.Newf("column family %d both added and dropped", id)
	case e.HasColumnFamilyAdd:
		if rf != nil {
			// RocksDB's writers never add the default family, but
			// older code accepted {ColumnFamily 0, "default"}: keep
			// reading such MANIFESTs.
			if id == 0 && e.ColumnFamilyAdd == DefaultFamilyName {
				break
			}
			return errors.Newf("column family %d (%q) added again as %q", id, rf.name, e.ColumnFamilyAdd)
		}
		for oid, o := range r.fams {
			if o.name == e.ColumnFamilyAdd {
				return errors.Newf("column family %q added as %d, but it is family %d", e.ColumnFamilyAdd, id, oid)
			}
		}
		delete(r.dropped, id)
		rf = &replayFamily{name: e.ColumnFamilyAdd, b: newBuilder(&Version{})}
		r.fams[id] = rf
	case rf == nil && r.dropped[id]:
		// An edit for a family dropped earlier (RocksDB may commit a
		// flush of it after the drop): only its global counters count.
	case rf == nil:
		return errors.Newf("edit for column family %d, which was never added", id)
	case e.ColumnFamilyDrop:
		if id == 0 {
			return errors.New("the default column family is dropped")
		}
		delete(r.fams, id)
		r.dropped[id] = true
		rf = nil
	}
	if rf != nil {
		if e.HasComparator {
			if rf.comparator != "" && rf.comparator != e.ComparatorName {
				return base.InvalidArgumentf("version: column family %d: %s: does not match existing comparator %s",
					id, e.ComparatorName, rf.comparator)
			}
			rf.comparator = e.ComparatorName
		}
		if err := rf.b.apply(e); err != nil {
			return errors.Wrapf(err, "column family %d", id)
		}
		if e.HasLogNumber {
			rf.logNum = e.LogNumber
		}
	}
	vs := r.vs
	if e.HasLogNumber {
		r.hasLogNum = true
	}
	if e.HasPrevLogNumber {
		vs.prevLogNum = e.PrevLogNumber
	}
	if e.HasNextFileNumber {
		vs.nextFileNum, r.hasNextFile = e.NextFileNumber, true
	}
	if e.HasLastSequence {
		vs.lastSeq, r.hasLastSeq = e.LastSequence, true
	}
	if e.HasMinLogNumberToKeep && e.MinLogNumberToKeep > vs.minLogNumToKeep {
		vs.minLogNumToKeep = e.MinLogNumberToKeep
	}
	return nil
}
