package db

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/iterator"
	"github.com/stratadb/strata/internal/rangedel"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/table"
)

// Garbage collection during a merge. Live snapshots s1 < s2 < … < sk
// (exclusive read sequence numbers) cut the sequence space into stripes:
// stripe j holds the versions seen first by snapshot j (seq < s_j and
// seq >= s_{j-1}); stripe k holds those newer than every snapshot. Every
// reader sees either all of a stripe's versions of a key or none, so:
//
//   - of the versions of one user key in one stripe only the newest is
//     kept;
//   - a point version covered by a range tombstone of the same stripe is
//     dropped;
//   - at the bottommost level, a point deletion or a range tombstone in the
//     oldest stripe is dropped (what it hides is dropped with it, and
//     nothing lies below).

// stripeOf returns the index of the stripe of seq among snaps (ascending).
func stripeOf(seq base.SeqNum, snaps []base.SeqNum) int {
	i := 0
	for i < len(snaps) && seq >= snaps[i] {
		i++
	}
	return i
}

// runCompaction merges c's inputs into new tables and returns their
// metadata. On error it returns the outputs already finished, for the
// caller to delete. d.mu must not be held.
//
// With subcompactions (compaction_sub.go) the key ranges are merged on
// goroutines of their own, each into its own compactionOutputs; the
// outputs are returned in key order. The first failure cancels the other
// ranges (they stop at their next user key) and fails the compaction.
func (d *DB) runCompaction(c *compaction, snaps []base.SeqNum) ([]*version.FileMetadata, error) {
	tombs, inBytes, err := d.compactionTombstones(c)
	if err != nil {
		return nil, err
	}
	// One fragment set per stripe: sets[j] holds the tombstones visible
	// to snapshot j (the last: every tombstone).
	sets := make([]rangedel.Set, len(snaps)+1)
	for j, s := range snaps {
		sets[j] = rangedel.Build(c.cf.cmp, tombs, s)
	}
	sets[len(snaps)] = rangedel.Build(c.cf.cmp, tombs, base.MaxSeqNum)
	var kept []base.Tombstone
	for _, t := range tombs {
		if c.bottommost && stripeOf(t.Seq, snaps) == 0 {
			continue
		}
		kept = append(kept, t)
	}
	bounds, err := d.subcompactionBoundaries(c, d.subcompactionLimit())
	if err != nil {
		return nil, err
	}
	n := len(bounds) + 1
	// Blob files: each range writes its own (blob_files on) and counts the
	// blob references it reads and writes; the garbage is the difference
	// over all ranges.
	var gcBelow uint64
	if s := c.cf.blob.Load(); s != nil && s.gc {
		gcBelow = blobGCCutoff(c.version, s.ageCutoff)
	}
	outs := make([]*compactionOutputs, n)
	errs := make([]error, n)
	var cancel atomic.Bool
	for i := range outs {
		o := &compactionOutputs{d: d, c: c, tombs: kept, blobIn: make(blobFlow), blobOut: make(blobFlow),
			bw: c.cf.newBlobWriter(), gcBelow: gcBelow}
		if n > 1 {
			if i > 0 {
				o.lower = bounds[i-1]
			}
			if i < n-1 {
				o.upper = bounds[i]
			}
			o.tombs = clipTombstones(c.cf.cmp, kept, o.lower, o.upper)
		}
		outs[i] = o
	}
	if n == 1 {
		errs[0] = d.runSubcompaction(outs[0], sets, snaps, nil)
	} else {
		d.stats.subcompactions.Add(uint64(n))
		d.logf(slog.LevelInfo, "compaction split into subcompactions", "family", c.cf.name,
			"start_level", c.pick.StartLevel, "output_level", c.pick.OutputLevel, "ranges", n, "input_bytes", inBytes)
		var wg sync.WaitGroup
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if errs[i] = d.runSubcompaction(outs[i], sets, snaps, &cancel); errs[i] != nil {
					cancel.Store(true)
				}
			}()
		}
		wg.Wait()
	}
	var metas []*version.FileMetadata
	for _, o := range outs {
		metas = append(metas, o.metas...)
	}
	for _, e := range errs {
		// A range stopped because another failed reports the other's
		// error, not its own.
		if e != nil && (err == nil || errors.Is(err, errSubcompactionCancelled)) {
			err = e
		}
	}
	c.newBlobs = nil
	for _, o := range outs {
		if err != nil {
			break
		}
		var adds []version.BlobFileAddition
		adds, err = o.bw.finish()
		c.newBlobs = append(c.newBlobs, adds...)
	}
	if err != nil {
		for _, o := range outs {
			o.bw.abandon()
		}
		c.newBlobs = nil
		return metas, err
	}
	in, out := make(blobFlow), make(blobFlow)
	for _, o := range outs {
		in.merge(o.blobIn)
		out.merge(o.blobOut)
	}
	c.blobGarbage = in.garbage(out)
	p := c.pick
	var wrote uint64
	for _, m := range metas {
		wrote += m.Size
	}
	wrote += blobFileBytes(c.newBlobs)
	ls := &d.stats.level[p.OutputLevel]
	ls.bytesRead.Add(inBytes)
	ls.bytesWritten.Add(wrote)
	for _, f := range p.Inputs[0] {
		ls.bytesReadStart.Add(f.Size)
	}
	return metas, nil
}

// errSubcompactionCancelled stops a subcompaction whose compaction has
// failed in another range; it is never the compaction's error.
var errSubcompactionCancelled = errors.New("strata: subcompaction cancelled: another range of its compaction failed")

// runSubcompaction merges the inputs of out.c with user keys in [out.lower,
// out.upper) (nil: unbounded) into out. On error the unfinished output is
// deleted; out.metas holds the finished ones. cancel, when not nil, is set
// by a failed sibling range: the merge stops at its next user key.
func (d *DB) runSubcompaction(out *compactionOutputs, sets []rangedel.Set, snaps []base.SeqNum, cancel *atomic.Bool) error {
	it, err := d.compactionIter(out.c, out.lower)
	if err != nil {
		return err
	}
	if out.lower != nil || out.upper != nil {
		it = &boundedIter{Iterator: it, lo: out.lower, hi: out.upper, cmp: out.c.cf.cmp}
	}
	// Counted inside the range's bounds: an entry read past them belongs
	// to the next range, which counts it.
	counted := &blobCountingIter{Iterator: it, flow: out.blobIn}
	it = counted
	err = d.mergeInto(out, it, sets, snaps, cancel)
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = out.finishLast()
	}
	if err != nil {
		out.abandon()
	}
	return err
}

// mergeInto walks the merged inputs, drops what no reader can see and
// writes the rest to out. Merge operands and single deletions follow the
// rules in compaction_merge.go.
func (d *DB) mergeInto(out *compactionOutputs, it iterator.Iterator, sets []rangedel.Set, snaps []base.SeqNum, cancel *atomic.Bool) error {
	var filt *entryFilter
	if !out.c.noFilter {
		filt = out.c.cf.newEntryFilter(out.c.pick.StartLevel, false)
	}
	cm := compactionMerger{d: d, cf: out.c.cf, out: out, it: it, sets: sets, snaps: snaps, op: out.c.cf.mergeOperator(),
		filt:  filt,
		fault: compactionFault(d.testingCompactionFault.Load()), cancel: cancel}
	return cm.run()
}

// compactionTombstones gathers the range tombstones of c's inputs and
// their total size.
func (d *DB) compactionTombstones(c *compaction) ([]base.Tombstone, uint64, error) {
	var tombs []base.Tombstone
	var size uint64
	for _, files := range c.pick.Inputs {
		for _, f := range files {
			size += f.Size
			e, err := d.tables.acquire(f)
			if err != nil {
				return nil, 0, err
			}
			tombs = append(tombs, e.reader.Tombstones()...)
			d.tables.release(e)
		}
	}
	return tombs, size, nil
}

// compactionIter opens the merged iterator over c's inputs, for the key
// range from lower.
func (d *DB) compactionIter(c *compaction, lower []byte) (iterator.Iterator, error) {
	if h := d.testingSubcompactionHook.Load(); h != nil {
		if err := (*h)(lower); err != nil {
			return nil, err
		}
	}
	var iters []iterator.Iterator
	for i, files := range c.pick.Inputs {
		level := c.pick.StartLevel
		if i == 1 {
			level = c.pick.OutputLevel
		}
		if level == 0 {
			for _, f := range files {
				iters = append(iters, d.compactionLevelIter(c.cf.cmp, []*version.FileMetadata{f}))
			}
		} else if len(files) > 0 {
			iters = append(iters, d.compactionLevelIter(c.cf.cmp, files))
		}
	}
	return iterator.NewMerging(c.cf.cmp, iters...), nil
}

// compactionLevelIter iterates sorted, non-overlapping files in order.
func (d *DB) compactionLevelIter(cmp *base.Comparer, files []*version.FileMetadata) iterator.Iterator {
	bounds := make([]iterator.FileBounds, len(files))
	for i, f := range files {
		bounds[i] = iterator.FileBounds{Smallest: f.Smallest, Largest: f.Largest}
	}
	return iterator.NewLevel(cmp, bounds, func(i int) (iterator.Iterator, error) {
		e, err := d.tables.acquire(files[i])
		if err != nil {
			return nil, err
		}
		return &tableIter{Iter: *e.reader.NewCompactionIter(), e: e, tc: d.tables}, nil
	})
}

// compactionOutputs writes the output tables of one compaction.
//
// Invariants: outputs never split the versions of one user key; output i
// holds the kept tombstones clipped to [lower_i, lower_{i+1}), where lower
// is the lower bound of the key range (nil, unbounded, without
// subcompactions) for the first output and each later lower is the first
// user key of that output, and the last output's upper bound is the range's
// (nil: unbounded), so adjacent outputs, of one range or of two, do not
// overlap (a clipped tombstone makes an output's largest key a sentinel, an
// exclusive bound).
type compactionOutputs struct {
	d     *DB
	c     *compaction
	tombs []base.Tombstone // tombstones kept, unclipped

	metas   []*version.FileMetadata
	w       *table.Writer
	f       vfs.File
	fileNum uint64
	name    string
	lower   []byte
	upper   []byte // the key range's exclusive upper bound; nil: none
	// grandparent split state (LevelDB's ShouldStopBefore).
	gpIndex   int
	gpOverlap uint64
	seenKey   bool
	// blobOut counts the blob references written; oldestBlob is the
	// smallest blob file the current output refers to (0: none).
	// blobIn counts the blob references read (by the range's iterator).
	blobIn     blobFlow
	blobOut    blobFlow
	oldestBlob uint64
	// bw writes blob files (blob files on): inline values of at least
	// min_blob_size go there, and the values garbage collection moves.
	bw *blobWriter
	// gcBelow: blobs of files numbered below it are relocated (garbage
	// collection on; 0 = off).
	gcBelow uint64
}

// add writes one kept entry; newKey says the user key differs from the
// previous entry's, so a split may happen before it.
func (o *compactionOutputs) add(k base.InternalKey, value []byte, newKey bool) error {
	if newKey && o.w != nil && o.shouldSplit(k.UserKey) {
		if err := o.finish(k.UserKey); err != nil {
			return err
		}
		o.lower = append([]byte(nil), k.UserKey...)
	} else if newKey && o.w == nil && o.c.pick.OutputLevel > 0 {
		// shouldSplit, which advances past ukey, runs only with an
		// output open: the first key advances here.
		o.advanceGrandparents(k.UserKey)
	}
	if o.w == nil {
		if err := o.open(); err != nil {
			return err
		}
	}
	if k.Kind() == base.KindSet && o.bw.wants(value) {
		idx, _, err := o.bw.add(k.UserKey, value)
		if err != nil {
			return err
		}
		k, value = base.MakeInternalKey(k.UserKey, k.SeqNum(), base.KindBlobIndex), idx
	}
	if k.Kind() == base.KindBlobIndex {
		x, named, err := blobIndexOf(k.UserKey, value)
		if err != nil {
			return err
		}
		if named && x.FileNum < o.gcBelow {
			// Garbage collection: the value moves to a new blob file,
			// or back into the table when blob files are now off or it
			// is under min_blob_size (RocksDB's rule); the old blob is
			// garbage.
			v, err := o.d.blobs.getNoFill(k.UserKey, value)
			if err != nil {
				return err
			}
			if !o.bw.wants(v) {
				return o.add(base.MakeInternalKey(k.UserKey, k.SeqNum(), base.KindSet), v, false)
			}
			idx, _, err := o.bw.add(k.UserKey, v)
			if err != nil {
				return err
			}
			value = idx
			if x, named, err = blobIndexOf(k.UserKey, value); err != nil {
				return err
			}
		}
		if named {
			o.blobOut.add(k.UserKey, x)
			if o.oldestBlob == 0 || x.FileNum < o.oldestBlob {
				o.oldestBlob = x.FileNum
			}
		}
	}
	if err := o.w.Add(k, value); err != nil {
		return errors.Wrapf(err, "strata: writing table %s", o.name)
	}
	return nil
}

// advanceGrandparents accounts the grandparent files wholly before ukey. It
// reports whether ukey is past the end of a grandparent file that the
// current output's keys already overlap: a cut before ukey is then a cut at
// a grandparent boundary.
func (o *compactionOutputs) advanceGrandparents(ukey []byte) (crossed bool) {
	gp := o.c.pick.Grandparents
	for o.gpIndex < len(gp) && o.c.cf.cmp.CompareUser(ukey, gp[o.gpIndex].Largest.UserKey) > 0 {
		if o.seenKey {
			o.gpOverlap += gp[o.gpIndex].Size
			crossed = true
		}
		o.gpIndex++
	}
	o.seenKey = true
	return crossed
}

// shouldSplit reports whether the current output ends before ukey: it
// reached the target size; or it holds half the target size and ukey is
// past the end of a grandparent file, so that the cut falls on a boundary
// of the level below (RocksDB 7.8's level_compaction_dynamic_file_size,
// Pebble's rule): the output then overlaps whole grandparent files only,
// and its own compaction later does not rewrite a partly overlapped one at
// each end (docs/compaction.md has what it saves in bytes written; a
// quarter or three quarters of the target instead of half measured the
// same); or it
// overlaps too much of the grandparent level.
func (o *compactionOutputs) shouldSplit(ukey []byte) bool {
	if o.c.pick.OutputLevel == 0 {
		return false
	}
	crossed := o.advanceGrandparents(ukey)
	size := o.w.EstimatedSize()
	if size >= o.c.targetSize || (crossed && size >= o.c.targetSize/2) {
		o.gpOverlap = 0
		return true
	}
	if o.gpOverlap > o.c.maxOverlap {
		o.gpOverlap = 0
		return true
	}
	return false
}

// open starts a new output table.
func (o *compactionOutputs) open() error {
	d := o.d
	d.mu.Lock()
	if d.mu.closing {
		d.mu.Unlock()
		return errCompactionAborted
	}
	o.fileNum = d.mu.versions.NextFileNum()
	d.mu.pendingOutputs[o.fileNum] = struct{}{}
	d.mu.Unlock()
	o.name = d.path(base.MakeFilename(base.FileKindTable, o.fileNum))
	f, err := d.fs.Create(o.name)
	if err != nil {
		o.dropPending()
		return errors.Wrapf(err, "strata: creating table %s", o.name)
	}
	o.f = newBufferedTableFile(f)
	o.w = table.NewWriter(o.f, o.c.cf.tableWriterOptions(o.fileNum))
	return nil
}

// finish completes the current output with its share of the tombstones,
// [o.lower, upper) (nil upper = unbounded).
func (o *compactionOutputs) finish(upper []byte) error {
	for _, t := range o.tombs {
		s, e := t.Start, t.End
		if o.lower != nil && o.c.cf.cmp.CompareUser(s, o.lower) < 0 {
			s = o.lower
		}
		if upper != nil && o.c.cf.cmp.CompareUser(e, upper) > 0 {
			e = upper
		}
		if o.c.cf.cmp.CompareUser(s, e) >= 0 {
			continue
		}
		if err := o.w.AddTombstone(base.Tombstone{Start: s, End: e, Seq: t.Seq}); err != nil {
			return errors.Wrapf(err, "strata: writing table %s", o.name)
		}
	}
	wm, err := o.w.Finish()
	if err == nil {
		err = o.f.Sync()
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	o.f, o.w = nil, nil
	if err == nil {
		err = o.d.syncDir()
	}
	if err != nil {
		o.d.fs.Remove(o.name)
		o.dropPending()
		return errors.Wrapf(err, "strata: finishing table %s", o.name)
	}
	now := o.d.nowUnix()
	o.metas = append(o.metas, &version.FileMetadata{
		FileNum: o.fileNum, Size: wm.Size,
		Smallest: wm.Smallest.Clone(), Largest: wm.Largest.Clone(),
		SmallestSeq: wm.SmallestSeq, LargestSeq: wm.LargestSeq,
		CreationTime: now, OldestAncesterTime: now,
		NumRangeDeletions: wm.NumRangeDeletions, RangeDelsKnown: true,
		OldestBlobFile: o.oldestBlob,
	})
	o.oldestBlob = 0
	return nil
}

// finishLast completes the last output; with no point keys at all but some
// tombstones kept, it writes them to a table of their own.
func (o *compactionOutputs) finishLast() error {
	if o.w == nil && len(o.metas) == 0 && len(o.tombs) > 0 {
		if err := o.open(); err != nil {
			return err
		}
	}
	if o.w == nil {
		return nil
	}
	return o.finish(o.upper)
}

// abandon deletes an unfinished output.
func (o *compactionOutputs) abandon() {
	if o.f == nil {
		return
	}
	o.f.Close()
	o.d.fs.Remove(o.name)
	o.f, o.w = nil, nil
	o.dropPending()
}

func (o *compactionOutputs) dropPending() {
	o.d.mu.Lock()
	delete(o.d.mu.pendingOutputs, o.fileNum)
	o.d.mu.Unlock()
}
