package db

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/killpoint"
	"github.com/stratadb/strata/internal/version"
)

// Compaction: scheduling, manual compaction and the lifecycle of one
// compaction job. The merge itself is in compaction_run.go; picking is in
// version/picker.go; docs/compaction.md describes the policy.
//
// Concurrency: a compaction is picked and its input files marked
// Compacting under d.mu; the files are merged without the lock; the result
// is installed with LogAndApply, which holds d.mu except while it writes and
// syncs the MANIFEST (edits are still applied one at a time, in order). Two
// compactions never share an input file, and a compaction is not picked
// when its range intersects the range of an in-flight compaction writing
// into the same output level, so concurrent compactions produce
// non-overlapping files.

// compactionState is all of DB's compaction scheduling state, grouped by
// what guards it. (The Compacting flag of each input file, in
// version.FileMetadata, is guarded by DB.mu as well.)
type compactionState struct {
	// Mutable options (SetOptions): atomics read without a lock, stored by
	// Open before the DB is shared and then only by SetOptions, under
	// DB.setOptionsMu. For the integers, 0 means "as in d.opts".
	disableAuto                   atomic.Bool
	l0Trigger, l0Slowdown, l0Stop atomic.Int64
	targetFileSize, maxBytesBase  atomic.Int64
	multiplierBits                atomic.Uint64 // math.Float64bits; 0 = unset

	// manualMu makes CompactRange calls run one at a time; it is taken
	// before DB.mu, never while holding it.
	manualMu sync.Mutex

	// The rest is guarded by DB.mu.

	// inflight are the compactions running, automatic and manual, in start
	// order: len(inflight) is the number running. Their input files are
	// marked Compacting.
	inflight []*compaction
	// ingesting are the levels and user-key ranges of the files of the
	// ingestion whose MANIFEST edit is being written (DB.mu is released
	// then). The picker treats them as in flight: a compaction planned
	// against the version without them would write into their range.
	ingesting []ingestRange
	// manual counts CompactRange calls under way; while it is positive no
	// automatic compaction starts.
	manual int
	// cursor holds, per level, the largest user key of the last file picked
	// there (the round-robin cursor of the leveled picker).
	cursor [version.NumLevels][]byte

	// seekCand is the read-triggered compaction candidate: a table whose
	// seek budget Gets have spent. Gets set it (only when empty) without
	// DB.mu; the picker, under DB.mu, clears it once it picks the table's
	// compaction or finds the table gone.
	seekCand atomic.Pointer[seekCandidate]
	// seekPicks counts the read-triggered compactions picked.
	seekPicks atomic.Int64
}

// seekCandidate is a table whose seek budget is spent, and its level when
// it was charged.
type seekCandidate struct {
	f     *version.FileMetadata
	level int
}

type compactionKind int

const (
	compactionMerge  compactionKind = iota // merge inputs into new files
	compactionMove                         // move one file down by MANIFEST edit
	compactionDelete                       // FIFO: drop the inputs
)

// compaction is one compaction job. Its input files are marked Compacting
// from pick to finish.
type compaction struct {
	cf *ColumnFamily
	// version is the family's Version the compaction was started from,
	// referenced until it ends, so that its inputs stay on disk even when
	// the family is dropped meanwhile.
	version *version.Version
	kind    compactionKind
	pick    *version.Pick
	// manual compactions never move trivially.
	manual bool
	// bottommost: no level below the output holds a file in the range, so
	// deletions that no snapshot needs can be dropped.
	bottommost bool
	targetSize uint64
	// maxOverlap bounds the grandparent bytes one output file may overlap.
	maxOverlap uint64
	// outputs are the tables installed, for the CompactionEnd event.
	outputs []*version.FileMetadata
	// blobGarbage is what the compaction made garbage of the blob files
	// its inputs refer to, recorded in its MANIFEST edit.
	blobGarbage []version.BlobFileGarbage
	// newBlobs are the blob files the compaction wrote.
	newBlobs []version.BlobFileAddition
	// filtered: the filter (or TTL) changed or removed an entry in the
	// last run (set by every key range of a split compaction, so atomic);
	// noFilter runs it without one (see compactLocked).
	filtered atomic.Bool
	noFilter bool
}

// errCompactionAborted ends a compaction that Close interrupted; a
// CompactRange call returns it, so it wraps ErrClosed.
var errCompactionAborted = errors.Wrap(ErrClosed, "strata: compaction aborted: database closing")

func (d *DB) optInt(v *atomic.Int64, def int) int {
	if n := v.Load(); n > 0 {
		return int(n)
	}
	return def
}

func (cf *ColumnFamily) l0Trigger() int {
	return cf.d.optInt(&cf.comp.l0Trigger, cf.opts.Level0FileNumCompactionTrigger)
}
func (cf *ColumnFamily) l0Slowdown() int {
	return cf.d.optInt(&cf.comp.l0Slowdown, cf.opts.Level0SlowdownWritesTrigger)
}
func (cf *ColumnFamily) l0Stop() int {
	return cf.d.optInt(&cf.comp.l0Stop, cf.opts.Level0StopWritesTrigger)
}

func (cf *ColumnFamily) targetFileSize() uint64 {
	if n := cf.comp.targetFileSize.Load(); n > 0 {
		return uint64(n)
	}
	return uint64(cf.opts.TargetFileSizeBase)
}

// pickerOptions snapshots the mutable picking options.
func (cf *ColumnFamily) pickerOptions() version.PickerOptions {
	base := uint64(cf.opts.MaxBytesForLevelBase)
	if n := cf.comp.maxBytesBase.Load(); n > 0 {
		base = uint64(n)
	}
	mult := float64(cf.opts.MaxBytesForLevelMultiplier)
	if b := cf.comp.multiplierBits.Load(); b != 0 {
		mult = math.Float64frombits(b)
	}
	return version.PickerOptions{L0Trigger: cf.l0Trigger(), BaseBytes: base, Multiplier: mult,
		Dynamic: cf.opts.LevelCompactionDynamicLevelBytes}
}

// maxCompactions is the number of compactions that may run at once, over
// all families: the background jobs less those RocksDB reserves for flushes
// (a quarter, at least one), at least one.
func (d *DB) maxCompactions() int {
	jobs := d.optInt(&d.maxBackgroundJobs, d.opts.MaxBackgroundJobs)
	return max(1, jobs-max(1, jobs/4))
}

// l0CountLocked is the number of L0 files of cf. d.mu must be held.
func (cf *ColumnFamily) l0CountLocked() int {
	return len(cf.mu.vf.Current().Levels[0])
}

// pendingCompactionBytesLocked estimates the bytes cf's compaction is
// behind by. d.mu must be held.
func (cf *ColumnFamily) pendingCompactionBytesLocked() uint64 {
	if cf.opts.CompactionStyle != LevelCompaction {
		return 0
	}
	return cf.mu.vf.Current().PendingCompactionBytes(cf.pickerOptions())
}

// inflightLocked counts the compactions running in every family. d.mu
// must be held.
func (d *DB) inflightLocked() int {
	n := 0
	for _, cf := range d.mu.fams {
		n += len(cf.comp.inflight)
	}
	return n
}

// maybeScheduleCompactionLocked starts background compactions while some
// are due and job slots are free, taking the families in turn so that one
// family's debt does not starve the others. d.mu must be held.
func (d *DB) maybeScheduleCompactionLocked() {
	if d.opts.ReadOnly || d.mu.versions == nil || d.mu.closing || d.mu.bgErr != nil {
		return
	}
	running := d.inflightLocked()
	for running < d.maxCompactions() {
		var c *compaction
		n := len(d.mu.fams)
		for i := 0; i < n && c == nil; i++ {
			cf := d.mu.fams[(d.mu.compactNext+i)%n]
			if cf.comp.manual > 0 || cf.comp.disableAuto.Load() {
				continue
			}
			c = d.pickAutoLocked(cf)
			if c != nil {
				d.mu.compactNext = (d.mu.compactNext + i + 1) % n
			}
		}
		if c == nil {
			return
		}
		d.startCompactionLocked(c)
		running++
		d.mu.bgWG.Add(1)
		go func() {
			defer d.mu.bgWG.Done()
			d.mu.Lock()
			defer d.mu.Unlock()
			_ = d.runCompactionLocked(c)
			d.maybeScheduleCompactionLocked()
		}()
	}
}

// pickAutoLocked picks the next automatic compaction, or nil. d.mu must be
// held.
func (d *DB) pickAutoLocked(cf *ColumnFamily) *compaction {
	v := cf.mu.vf.Current()
	if cf.opts.CompactionStyle == FIFOCompaction {
		if len(cf.comp.inflight) > 0 {
			return nil
		}
		return d.pickFIFOLocked(cf, v, cf.opts.FIFOAllowCompaction)
	}
	busy := func(level int, smallest, largest []byte) bool {
		for _, c := range cf.comp.inflight {
			p := c.pick
			if p.OutputLevel == level && cf.cmp.CompareUser(smallest, p.Largest) <= 0 &&
				cf.cmp.CompareUser(p.Smallest, largest) <= 0 {
				return true
			}
		}
		return cf.ingestingOverLocked(level, smallest, largest)
	}
	o := cf.pickerOptions()
	p := v.PickLeveled(o, busy, &cf.comp.cursor)
	if p == nil {
		p = cf.pickSeekLocked(v, o, busy)
	}
	if p == nil {
		if p = cf.pickBlobForceGCLocked(v, busy); p != nil {
			// Never a trivial move: the point is to rewrite the table.
			return cf.newCompaction(v, p, true)
		}
	}
	if p == nil {
		return nil
	}
	if p.StartLevel > 0 {
		cf.comp.cursor[p.StartLevel] = append([]byte(nil), p.Inputs[0][len(p.Inputs[0])-1].Largest.UserKey...)
	}
	return cf.newCompaction(v, p, false)
}

// ingestRange is the level and user-key range of a file being ingested.
type ingestRange struct {
	level             int
	smallest, largest []byte
}

// ingestingOverLocked reports whether an ingestion whose MANIFEST edit is
// in progress places a file at level or deeper over a range intersecting
// [smallest, largest]. A compaction into the file's own level would
// overlap it; one into a level above it is refused too, mirroring
// ingestLevelLocked (nothing above an ingested file overlaps it when it is
// placed). d.mu must be held.
func (cf *ColumnFamily) ingestingOverLocked(level int, smallest, largest []byte) bool {
	for _, r := range cf.comp.ingesting {
		if r.level >= level && cf.cmp.CompareUser(smallest, r.largest) <= 0 &&
			cf.cmp.CompareUser(r.smallest, largest) <= 0 {
			return true
		}
	}
	return false
}

// pickSeekLocked picks the read-triggered compaction of the seek
// candidate, if there is one and no size-triggered compaction is due (a
// level scoring 1 or more, even one whose pick must wait for a running
// compaction, goes first). It clears the candidate once picked, and when
// its table has left its level. d.mu must be held.
func (cf *ColumnFamily) pickSeekLocked(v *version.Version, o version.PickerOptions, busy version.Busy) *version.Pick {
	c := cf.comp.seekCand.Load()
	if c == nil {
		return nil
	}
	scores, baseLevel := v.ScoresAndBase(o)
	for _, s := range scores {
		if s >= 1 {
			return nil
		}
	}
	p, state := v.PickSeek(c.f, c.level, baseLevel, busy)
	if state != version.SeekBusy {
		cf.comp.seekCand.CompareAndSwap(c, nil)
	}
	if p != nil {
		cf.comp.seekPicks.Add(1)
	}
	return p
}

// noteSeekCandidate makes f, of level, whose seek budget a Get has just
// spent, the seek-compaction candidate when there is none, and asks the
// scheduler to look, on a goroutine of its own: the Get neither takes
// DB.mu nor waits. When another candidate is pending, f stays unrecorded
// and its next charge tries again. Only this rare path allocates.
func (cf *ColumnFamily) noteSeekCandidate(f *version.FileMetadata, level int) {
	if cf.comp.seekCand.Load() != nil {
		return
	}
	c := &seekCandidate{f: f, level: level}
	if !cf.comp.seekCand.CompareAndSwap(nil, c) {
		return
	}
	if !f.RecordSeekCandidate() {
		// Another Get recorded f between its charge and ours, and the
		// picker has already taken it out of the slot.
		cf.comp.seekCand.CompareAndSwap(c, nil)
		return
	}
	d := cf.d
	go func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.maybeScheduleCompactionLocked()
	}()
}

// pickFIFOLocked picks a FIFO deletion, or with allowMerge an intra-L0
// merge of small files. d.mu must be held.
func (d *DB) pickFIFOLocked(cf *ColumnFamily, v *version.Version, allowMerge bool) *compaction {
	if ttl := cf.ttlSeconds(); ttl > 0 {
		if del := fifoExpired(v, ttl, d.nowUnix()); len(del) > 0 {
			p := &version.Pick{Inputs: [2][]*version.FileMetadata{del, nil}}
			return &compaction{cf: cf, kind: compactionDelete, pick: p}
		}
	}
	if del := v.PickFIFODeletions(uint64(cf.opts.FIFOMaxTableFilesSize)); len(del) > 0 {
		p := &version.Pick{Inputs: [2][]*version.FileMetadata{del, nil}}
		return &compaction{cf: cf, kind: compactionDelete, pick: p}
	}
	if !allowMerge {
		return nil
	}
	p := v.PickFIFOIntraL0(cf.l0Trigger(), uint64(cf.writeBufferSize.Load()))
	if p == nil {
		return nil
	}
	return &compaction{cf: cf, kind: compactionMerge, pick: p, targetSize: math.MaxUint64}
}

// fifoExpired returns the L0 files, oldest first, that FIFO's TTL drops
// (RocksDB's FIFO ttl, PickTTLCompaction): every file from the oldest up
// to the first written less than ttl seconds before now. The age is the
// file's creation time (MANIFEST's file_creation_time), when it was
// written: no entry in it is younger, so a dropped table holds only
// expired values. RocksDB reads its rocksdb.creation.time property
// instead; a file without a creation time is never dropped.
func fifoExpired(v *version.Version, ttl, now int64) []*version.FileMetadata {
	files := v.Levels[0] // newest first
	var out []*version.FileMetadata
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		if f.Compacting || f.CreationTime == 0 || f.CreationTime+ttl >= now {
			break
		}
		out = append(out, f)
	}
	return out
}

// newCompaction turns a leveled pick into a job: a trivial move when a
// single file overlaps nothing in the output level and little below it.
func (cf *ColumnFamily) newCompaction(v *version.Version, p *version.Pick, manual bool) *compaction {
	c := &compaction{cf: cf, kind: compactionMerge, pick: p, manual: manual, targetSize: cf.targetFileSize(),
		maxOverlap: 10 * cf.targetFileSize()}
	c.bottommost = !v.BelowOverlaps(p.OutputLevel, p.Smallest, p.Largest)
	if !manual && len(p.Inputs[0]) == 1 && len(p.Inputs[1]) == 0 {
		var gp uint64
		for _, f := range p.Grandparents {
			gp += f.Size
		}
		if gp <= c.maxOverlap {
			c.kind = compactionMove
		}
	}
	return c
}

// startCompactionLocked marks c's inputs and counts it as running. d.mu
// must be held.
func (d *DB) startCompactionLocked(c *compaction) {
	d.setCompactingLocked(c, true)
	c.version = c.cf.mu.vf.Current()
	c.version.Ref()
	c.cf.comp.inflight = append(c.cf.comp.inflight, c)
}

func (d *DB) setCompactingLocked(c *compaction, on bool) {
	for _, files := range c.pick.Inputs {
		for _, f := range files {
			f.Compacting = on
		}
	}
}

// runCompactionLocked runs a started compaction to its end and unmarks it.
// A failure other than an abort at close becomes the background error:
// writes stop, reads go on. d.mu must be held; it is released during I/O.
func (d *DB) runCompactionLocked(c *compaction) error {
	start := time.Now()
	ev, evOn := d.evCompactionBegin(c)
	err := d.compactLocked(c)
	if evOn {
		d.evCompactionEnd(ev, c, start, err)
	}
	d.setCompactingLocked(c, false)
	comp := &c.cf.comp
	for i, x := range comp.inflight {
		if x == c {
			comp.inflight = append(comp.inflight[:i], comp.inflight[i+1:]...)
			break
		}
	}
	c.version.Unref()
	if err != nil && !errors.Is(err, errCompactionAborted) && !c.cf.mu.vf.Dropped() {
		d.setBgErrLocked(err)
	}
	if err == nil {
		d.stats.compactions.Add(1)
		d.stats.compactionMicros.Add(uint64(time.Since(start).Microseconds()))
		d.stats.level[c.pick.OutputLevel].compactions.Add(1)
	}
	d.mu.cond.Broadcast()
	return err
}

// compactLocked performs c and installs its result. d.mu must be held.
func (d *DB) compactLocked(c *compaction) error {
	p := c.pick
	ve := &version.Edit{ColumnFamily: c.cf.id}
	for i, files := range p.Inputs {
		level := p.StartLevel
		if i == 1 {
			level = p.OutputLevel
		}
		for _, f := range files {
			ve.DeletedFiles = append(ve.DeletedFiles, version.DeletedFileEntry{Level: level, FileNum: f.FileNum})
		}
	}
	var outs []*version.FileMetadata
	switch c.kind {
	case compactionMove:
		f := p.Inputs[0][0]
		outs = []*version.FileMetadata{f}
		d.stats.level[p.OutputLevel].bytesMoved.Add(f.Size)
	case compactionMerge:
		for try := 0; ; try++ {
			snaps := d.mu.snapshots.seqs()
			c.filtered.Store(false)
			d.mu.Unlock()
			var err error
			outs, err = d.runCompaction(c, snaps)
			killpoint.Maybe("compaction.after_outputs")
			d.mu.Lock()
			if err != nil {
				d.discardOutputsLocked(outs)
				return err
			}
			if !c.filtered.Load() {
				break
			}
			if !d.mu.snapshots.newerThan(snaps) {
				d.mu.snapshotHold++
				defer d.releaseSnapshotHoldLocked()
				break
			}
			// A snapshot taken while the compaction ran sees the entries
			// it filtered as "seen by no snapshot": installing the
			// outputs would change what that snapshot reads. Run again
			// with the snapshots of now; after a few tries (snapshots
			// keep coming), without the filter, which is always safe.
			d.discardOutputsLocked(outs)
			outs = nil
			if try == 2 {
				c.noFilter = true
			}
		}
	}
	for _, f := range outs {
		ve.NewFiles = append(ve.NewFiles, version.NewFileEntry{Level: p.OutputLevel, Meta: f})
	}
	ve.BlobGarbage = c.blobGarbage
	ve.BlobFiles = c.newBlobs
	killpoint.Maybe("compaction.before_manifest")
	// No edit may slip in between the check of the drop and this edit
	// (see version.VersionSet.WaitForWriter).
	d.mu.versions.WaitForWriter()
	if c.cf.mu.vf.Dropped() {
		// The family was dropped meanwhile: its files, the inputs among
		// them, are obsolete already, and the outputs belong to nothing.
		if c.kind != compactionMove {
			d.discardOutputsLocked(outs)
			for _, b := range c.newBlobs {
				delete(d.mu.pendingOutputs, b.FileNum)
				d.removeFile(base.FileKindBlob, b.FileNum)
			}
		}
		return nil
	}
	if err := d.mu.versions.LogAndApply(ve); err != nil {
		// The edit may have reached the MANIFEST: keep the outputs.
		return errors.Wrap(err, "strata: recording compaction in MANIFEST")
	}
	if c.kind != compactionMove {
		for _, files := range p.Inputs {
			for _, f := range files {
				d.mu.obsoleteTables = append(d.mu.obsoleteTables, f.FileNum)
			}
		}
	}
	for _, f := range outs {
		delete(d.mu.pendingOutputs, f.FileNum)
	}
	d.noteBlobFilesLocked(c.newBlobs)
	c.outputs = outs
	d.updateReadStateLocked(c.cf)
	killpoint.Maybe("compaction.before_delete_inputs")
	d.deleteObsoleteFilesLocked()
	return nil
}

// discardOutputsLocked deletes the finished outputs of a failed compaction.
// d.mu must be held.
func (d *DB) discardOutputsLocked(outs []*version.FileMetadata) {
	for _, f := range outs {
		delete(d.mu.pendingOutputs, f.FileNum)
		if d.removeFile(base.FileKindTable, f.FileNum) != nil {
			// No version has it: the next sweep retries.
			d.mu.obsoleteTables = append(d.mu.obsoleteTables, f.FileNum)
		}
	}
}

// CompactRange compacts the default family (see ColumnFamily.CompactRange).
func (d *DB) CompactRange(start, end []byte) error { return d.def.CompactRange(start, end) }

// CompactRange flushes the family's memtable, then compacts every level
// holding keys in [start, end] (nil = unbounded) into the next, down to the
// deepest level holding such keys, as RocksDB's CompactRange does; with
// FIFO it flushes and applies the size limit. It works with automatic
// compactions disabled, and waits for the family's running ones first.
func (cf *ColumnFamily) CompactRange(start, end []byte) error {
	d := cf.d
	if err := cf.check(d); err != nil {
		return err
	}
	if d.opts.ReadOnly {
		return errors.Wrap(ErrReadOnly, "strata: CompactRange on a read-only database")
	}
	if start != nil && end != nil && cf.cmp.CompareUser(start, end) > 0 {
		return errors.Wrapf(ErrInvalidArgument, "strata: CompactRange start %q > end %q", start, end)
	}
	if err := d.beginOp("CompactRange"); err != nil {
		return err
	}
	defer d.endOp()
	if err := cf.Flush(); err != nil {
		return err
	}
	cf.comp.manualMu.Lock()
	defer cf.comp.manualMu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	cf.comp.manual++
	defer func() {
		cf.comp.manual--
		d.maybeScheduleCompactionLocked()
	}()
	dropped := func() error {
		if cf.mu.vf.Dropped() {
			return errors.Wrapf(ErrInvalidArgument, "strata: column family %q was dropped during CompactRange", cf.name)
		}
		return nil
	}
	for len(cf.comp.inflight) > 0 {
		if d.mu.closing {
			return errors.Wrap(ErrClosed, "strata: database closed during CompactRange")
		}
		d.mu.cond.Wait()
	}
	if cf.opts.CompactionStyle == FIFOCompaction {
		return d.manualFIFOLocked(cf)
	}
	if err := dropped(); err != nil {
		return err
	}
	deepest := cf.mu.vf.Current().DeepestOverlapping(start, end)
	for level := 0; level < max(deepest, 1); level++ {
		if d.mu.bgErr != nil {
			return d.mu.bgErr
		}
		if d.mu.closing {
			return errors.Wrap(ErrClosed, "strata: database closed during CompactRange")
		}
		// A MANIFEST edit of an ingestion in progress (DB.mu released)
		// adds files the current version lacks: plan after it.
		for len(cf.comp.ingesting) > 0 && !d.mu.closing && d.mu.bgErr == nil {
			d.mu.cond.Wait()
		}
		if d.mu.bgErr != nil {
			return d.mu.bgErr
		}
		if d.mu.closing {
			return errors.Wrap(ErrClosed, "strata: database closed during CompactRange")
		}
		if err := dropped(); err != nil {
			return err
		}
		v := cf.mu.vf.Current()
		p := v.PickRange(level, level+1, start, end)
		if p == nil {
			continue
		}
		c := cf.newCompaction(v, p, true)
		d.startCompactionLocked(c)
		if err := d.runCompactionLocked(c); err != nil {
			return err
		}
	}
	if d.mu.bgErr == nil && (cf.opts.CompactionFilter != nil || cf.opts.TTL > 0) {
		// RocksDB's bottommost_level_compaction=kIfHaveCompactionFilter
		// (its default): with a filter (TTL's included) the deepest
		// level is rewritten in place too, so the filter sees every
		// entry in the range.
		v := cf.mu.vf.Current()
		if p := v.PickInLevel(v.DeepestOverlapping(start, end), start, end); p != nil {
			c := cf.newCompaction(v, p, true)
			d.startCompactionLocked(c)
			if err := d.runCompactionLocked(c); err != nil {
				return err
			}
		}
	}
	return d.mu.bgErr
}

// manualFIFOLocked applies FIFO's size limit to cf now. d.mu must be held.
func (d *DB) manualFIFOLocked(cf *ColumnFamily) error {
	for d.mu.bgErr == nil {
		if d.mu.closing {
			return errors.Wrap(ErrClosed, "strata: database closed during CompactRange")
		}
		if cf.mu.vf.Dropped() {
			return errors.Wrapf(ErrInvalidArgument, "strata: column family %q was dropped during CompactRange", cf.name)
		}
		c := d.pickFIFOLocked(cf, cf.mu.vf.Current(), false)
		if c == nil {
			break
		}
		d.startCompactionLocked(c)
		if err := d.runCompactionLocked(c); err != nil {
			return err
		}
	}
	return d.mu.bgErr
}
