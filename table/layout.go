package table

import "sort"

// BlockInfo locates one block of a table, for tools (strata sstable
// layout): Kind is "data", "index-partition", "index", "meta" (Name is then
// the metaindex name, e.g. "rocksdb.properties"), "metaindex" or "footer";
// Size excludes the 5-byte block trailer (the footer has none).
type BlockInfo struct {
	Kind, Name   string
	Offset, Size uint64
}

// Layout lists the table's blocks in file order. It reads the index
// partitions of a partitioned index; data blocks are not read.
func (r *Reader) Layout() ([]BlockInfo, error) {
	var out []BlockInfo
	var x indexIter
	x.init(r)
	defer x.release()
	for ok := x.first(); ok; ok = x.next() {
		h := x.handle()
		out = append(out, BlockInfo{Kind: "data", Offset: h.offset, Size: h.size})
	}
	if x.err != nil {
		return nil, x.err
	}
	if r.twoLevel {
		var it blockIter
		r.initIndexIter(&it, r.index, false, true)
		for ok := it.first(); ok; ok = it.next() {
			out = append(out, BlockInfo{Kind: "index-partition", Offset: it.handle.offset, Size: it.handle.size})
		}
		if it.corrupt {
			return nil, r.corruptf("bad top-level index block at offset %d", r.footer.index.offset)
		}
	}
	out = append(out, BlockInfo{Kind: "index", Offset: r.footer.index.offset, Size: r.footer.index.size})
	for name, h := range r.metaHandles {
		out = append(out, BlockInfo{Kind: "meta", Name: name, Offset: h.offset, Size: h.size})
	}
	out = append(out, BlockInfo{Kind: "metaindex", Offset: r.footer.metaindex.offset, Size: r.footer.metaindex.size},
		BlockInfo{Kind: "footer", Offset: r.dataEnd, Size: uint64(r.footer.len)})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Offset < out[j].Offset })
	return out, nil
}
