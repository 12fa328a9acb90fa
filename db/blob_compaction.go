package db

import (
	"sort"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/blob"
	"github.com/stratadb/strata/internal/iterator"
	"github.com/stratadb/strata/internal/version"
)

// blobFlow counts blob references per blob file: blobs and their bytes as
// RocksDB counts them (record header, key and stored value).
type blobFlow map[uint64]*version.BlobFileGarbage

func (f blobFlow) add(ukey []byte, x blob.Index) {
	g := f[x.FileNum]
	if g == nil {
		g = &version.BlobFileGarbage{FileNum: x.FileNum}
		f[x.FileNum] = g
	}
	g.GarbageCount++
	g.GarbageBytes += blob.RecordOverhead(len(ukey)) + x.Size
}

// garbage returns, per blob file, what flowed into a compaction and not out
// of it: the references it dropped (RocksDB's BlobGarbageMeter). Each blob
// is referenced by exactly one entry, so a reference read and not written
// is a blob no table will name again.
func (f blobFlow) garbage(out blobFlow) []version.BlobFileGarbage {
	var gs []version.BlobFileGarbage
	for num, in := range f {
		g := *in
		if o := out[num]; o != nil {
			g.GarbageCount -= o.GarbageCount
			g.GarbageBytes -= o.GarbageBytes
		}
		if g.GarbageCount > 0 {
			gs = append(gs, g)
		}
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].FileNum < gs[j].FileNum })
	return gs
}

// blobIndexOf decodes the blob index of an entry of kind KindBlobIndex; ok
// is false for an inlined-TTL index, which names no blob file.
func blobIndexOf(ukey, value []byte) (blob.Index, bool, error) {
	x, err := blob.DecodeIndex(ukey, value)
	if err != nil {
		return x, false, err
	}
	return x, x.Type != blob.IndexInlinedTTL, nil
}

// blobCountingIter counts the blob references of the entries a compaction
// reads (forward only: compactions never step back).
type blobCountingIter struct {
	iterator.Iterator
	flow blobFlow
	err  error
}

func (it *blobCountingIter) count(ok bool) bool {
	if !ok || it.err != nil {
		return ok && it.err == nil
	}
	k := it.Iterator.Key()
	if k.Kind() != base.KindBlobIndex {
		return true
	}
	x, named, err := blobIndexOf(k.UserKey, it.Iterator.Value())
	if err != nil {
		it.err = err
		return false
	}
	if named {
		it.flow.add(k.UserKey, x)
	}
	return true
}

func (it *blobCountingIter) First() bool { return it.count(it.Iterator.First()) }
func (it *blobCountingIter) Next() bool  { return it.count(it.Iterator.Next()) }
func (it *blobCountingIter) SeekGE(key []byte) bool {
	return it.count(it.Iterator.SeekGE(key))
}

func (it *blobCountingIter) Error() error {
	if it.err != nil {
		return it.err
	}
	return it.Iterator.Error()
}

// blobGCCutoff returns the blob file number below which garbage collection
// relocates blobs: the files of v, oldest first, that make up ageCutoff of
// them (RocksDB's blob_garbage_collection_age_cutoff; a cutoff that covers
// no whole file relocates nothing).
func blobGCCutoff(v *version.Version, ageCutoff float64) uint64 {
	n := len(v.BlobFiles)
	i := int(ageCutoff * float64(n))
	if i <= 0 {
		return 0
	}
	if i >= n {
		return v.BlobFiles[n-1].FileNum + 1
	}
	return v.BlobFiles[i].FileNum
}

// pickBlobForceGCLocked applies blob_garbage_collection_force_threshold
// (RocksDB's rule): when garbage collection is on and the blob files under
// the age cutoff hold at least that fraction of garbage, a table that
// names the oldest of them as its oldest blob file is compacted (into the
// next level, or in place at the last), so that the compaction relocates
// its live blobs and the old file can go. It runs only when nothing else
// is due. d.mu must be held.
func (cf *ColumnFamily) pickBlobForceGCLocked(v *version.Version, busy version.Busy) *version.Pick {
	s := cf.blob.Load()
	if s == nil || !s.gc || len(v.BlobFiles) == 0 {
		return nil
	}
	batch := int(s.ageCutoff * float64(len(v.BlobFiles)))
	if batch <= 0 {
		return nil
	}
	var total, garbage uint64
	for _, b := range v.BlobFiles[:batch] {
		total += b.TotalBytes
		garbage += b.GarbageBytes
	}
	if total == 0 || float64(garbage) < s.forceThreshold*float64(total) {
		return nil
	}
	oldest := v.BlobFiles[0].FileNum
	// L0 tables are left to the L0 compactions, which come soon anyway.
	for level := 1; level < version.NumLevels; level++ {
		for _, f := range v.Levels[level] {
			if f.OldestBlobFile != oldest || f.Compacting {
				continue
			}
			var p *version.Pick
			if level < version.NumLevels-1 {
				p = v.PickRange(level, level+1, f.Smallest.UserKey, f.Largest.UserKey)
			} else {
				// The last level is rewritten in place.
				in := v.AddBoundaryInputs(level, []*version.FileMetadata{f})
				p = &version.Pick{StartLevel: level, OutputLevel: level, Inputs: [2][]*version.FileMetadata{in, nil},
					Smallest: in[0].Smallest.UserKey, Largest: in[len(in)-1].Largest.UserKey}
				for _, g := range in {
					if g.Compacting {
						p = nil
						break
					}
				}
			}
			if p != nil && !busy(p.OutputLevel, p.Smallest, p.Largest) {
				return p
			}
		}
	}
	return nil
}

// merge adds o's counts to f.
func (f blobFlow) merge(o blobFlow) {
	for num, g := range o {
		if h := f[num]; h != nil {
			h.GarbageCount += g.GarbageCount
			h.GarbageBytes += g.GarbageBytes
		} else {
			c := *g
			f[num] = &c
		}
	}
}
