package version

import (
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

func TestEditBlobRecordsRoundTrip(t *testing.T) {
	e := &Edit{
		NewFiles: []NewFileEntry{{Level: 1, Meta: &FileMetadata{FileNum: 9, Size: 10,
			Smallest: base.MakeInternalKey([]byte("a"), 1, base.KindBlobIndex),
			Largest:  base.MakeInternalKey([]byte("b"), 2, base.KindSet), SmallestSeq: 1, LargestSeq: 2, OldestBlobFile: 7}}},
		BlobFiles:   []BlobFileAddition{{FileNum: 7, TotalCount: 3, TotalBytes: 300, ChecksumMethod: "crc", ChecksumValue: []byte{1, 2}}},
		BlobGarbage: []BlobFileGarbage{{FileNum: 7, GarbageCount: 1, GarbageBytes: 100}},
	}
	var got Edit
	require.NoError(t, got.Decode(e.Encode(nil)))
	require.Equal(t, uint64(7), got.NewFiles[0].Meta.OldestBlobFile)
	require.Equal(t, e.BlobFiles, got.BlobFiles)
	require.Equal(t, e.BlobGarbage, got.BlobGarbage)
}

// TestBuilderBlobFiles checks RocksDB's rule for which blob files a
// version keeps, and its consistency check.
func TestBuilderBlobFiles(t *testing.T) {
	table := func(num, oldest uint64, k string) NewFileEntry {
		return NewFileEntry{Level: 6, Meta: &FileMetadata{FileNum: num, Size: 1,
			Smallest: base.MakeInternalKey([]byte(k), 1, base.KindSet), Largest: base.MakeInternalKey([]byte(k), 1, base.KindSet),
			SmallestSeq: 1, LargestSeq: 1, OldestBlobFile: oldest}}
	}
	b := newBuilder(&Version{})
	require.NoError(t, b.apply(&Edit{NewFiles: []NewFileEntry{table(10, 5, "a"), table(11, 6, "b")},
		BlobFiles: []BlobFileAddition{{FileNum: 4, TotalCount: 1, TotalBytes: 10}, {FileNum: 5, TotalCount: 2, TotalBytes: 20},
			{FileNum: 6, TotalCount: 2, TotalBytes: 20}, {FileNum: 8, TotalCount: 2, TotalBytes: 20}}}))
	require.NoError(t, b.apply(&Edit{BlobGarbage: []BlobFileGarbage{{FileNum: 8, GarbageCount: 2, GarbageBytes: 20}}}))
	v, err := b.finish()
	require.NoError(t, err)
	var nums []uint64
	for _, m := range v.BlobFiles {
		nums = append(nums, m.FileNum)
	}
	// 4 is below every table's oldest blob file; 8 is all garbage and no
	// table names it as its oldest.
	require.Equal(t, []uint64{5, 6}, nums)

	b = newBuilder(v)
	require.NoError(t, b.apply(&Edit{NewFiles: []NewFileEntry{table(12, 99, "c")}}))
	_, err = b.finish()
	require.Error(t, err, "a table's oldest blob file must be in the version")

	b = newBuilder(v)
	require.Error(t, b.apply(&Edit{BlobGarbage: []BlobFileGarbage{{FileNum: 5, GarbageCount: 3, GarbageBytes: 1}}}))
	b = newBuilder(v)
	require.Error(t, b.apply(&Edit{BlobGarbage: []BlobFileGarbage{{FileNum: 77, GarbageCount: 1, GarbageBytes: 1}}}))
	b = newBuilder(v)
	require.NoError(t, b.apply(&Edit{DeletedFiles: []DeletedFileEntry{{Level: 6, FileNum: 10}, {Level: 6, FileNum: 11}}}))
	v2, err := b.finish()
	require.NoError(t, err)
	require.Empty(t, v2.BlobFiles, "no table refers to a blob file: none stays")
}
