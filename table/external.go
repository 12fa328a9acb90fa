package table

import (
	"bytes"
	"encoding/binary"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/checksum"
)

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

// readPropertiesBlock reads and verifies the properties block. RocksDB,
// when asked to (write_global_seqno, the default of ldb ingest_extern_sst),
// writes an ingested file's global sequence number into the 8-byte
// global_seqno value in place without updating the block's checksum; it
// verifies such a block with that value zeroed. So does this: a block
// whose checksum fails is accepted when it matches with the global_seqno
// value zeroed, and is read with the value it holds.
func (r *Reader) readPropertiesBlock(h blockHandle) ([]byte, error) {
	if err := r.checkHandle(h); err != nil {
		return nil, err
	}
	buf := make([]byte, int(h.size)+blockTrailerLen)
	if err := r.readAt(buf, int64(h.offset)); err != nil {
		return nil, err
	}
	raw := bytes.Clone(buf)
	b, err := r.decodeRaw(h, buf, true)
	if err == nil || r.footer.checksum == checksum.None || raw[h.size] != byte(NoCompression) {
		return b, err
	}
	data := raw[:h.size]
	var it blockIter
	if !it.init(data, bytes.Compare) {
		return nil, err
	}
	for ok := it.first(); ok; ok = it.next() {
		if string(it.key) != propGlobalSeqNo || len(it.value()) != 8 {
			continue
		}
		off := cap(data) - cap(it.value())
		if off < 0 || off+8 > len(data) {
			return nil, err
		}
		zeroed := bytes.Clone(data)
		clear(zeroed[off : off+8])
		stored := binary.LittleEndian.Uint32(raw[h.size+1:])
		if checksum.Block(r.footer.checksum, zeroed, raw[h.size]) == stored {
			return data, nil
		}
		return nil, err
	}
	return nil, err
}
