package db_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/blob"
	"github.com/stratadb/strata/internal/checksum"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// withBlobIndexAt rewrites the external file at path so that key's entry is
// a blob index (kind and value as a blob-enabled database writes them):
// what a table holding values in blob files looks like. The file has one
// data block, at offset 0, with no compression and XXH3 checksums (the
// writer's default); the patch recomputes the block's checksum.
func withBlobIndexAt(t *testing.T, fs vfs.FS, path, key string, valueLen int) {
	t.Helper()
	data := readAll(t, fs, path)
	var trailer [8]byte
	binary.LittleEndian.PutUint64(trailer[:], uint64(base.MakeTrailer(0, base.KindSet)))
	at := bytes.Index(data, append([]byte(key), trailer[:]...))
	require.Positive(t, at, "entry of %q", key)
	require.Equal(t, -1, bytes.Index(data[at+1:], append([]byte(key), trailer[:]...)), "one entry of %q", key)
	// The value (which follows) must have the blob index's length, so the
	// block's layout stays as it is.
	idx := blob.AppendIndex(nil, 9, 100, 1000, 0)
	require.Len(t, idx, valueLen)
	copy(data[at+len(key)+8:], idx)
	data[at+len(key)] = byte(base.KindBlobIndex)
	// Find the data block's end: the offset whose trailer checks.
	end := -1
	for n := at; n+5 <= len(data); n++ {
		if data[n] == 0 && binary.LittleEndian.Uint32(data[n+1:]) != 0 {
			end = n
			orig := binary.LittleEndian.Uint32(data[n+1:])
			data[at+len(key)] = byte(base.KindSet)
			copy(data[at+len(key)+8:], strings.Repeat("v", valueLen))
			ok := checksum.Block(checksum.XXH3, data[:n], 0) == orig
			data[at+len(key)] = byte(base.KindBlobIndex)
			copy(data[at+len(key)+8:], idx)
			if ok {
				break
			}
			end = -1
		}
	}
	require.Positive(t, end, "the data block's trailer")
	binary.LittleEndian.PutUint32(data[end+1:], checksum.Block(checksum.XXH3, data[:end], 0))
	writeAll(t, fs, path, data)
}

// TestIngestRefusesBlobIndexes: a table whose entries refer to blob files
// is refused with ErrInvalidArgument (its blob files are not ingested
// with it), whether the blob index is the first key (checked even with
// SkipVerify) or inside the file (checked by the verification pass); a
// table copied out of a blob-enabled database is refused too (not an
// external file). Nothing changes in the database.
func TestIngestRefusesBlobIndexes(t *testing.T) {
	fs := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	require.NoError(t, d.Put([]byte("k"), []byte("v"), nil))
	n := len(blob.AppendIndex(nil, 9, 100, 1000, 0))
	ops := []extOp{{key: "aaa", value: strings.Repeat("v", n)}, {key: "mmm", value: strings.Repeat("v", n)}, {key: "zzz", value: "z"}}

	// Unpatched, the file ingests into another database: the patch alone
	// makes the difference.
	writeExtFile(t, fs, "/ok.sst", ops)
	other, err := db.Open("/other", &db.Options{FS: fs, CreateIfMissing: true})
	require.NoError(t, err)
	require.NoError(t, other.Ingest([]string{"/ok.sst"}, nil))
	require.NoError(t, other.Close())

	for _, tc := range []struct {
		key  string
		opts *db.IngestOptions
	}{{"mmm", nil}, {"aaa", nil}, {"aaa", &db.IngestOptions{SkipVerify: true}}} {
		writeExtFile(t, fs, "/b.sst", ops)
		withBlobIndexAt(t, fs, "/b.sst", tc.key, n)
		err := d.Ingest([]string{"/b.sst"}, tc.opts)
		require.ErrorIs(t, err, db.ErrInvalidArgument, "blob index at %s", tc.key)
		require.Contains(t, err.Error(), "blob index")
		require.Contains(t, err.Error(), tc.key)
		require.Equal(t, []string{"k=v"}, scan(t, d, nil))
	}

	// A table of a blob-enabled database.
	dir := t.TempDir()
	src, err := db.Open(dir, &db.Options{CreateIfMissing: true, EnableBlobFiles: true, MinBlobSize: 100})
	require.NoError(t, err)
	require.NoError(t, src.Put([]byte("big"), bytes.Repeat([]byte("b"), 500), nil))
	require.NoError(t, src.Flush())
	require.NoError(t, src.Close())
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	copied := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sst") {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			require.NoError(t, err)
			writeAll(t, fs, "/copied.sst", b)
			copied++
		}
	}
	require.Equal(t, 1, copied)
	err = d.Ingest([]string{"/copied.sst"}, nil)
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.Equal(t, []string{"k=v"}, scan(t, d, nil))
}
