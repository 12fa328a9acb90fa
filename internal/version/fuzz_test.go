package version

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/record"
)

// FuzzEditDecode decodes arbitrary bytes as a VersionEdit (one MANIFEST
// record). `go test` replays the seeds and testdata/fuzz/FuzzEditDecode; run
// it with
//
//	go test ./version -run '^$' -fuzz '^FuzzEditDecode$' -fuzztime 60s -fuzzminimizetime=1s -parallel=1
//
// Decode either fails with ErrCorruption or yields an edit whose encoding
// decodes to the same edit and encodes to the same bytes again.
func FuzzEditDecode(f *testing.F) {
	e := Edit{HasComparator: true, ComparatorName: "leveldb.BytewiseComparator", DBID: "id",
		HasLogNumber: true, LogNumber: 4, HasNextFileNumber: true, NextFileNumber: 9,
		HasLastSequence: true, LastSequence: 77, HasPrevLogNumber: true,
		HasMaxColumnFamily: true, MaxColumnFamily: 1, HasMinLogNumberToKeep: true, MinLogNumberToKeep: 3,
		CompactCursors: []CompactCursor{{Level: 1, Key: base.MakeInternalKey([]byte("c"), 5, base.KindSet)}},
		DeletedFiles:   []DeletedFileEntry{{Level: 2, FileNum: 8}},
		NewFiles: []NewFileEntry{{Level: 6, Meta: &FileMetadata{FileNum: 12, Size: 100,
			Smallest:    base.MakeInternalKey([]byte("a"), 1, base.KindSet),
			Largest:     base.MakeInternalKey([]byte("z"), 2, base.KindDelete),
			SmallestSeq: 1, LargestSeq: 2, OldestAncesterTime: 10, CreationTime: 11,
			FileChecksum: []byte{1, 2}, FileChecksumFuncName: "crc", MarkedForCompaction: true}}},
		WalAdditions: []WalAddition{{Number: 3}, {Number: 4, SyncedSize: 50, HasSyncedSize: true}},
		WalDeletions: []uint64{2}, ColumnFamily: 1, HasColumnFamilyAdd: true, ColumnFamilyAdd: "cf",
		InAtomicGroup: true, RemainingEntries: 2}
	f.Add(e.Encode(nil))
	f.Add([]byte{tagColumnFamilyDrop})
	f.Add((&Edit{HasLastSequence: true, LastSequence: base.MaxSeqNum + 1}).Encode(nil))
	dirs, err := filepath.Glob("testdata/*/MANIFEST-??????")
	require.NoError(f, err)
	for _, path := range dirs {
		data, err := os.ReadFile(path)
		require.NoError(f, err)
		r := record.NewReader(bytes.NewReader(data), 0, path)
		for {
			rec, err := r.Next()
			if err != nil {
				break
			}
			f.Add(bytes.Clone(rec))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var e1 Edit
		if err := e1.Decode(b); err != nil {
			require.True(t, errors.Is(err, base.ErrCorruption), "unexpected error class: %v", err)
			return
		}
		require.LessOrEqual(t, e1.LastSequence, base.MaxSeqNum)
		for _, nf := range e1.NewFiles {
			require.LessOrEqual(t, nf.Meta.SmallestSeq, base.MaxSeqNum)
			require.LessOrEqual(t, nf.Meta.LargestSeq, base.MaxSeqNum)
		}
		enc := e1.Encode(nil)
		var e2 Edit
		require.NoError(t, e2.Decode(enc), "the encoding of a decoded edit does not decode")
		normalizeEdit(&e1)
		normalizeEdit(&e2)
		require.Equal(t, e1, e2)
		require.Equal(t, enc, e2.Encode(nil))
	})
}

// normalizeEdit erases the differences that Encode introduces on purpose: it
// names an absent checksum function "Unknown", as RocksDB does, and writes
// every file in the NewFile4 form; empty byte slices compare as nil.
func normalizeEdit(e *Edit) {
	for _, nf := range e.NewFiles {
		if nf.Meta.FileChecksumFuncName == "" {
			nf.Meta.FileChecksumFuncName = unknownChecksumFuncName
		}
		if len(nf.Meta.FileChecksum) == 0 {
			nf.Meta.FileChecksum = nil
		}
	}
}

// TestEdit_DecodeSeqNumRange checks that sequence numbers an internal key
// cannot hold (above 2^56-1) are corruption: loaded from a MANIFEST, a
// LastSequence above MaxSeqNum made every later write wrap. Found by
// review while writing FuzzEditDecode.
func TestEdit_DecodeSeqNumRange(t *testing.T) {
	ok := Edit{HasLastSequence: true, LastSequence: base.MaxSeqNum}
	var e Edit
	require.NoError(t, e.Decode(ok.Encode(nil)))
	require.Equal(t, base.MaxSeqNum, e.LastSequence)

	bad := Edit{HasLastSequence: true, LastSequence: base.MaxSeqNum + 1}
	err := e.Decode(bad.Encode(nil))
	require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
	require.Contains(t, err.Error(), "last sequence")

	for _, field := range []string{"smallest seq", "largest seq"} {
		f := &FileMetadata{FileNum: 5, Size: 1,
			Smallest: base.MakeInternalKey([]byte("a"), 1, base.KindSet),
			Largest:  base.MakeInternalKey([]byte("b"), 1, base.KindSet)}
		if field == "smallest seq" {
			f.SmallestSeq = 1 << 60
		} else {
			f.LargestSeq = 1 << 60
		}
		bad := Edit{NewFiles: []NewFileEntry{{Level: 0, Meta: f}}}
		err := e.Decode(bad.Encode(nil))
		require.True(t, errors.Is(err, base.ErrCorruption), "%s: %v", field, err)
		require.Contains(t, err.Error(), field)
	}
}
