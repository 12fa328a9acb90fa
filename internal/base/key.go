// Package base holds the vocabulary shared by every layer of the engine:
// internal keys, sequence numbers, value kinds and error classes. It is not
// covered by the API contract.
package base

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// SeqNum is a sequence number. Every counted record of a write batch gets one,
// in commit order. Only the low 56 bits are used: the trailer packs the kind
// into the low byte.
type SeqNum uint64

// MaxSeqNum is the largest sequence number RocksDB's format can hold.
const MaxSeqNum SeqNum = 1<<56 - 1

// Kind is the type of an internal key. The values are RocksDB's ValueType
// codes and reach disk: do not change them.
type Kind uint8

const (
	KindDelete       Kind = 0x00
	KindSet          Kind = 0x01
	KindMerge        Kind = 0x02
	KindSingleDelete Kind = 0x07
	KindRangeDelete  Kind = 0x0F
	// KindBlobIndex (RocksDB's kTypeBlobIndex): the value is a BlobIndex
	// naming where in a blob file the real value is (internal/blob).
	KindBlobIndex Kind = 0x11
	// KindSeek is the largest kind RocksDB 7.8 knows (WideColumnEntity). A
	// seek key (userKey, MaxSeqNum, KindSeek) sorts before every real entry
	// of userKey.
	KindSeek Kind = 0x16
)

func (k Kind) String() string {
	switch k {
	case KindDelete:
		return "DEL"
	case KindSet:
		return "SET"
	case KindMerge:
		return "MERGE"
	case KindSingleDelete:
		return "SINGLEDEL"
	case KindRangeDelete:
		return "RANGEDEL"
	case KindBlobIndex:
		return "BLOBINDEX"
	case KindSeek:
		return "SEEK"
	}
	return fmt.Sprintf("KIND(%d)", uint8(k))
}

// TrailerLen is the size of the (sequence, kind) trailer of an encoded
// internal key.
const TrailerLen = 8

// MakeTrailer packs a sequence number and a kind as RocksDB does:
// seq<<8 | kind.
func MakeTrailer(seq SeqNum, kind Kind) uint64 { return uint64(seq)<<8 | uint64(kind) }

// InternalKey is a user key with the sequence number and kind of one version
// of it. Internal keys order by user key ascending, then trailer descending
// (newest first).
type InternalKey struct {
	UserKey []byte
	Trailer uint64
}

// MakeInternalKey builds an InternalKey.
func MakeInternalKey(userKey []byte, seq SeqNum, kind Kind) InternalKey {
	return InternalKey{UserKey: userKey, Trailer: MakeTrailer(seq, kind)}
}

// MakeSearchKey returns the internal key that sorts first among userKey's
// entries visible at seq: (userKey, seq, KindSeek).
func MakeSearchKey(userKey []byte, seq SeqNum) InternalKey {
	return MakeInternalKey(userKey, seq, KindSeek)
}

// SeqNum returns the key's sequence number.
func (k InternalKey) SeqNum() SeqNum { return SeqNum(k.Trailer >> 8) }

// Kind returns the key's kind.
func (k InternalKey) Kind() Kind { return Kind(k.Trailer) }

// Size is the length of the encoded key.
func (k InternalKey) Size() int { return len(k.UserKey) + TrailerLen }

// Encode writes the encoded key into buf, which must have room for Size bytes.
func (k InternalKey) Encode(buf []byte) {
	n := copy(buf, k.UserKey)
	binary.LittleEndian.PutUint64(buf[n:], k.Trailer)
}

// Append appends the encoded key to dst.
func (k InternalKey) Append(dst []byte) []byte {
	dst = append(dst, k.UserKey...)
	return binary.LittleEndian.AppendUint64(dst, k.Trailer)
}

// Clone returns a copy that owns its user key.
func (k InternalKey) Clone() InternalKey {
	return InternalKey{UserKey: append([]byte(nil), k.UserKey...), Trailer: k.Trailer}
}

func (k InternalKey) String() string {
	return fmt.Sprintf("%q#%d,%s", k.UserKey, k.SeqNum(), k.Kind())
}

// DecodeInternalKey splits an encoded internal key. ok is false when b is
// shorter than a trailer. The user key aliases b.
func DecodeInternalKey(b []byte) (k InternalKey, ok bool) {
	n := len(b) - TrailerLen
	if n < 0 {
		return InternalKey{}, false
	}
	return InternalKey{UserKey: b[:n:n], Trailer: binary.LittleEndian.Uint64(b[n:])}, true
}

// CompareUser orders user keys bytewise, unsigned (leveldb.BytewiseComparator).
func CompareUser(a, b []byte) int { return bytes.Compare(a, b) }

// SharedPrefixLen returns the length of the longest common prefix of a and b.
func SharedPrefixLen(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// ComparatorName is the name RocksDB gives the bytewise comparator. It is
// recorded in table properties and the MANIFEST.
const ComparatorName = "leveldb.BytewiseComparator"

// InternalCompare orders internal keys: user key ascending, then trailer
// descending.
func InternalCompare(a, b InternalKey) int {
	if c := bytes.Compare(a.UserKey, b.UserKey); c != 0 {
		return c
	}
	return compareTrailers(a.Trailer, b.Trailer)
}

// compareTrailers orders the trailers of one user key's versions:
// descending, so the newest version sorts first.
func compareTrailers(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// CompareEncoded orders two encoded internal keys. Keys shorter than a
// trailer compare as if their trailer were zero.
func CompareEncoded(a, b []byte) int {
	ak, _ := DecodeInternalKey(a)
	bk, _ := DecodeInternalKey(b)
	return InternalCompare(ak, bk)
}

// Visible reports whether a version with sequence number seq is visible to a
// reader at snap. Read sequence numbers are exclusive: a reader at snap sees
// exactly the versions with seq < snap. A snapshot taken when the last
// committed sequence number was L reads at L+1.
func Visible(seq, snap SeqNum) bool { return seq < snap }
