package table

import "github.com/stratadb/strata/internal/base"

// ExternalFileVersion is the rocksdb.external_sst_file.version that
// ExternalWriter records: version 2, whose entries are stored at sequence
// number 0 and read at the file's global sequence number.
const ExternalFileVersion = 2

// setGlobalSeq decides, from the external-file properties and the
// MANIFEST's largest sequence number, the sequence number every entry of
// the table reads with, as RocksDB 7.8 does (GetGlobalSequenceNumber):
//
//   - no version property: an ordinary table; a global_seqno without it
//     is corruption;
//   - version 1: entries read as stored;
//   - version 2: the global_seqno property when non-zero, else the
//     MANIFEST's largest sequence number; the two must agree when both
//     are known;
//   - any other version is refused.
func (r *Reader) setGlobalSeq() error {
	p := r.props
	if !hasRaw(p, propExternalVersion) {
		if p.HasGlobalSeqNo {
			return r.corruptf("table without %s has %s %d", propExternalVersion, propGlobalSeqNo, p.GlobalSeqNo)
		}
		return nil
	}
	switch p.ExternalSSTVersion {
	case 1:
		return nil
	case ExternalFileVersion:
	default:
		return r.corruptf("unknown %s %d", propExternalVersion, p.ExternalSSTVersion)
	}
	g, largest := p.GlobalSeqNo, r.opts.LargestSeqNum
	if largest != 0 {
		if g == 0 {
			g = largest
		}
		if g != largest {
			return r.corruptf("%s %d differs from the MANIFEST's largest sequence number %d",
				propGlobalSeqNo, g, largest)
		}
	}
	if g > uint64(base.MaxSeqNum) {
		return r.corruptf("%s %d is too large", propGlobalSeqNo, g)
	}
	r.globalSeq, r.hasGlobalSeq = base.SeqNum(g), true
	return nil
}

// GlobalSeqNum returns the sequence number every entry of an external
// table reads with, and whether the table has one.
func (r *Reader) GlobalSeqNum() (uint64, bool) { return uint64(r.globalSeq), r.hasGlobalSeq }
