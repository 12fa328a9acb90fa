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
