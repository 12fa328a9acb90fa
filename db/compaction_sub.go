package db

import (
	"sort"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/iterator"
	"github.com/stratadb/strata/internal/version"
)

// Subcompactions (RocksDB's max_subcompactions). A compaction from L0 into
// the base level, or a manual one, whose inputs are large enough is cut at
// user keys b1 < b2 < … into ranges [nil, b1), [b1, b2), …, [bk, nil); each
// range is merged on its own goroutine into its own outputs, and the
// outputs, which lie in the ranges and so never overlap, are installed
// together in one MANIFEST edit. Every version of a user key lies in one
// range, and the garbage collection rules (snapshot stripes, merge operands,
// single deletions, the bottommost rules; see compactionMerger) look at one
// user key's versions and at the compaction as a whole (bottommost, the
// snapshots), never across keys: the ranges keep exactly what one
// compaction keeps. Range tombstones are clipped to each range, as they are
// to each output file.

// subcompactionSamplesPerFile bounds the index keys read from each input
// file, and subcompactionCandidates the candidate boundaries weighed (each
// costs one index seek per input file): with several candidates per range
// the ranges come out within a few percent of each other's size.
const (
	subcompactionSamplesPerFile = 64
	subcompactionCandidates     = 256
)

// subcompactionLimit is the max_subcompactions in force.
func (d *DB) subcompactionLimit() int {
	return d.optInt(&d.maxSubcompactions, d.opts.MaxSubcompactions)
}

// subcompactionBoundaries returns the user keys cutting c into at most n
// ranges of about equal input bytes, or nil for one range. Only compactions
// from L0 into a lower level, and manual compactions into a lower level,
// are cut (RocksDB's ShouldFormSubcompactions), and into no more ranges
// than one per 80% of the target file size of input (RocksDB's
// GenSubcompactionBoundaries), so that each range fills its outputs.
//
// Candidates are the input files' bounds and keys sampled from their index
// blocks; the input bytes before a candidate are estimated from each file's
// index (approximateTableSize), and the k-th boundary is the first
// candidate with at least k/n of the input bytes before it.
func (d *DB) subcompactionBoundaries(c *compaction, n int) ([][]byte, error) {
	p := c.pick
	if n <= 1 || c.kind != compactionMerge || p.OutputLevel == 0 || (p.StartLevel != 0 && !c.manual) {
		return nil, nil
	}
	var files []*version.FileMetadata
	var total uint64
	for _, fs := range p.Inputs {
		for _, f := range fs {
			files = append(files, f)
			total += f.Size
		}
	}
	if c.targetSize > 0 {
		n = min(n, int((total*5+c.targetSize*4-1)/(c.targetSize*4)))
	}
	if n <= 1 {
		return nil, nil
	}
	var cands [][]byte
	for _, f := range files {
		cands = append(cands, f.Smallest.UserKey, f.Largest.UserKey)
		e, err := d.tables.acquire(f)
		if err != nil {
			return nil, err
		}
		s, err := e.reader.IndexSamples(subcompactionSamplesPerFile)
		d.tables.release(e)
		if err != nil {
			return nil, err
		}
		cands = append(cands, s...)
	}
	cmp := c.cf.cmp
	sort.Slice(cands, func(i, j int) bool { return cmp.CompareUser(cands[i], cands[j]) < 0 })
	uniq := cands[:0]
	for _, k := range cands {
		if len(uniq) == 0 || cmp.CompareUser(uniq[len(uniq)-1], k) != 0 {
			uniq = append(uniq, k)
		}
	}
	cands = uniq
	if len(cands) > subcompactionCandidates {
		picked := make([][]byte, 0, subcompactionCandidates)
		for i := 0; i < subcompactionCandidates; i++ {
			picked = append(picked, cands[(i+1)*len(cands)/subcompactionCandidates-1])
		}
		cands = picked
	}
	var bounds [][]byte
	next := 1
	for _, k := range cands {
		if next >= n {
			break
		}
		// A boundary at or below the smallest input key would leave the
		// first range empty.
		if cmp.CompareUser(k, p.Smallest) <= 0 {
			continue
		}
		var before uint64
		for _, f := range files {
			b, err := d.approximateTableSize(cmp, f, nil, k)
			if err != nil {
				return nil, err
			}
			before += b
		}
		if before*uint64(n) < total*uint64(next) {
			continue
		}
		bounds = append(bounds, append([]byte(nil), k...))
		// Skip targets this candidate passes too: a large block of one
		// candidate's width would otherwise give empty ranges.
		for next < n && before*uint64(n) >= total*uint64(next) {
			next++
		}
	}
	if len(bounds) > 0 && cmp.CompareUser(bounds[len(bounds)-1], p.Largest) > 0 {
		bounds = bounds[:len(bounds)-1]
	}
	return bounds, nil
}

// boundedIter limits a compaction input iterator to the user keys in [lo,
// hi) (nil: unbounded). Only First and Next are used by compactionMerger.
type boundedIter struct {
	iterator.Iterator
	lo, hi []byte
	cmp    *base.Comparer
}

func (b *boundedIter) First() bool {
	if b.lo == nil {
		return b.check(b.Iterator.First())
	}
	return b.check(b.Iterator.SeekGE(b.lo))
}

func (b *boundedIter) Next() bool { return b.check(b.Iterator.Next()) }

func (b *boundedIter) check(ok bool) bool {
	return ok && (b.hi == nil || b.cmp.CompareUser(b.Iterator.Key().UserKey, b.hi) < 0)
}

// clipTombstones returns the parts of tombs within [lo, hi) (nil:
// unbounded), dropping those wholly outside.
func clipTombstones(cmp *base.Comparer, tombs []base.Tombstone, lo, hi []byte) []base.Tombstone {
	var out []base.Tombstone
	for _, t := range tombs {
		s, e := t.Start, t.End
		if lo != nil && cmp.CompareUser(s, lo) < 0 {
			s = lo
		}
		if hi != nil && cmp.CompareUser(e, hi) > 0 {
			e = hi
		}
		if cmp.CompareUser(s, e) < 0 {
			out = append(out, base.Tombstone{Start: s, End: e, Seq: t.Seq})
		}
	}
	return out
}
