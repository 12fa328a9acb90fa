package version

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/stratadb/strata/internal/base"
)

// decoder reads the fields of an encoded edit. err is sticky: after the
// first failure every read returns zero values.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...interface{}) {
	if d.err == nil {
		d.err = base.CorruptionErrorf("version edit: offset %d: %s", d.off, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) done() bool { return d.err != nil || d.off >= len(d.b) }

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("malformed %s", what)
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) uvarint32(what string) uint32 {
	v := d.uvarint(what)
	if v > math.MaxUint32 {
		d.fail("%s %d out of range", what, v)
		return 0
	}
	return uint32(v)
}

// seqNum reads a sequence number, which must fit the 56 bits an internal
// key holds.
func (d *decoder) seqNum(what string) base.SeqNum {
	start := d.off
	v := d.uvarint(what)
	if d.err == nil && v > uint64(base.MaxSeqNum) {
		d.off = start // name the field's offset
		d.fail("%s %d beyond the largest sequence number %d", what, v, base.MaxSeqNum)
		return 0
	}
	return base.SeqNum(v)
}

// bytes reads a varstring; the result aliases the input.
func (d *decoder) bytes(what string) []byte {
	n := d.uvarint(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail("%s length %d overruns the edit", what, n)
		return nil
	}
	s := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

func (d *decoder) level() int {
	l := d.uvarint32("level")
	if d.err == nil && l >= NumLevels {
		d.fail("level %d out of range (%d levels)", l, NumLevels)
	}
	return int(l)
}

// ikey reads an internal key and copies it.
func (d *decoder) ikey(what string) base.InternalKey {
	b := d.bytes(what)
	if d.err != nil {
		return base.InternalKey{}
	}
	k, ok := base.DecodeInternalKey(b)
	if !ok {
		d.fail("%s of %d bytes is not an internal key", what, len(b))
		return base.InternalKey{}
	}
	return k.Clone()
}

// Decode replaces e with the edit encoded in b. Damage gives an error of
// class base.ErrCorruption naming the offset within b. Decode accepts edits
// of any column family; VersionSet rejects those it does not support.
func (e *Edit) Decode(b []byte) error {
	*e = Edit{}
	d := &decoder{b: b}
	for !d.done() {
		tagOff := d.off
		tag := d.uvarint32("tag")
		if d.err != nil {
			break
		}
		if !e.decodeField(d, tag) {
			d.off = tagOff
			d.fail("unknown tag %d", tag)
		}
	}
	return d.err
}

// decodeField decodes the payload of one field; it returns false for an
// unknown tag that may not be skipped.
func (e *Edit) decodeField(d *decoder, tag uint32) bool {
	switch tag {
	case tagComparator:
		e.ComparatorName, e.HasComparator = string(d.bytes("comparator")), true
	case tagLogNumber:
		e.LogNumber, e.HasLogNumber = d.uvarint("log number"), true
	case tagPrevLogNumber:
		e.PrevLogNumber, e.HasPrevLogNumber = d.uvarint("prev log number"), true
	case tagNextFileNumber:
		e.NextFileNumber, e.HasNextFileNumber = d.uvarint("next file number"), true
	case tagLastSequence:
		e.LastSequence, e.HasLastSequence = d.seqNum("last sequence"), true
	case tagMinLogNumberToKeep:
		e.MinLogNumberToKeep, e.HasMinLogNumberToKeep = d.uvarint("min log number"), true
	case tagMaxColumnFamily:
		e.MaxColumnFamily, e.HasMaxColumnFamily = d.uvarint32("max column family"), true
	case tagCompactCursor:
		c := CompactCursor{Level: d.level()}
		c.Key = d.ikey("compact cursor")
		e.CompactCursors = append(e.CompactCursors, c)
	case tagDeletedFile:
		df := DeletedFileEntry{Level: d.level()}
		df.FileNum = d.uvarint("file number")
		e.DeletedFiles = append(e.DeletedFiles, df)
	case tagNewFile, tagNewFile2, tagNewFile3, tagNewFile4:
		e.decodeNewFile(d, tag)
	case tagColumnFamily:
		e.ColumnFamily = d.uvarint32("column family")
	case tagColumnFamilyAdd:
		e.ColumnFamilyAdd, e.HasColumnFamilyAdd = string(d.bytes("column family name")), true
	case tagColumnFamilyDrop:
		e.ColumnFamilyDrop = true
	case tagInAtomicGroup:
		e.InAtomicGroup, e.RemainingEntries = true, d.uvarint32("atomic group size")
	case tagDBID:
		e.DBID = string(d.bytes("db id"))
	case tagBlobFileAddition:
		a := BlobFileAddition{FileNum: d.uvarint("blob file number")}
		a.TotalCount = d.uvarint("blob count")
		a.TotalBytes = d.uvarint("blob bytes")
		a.ChecksumMethod = string(d.bytes("blob checksum method"))
		a.ChecksumValue = append([]byte(nil), d.bytes("blob checksum")...)
		d.blobCustomFields(a.FileNum)
		if d.err == nil {
			e.BlobFiles = append(e.BlobFiles, a)
		}
	case tagBlobFileGarbage:
		g := BlobFileGarbage{FileNum: d.uvarint("blob file number")}
		g.GarbageCount = d.uvarint("garbage blob count")
		g.GarbageBytes = d.uvarint("garbage blob bytes")
		d.blobCustomFields(g.FileNum)
		if d.err == nil {
			e.BlobGarbage = append(e.BlobGarbage, g)
		}
	case tagWalAddition2:
		e.decodeWalAddition(d.bytes("wal addition"), d)
	case tagWalDeletion2:
		sub := &decoder{b: d.bytes("wal deletion")}
		e.WalDeletions = append(e.WalDeletions, sub.uvarint("wal number"))
		if sub.err != nil {
			d.fail("malformed wal deletion")
		}
	default:
		if tag&tagSafeIgnoreMask == 0 {
			return false
		}
		d.bytes("ignorable field")
	}
	return true
}

// blobCustomFields skips the custom fields of a blob file record up to its
// end marker; one marked forward-incompatible is an error.
func (d *decoder) blobCustomFields(fileNum uint64) {
	for d.err == nil {
		if d.off >= len(d.b) {
			d.fail("blob file %06d: missing end marker", fileNum)
			return
		}
		t := d.uvarint32("blob custom tag")
		if t == blobEndMarker || d.err != nil {
			return
		}
		if t&blobForwardIncompatible != 0 {
			d.fail("blob file %06d: unknown required custom tag %d", fileNum, t)
			return
		}
		d.bytes("blob custom field")
	}
}

func (e *Edit) decodeWalAddition(body []byte, d *decoder) {
	if d.err != nil {
		return
	}
	sub := &decoder{b: body}
	w := WalAddition{Number: sub.uvarint("wal number")}
	for sub.err == nil {
		t := sub.uvarint32("wal tag")
		if t == 1 {
			break
		}
		if t != 2 {
			sub.fail("unknown wal tag %d", t)
			break
		}
		w.SyncedSize, w.HasSyncedSize = sub.uvarint("synced size"), true
	}
	if sub.err != nil {
		d.fail("malformed wal addition: %v", sub.err)
		return
	}
	e.WalAdditions = append(e.WalAdditions, w)
}

// decodeNewFile decodes the four NewFile forms.
func (e *Edit) decodeNewFile(d *decoder, tag uint32) {
	level := d.level()
	f := &FileMetadata{FileNum: d.uvarint("file number")}
	if tag == tagNewFile3 {
		if pathID := d.uvarint32("path id"); pathID != 0 && d.err == nil {
			d.fail("file %d in path %d: only path 0 is supported", f.FileNum, pathID)
		}
	}
	f.Size = d.uvarint("file size")
	f.Smallest = d.ikey("smallest key")
	f.Largest = d.ikey("largest key")
	if tag != tagNewFile {
		f.SmallestSeq = d.seqNum("smallest seq")
		f.LargestSeq = d.seqNum("largest seq")
	}
	if tag == tagNewFile4 {
		e.decodeCustomFields(d, f)
	}
	if d.err == nil {
		e.NewFiles = append(e.NewFiles, NewFileEntry{Level: level, Meta: f})
	}
}

// decodeCustomFields decodes NewFile4's custom fields up to the terminator.
func (e *Edit) decodeCustomFields(d *decoder, f *FileMetadata) {
	for d.err == nil {
		if d.off >= len(d.b) {
			d.fail("file %d: missing terminator", f.FileNum)
			return
		}
		t := d.uvarint32("custom tag")
		if t == customTerminate || d.err != nil {
			return
		}
		field := d.bytes("custom field")
		if d.err != nil {
			return
		}
		sub := &decoder{b: field}
		switch t {
		case customNeedCompaction:
			f.MarkedForCompaction = len(field) == 1 && field[0] == 1
		case customMinLogNumberHack:
			if len(field) != 8 {
				d.fail("file %d: min log number field of %d bytes", f.FileNum, len(field))
				return
			}
			e.MinLogNumberToKeep, e.HasMinLogNumberToKeep = binary.LittleEndian.Uint64(field), true
		case customOldestAncesterTime:
			f.OldestAncesterTime = int64(sub.uvarint("oldest ancester time"))
		case customFileCreationTime:
			f.CreationTime = int64(sub.uvarint("file creation time"))
		case customFileChecksum:
			f.FileChecksum = append([]byte(nil), field...)
		case customOldestBlobFile:
			f.OldestBlobFile = sub.uvarint("oldest blob file number")
		case customFileChecksumFunc:
			f.FileChecksumFuncName = string(field)
		case customNumRangeDeletions:
			f.NumRangeDeletions = sub.uvarint("range deletion count")
			f.RangeDelsKnown = sub.err == nil
		case customPathID:
			if len(field) != 1 || field[0] != 0 {
				d.fail("file %d: only path 0 is supported", f.FileNum)
				return
			}
		default:
			if t&customSafeIgnoreMaskBit64 != 0 {
				d.fail("file %d: unknown required custom tag %d", f.FileNum, t)
				return
			}
			// Temperature, timestamps, unique id: not used.
		}
		if sub.err != nil {
			d.fail("file %d: malformed custom field %d", f.FileNum, t)
		}
	}
}
