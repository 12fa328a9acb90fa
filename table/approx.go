package table

import "github.com/stratadb/strata/internal/base"

// ApproximateOffsetOf returns where in the file the entries with user key
// >= ukey begin, as RocksDB's BlockBasedTable::ApproximateOffsetOf computes
// it: the offset of the data block the index points to for ukey. past is
// true when ukey is above every key of the table (the caller then uses the
// file size). It reads only the index, which the Reader keeps in memory.
func (r *Reader) ApproximateOffsetOf(ukey []byte) (offset uint64, past bool, err error) {
	var x indexIter
	x.init(r)
	defer x.release()
	target := ukey
	if !r.userKeyIndex {
		target = base.MakeInternalKey(ukey, base.MaxSeqNum, base.KindSeek).Append(nil)
	}
	if x.seekGE(target) {
		return x.handle().offset, false, nil
	}
	if x.err != nil {
		return 0, false, x.err
	}
	return 0, true, nil
}

// IndexSamples returns up to max user keys sampled evenly from the table's
// index entries (each the separator after one data block), in key order,
// for cutting a compaction into key ranges of about equal size (RocksDB's
// subcompaction boundaries sample the index the same way). It reads only
// the index; the keys are copies.
func (r *Reader) IndexSamples(max int) ([][]byte, error) {
	if max <= 0 {
		return nil, nil
	}
	var x indexIter
	x.init(r)
	defer x.release()
	n := 0
	for ok := x.first(); ok; ok = x.next() {
		n++
	}
	if x.err != nil {
		return nil, x.err
	}
	every := (n + max - 1) / max
	if every < 1 {
		every = 1
	}
	out := make([][]byte, 0, min(n, max))
	i := 0
	for ok := x.first(); ok; ok = x.next() {
		if i%every == every-1 {
			k := x.cur().key
			if !r.userKeyIndex {
				ik, ok := base.DecodeInternalKey(k)
				if !ok {
					return nil, r.corruptf("bad index key %x", k)
				}
				k = ik.UserKey
			}
			out = append(out, append([]byte(nil), k...))
		}
		i++
	}
	if x.err != nil {
		return nil, x.err
	}
	return out, nil
}
