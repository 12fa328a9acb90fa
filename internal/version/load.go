package version

import (
	"bytes"
	"io"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/errors/oserror"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/internal/vfs"
)

// maxCurrentSize bounds what Load reads of CURRENT.
const maxCurrentSize = 4096

// Load recovers the VersionSet of dir: it reads CURRENT, replays the MANIFEST
// it names and installs the resulting Version. A torn last record (cut by a
// crash) is dropped: its edit was never acknowledged. Other damage gives an
// error of class base.ErrCorruption naming the MANIFEST and offset: a bad
// checksum, a malformed edit, a damaged fragment header (even in the last
// block, where a damaged length could pass for a torn write; see package
// record), a table whose sequence numbers exceed the last sequence. An edit
// for a column family other than the default gives ErrUnsupportedColumnFamily.
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
	r := replay{vs: vs, name: name, b: newBuilder(&Version{})}
	if err := r.run(record.NewReader(f, num, name)); err != nil {
		return nil, err
	}
	v, err := r.b.finish()
	if err == nil {
		err = v.CheckOrdering()
	}
	if err == nil {
		err = checkLastSeq(v, vs.lastSeq)
	}
	if err != nil {
		return nil, base.CorruptionErrorf("version: %s: %v", name, err)
	}
	vs.manifestNum = num
	vs.MarkFileNumUsed(num)
	vs.MarkFileNumUsed(vs.logNum)
	vs.MarkFileNumUsed(vs.prevLogNum)
	for n := range v.liveNums() {
		vs.MarkFileNumUsed(n)
	}
	vs.install(v)
	return vs, nil
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
	b    *builder
	// group holds the edits of an atomic group until its last one.
	group []*Edit

	hasLogNum, hasNextFile, hasLastSeq bool
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
			if errors.Is(err, ErrUnsupportedColumnFamily) || errors.Is(err, base.ErrInvalidArgument) {
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
	if err := checkSupported(e); err != nil {
		return err
	}
	if e.HasComparator && e.ComparatorName != base.ComparatorName {
		return base.InvalidArgumentf("version: comparator %q does not match %q",
			e.ComparatorName, base.ComparatorName)
	}
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
	if err := r.b.apply(e); err != nil {
		return err
	}
	vs := r.vs
	if e.HasLogNumber {
		vs.logNum, r.hasLogNum = e.LogNumber, true
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
