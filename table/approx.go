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
