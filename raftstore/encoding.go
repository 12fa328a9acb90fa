package raftstore

import (
	"encoding/binary"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/hashicorp/raft"
	"github.com/stratadb/strata/db"
)

// Log entry value layout, version 1 (the index is the key's suffix):
//
//	version   1 byte  (= 1)
//	type      1 byte  (raft.LogType)
//	flags     1 byte  (bit 0: AppendedAt is set)
//	term      uvarint
//	[seconds  varint, nanos uvarint]  AppendedAt as Unix time, if flag bit 0
//	len(Data) uvarint, Data
//	len(Extensions) uvarint, Extensions
//
// Strata checksums every WAL record and block, so the value carries no
// checksum of its own; the decoder still checks every length.
const (
	logVersion1 = 1

	flagAppendedAt = 1 << 0
)

// maxLogHeader bounds the fixed part of an encoded entry: three bytes and
// up to five varints.
const maxLogHeader = 3 + 5*binary.MaxVarintLen64

func encodedLogSize(l *raft.Log) int {
	return maxLogHeader + len(l.Data) + len(l.Extensions)
}

// appendLog appends l's encoding to dst. It never grows dst beyond
// encodedLogSize(l) bytes past its length.
func appendLog(dst []byte, l *raft.Log) []byte {
	var flags byte
	if !l.AppendedAt.IsZero() {
		flags |= flagAppendedAt
	}
	dst = append(dst, logVersion1, byte(l.Type), flags)
	dst = binary.AppendUvarint(dst, l.Term)
	if flags&flagAppendedAt != 0 {
		dst = binary.AppendVarint(dst, l.AppendedAt.Unix())
		dst = binary.AppendUvarint(dst, uint64(l.AppendedAt.Nanosecond()))
	}
	dst = binary.AppendUvarint(dst, uint64(len(l.Data)))
	dst = append(dst, l.Data...)
	dst = binary.AppendUvarint(dst, uint64(len(l.Extensions)))
	dst = append(dst, l.Extensions...)
	return dst
}

// decodeLog decodes v into l, all fields but Index. Data and Extensions
// alias v.
func decodeLog(v []byte, l *raft.Log) error {
	if len(v) < 3 {
		return errors.Wrapf(db.ErrCorruption, "raftstore: entry of %d bytes is too short", len(v))
	}
	if v[0] != logVersion1 {
		return errors.Wrapf(db.ErrCorruption, "raftstore: unknown entry version %d", v[0])
	}
	typ, flags := raft.LogType(v[1]), v[2]
	if flags&^flagAppendedAt != 0 {
		return errors.Wrapf(db.ErrCorruption, "raftstore: unknown entry flags %#x", flags)
	}
	p := v[3:]
	term, n := binary.Uvarint(p)
	if n <= 0 {
		return errors.Wrap(db.ErrCorruption, "raftstore: bad term")
	}
	p = p[n:]
	var at time.Time
	if flags&flagAppendedAt != 0 {
		sec, n := binary.Varint(p)
		if n <= 0 {
			return errors.Wrap(db.ErrCorruption, "raftstore: bad AppendedAt seconds")
		}
		p = p[n:]
		nsec, m := binary.Uvarint(p)
		if m <= 0 || nsec >= 1e9 {
			return errors.Wrap(db.ErrCorruption, "raftstore: bad AppendedAt nanoseconds")
		}
		p = p[m:]
		at = time.Unix(sec, int64(nsec))
	}
	data, p, err := lengthPrefixed(p, "data")
	if err != nil {
		return err
	}
	ext, p, err := lengthPrefixed(p, "extensions")
	if err != nil {
		return err
	}
	if len(p) != 0 {
		return errors.Wrapf(db.ErrCorruption, "raftstore: %d trailing bytes in entry", len(p))
	}
	l.Term, l.Type, l.AppendedAt, l.Data, l.Extensions = term, typ, at, data, ext
	return nil
}

func lengthPrefixed(p []byte, what string) (field, rest []byte, err error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k) {
		return nil, nil, errors.Wrapf(db.ErrCorruption, "raftstore: bad %s length", what)
	}
	p = p[k:]
	if n == 0 {
		return nil, p, nil
	}
	return p[:n:n], p[n:], nil
}
