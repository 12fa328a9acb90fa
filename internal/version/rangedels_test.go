package version

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/record"
	"github.com/stretchr/testify/require"
)

// The range-deletion count survives an encode/decode round trip, zero
// included; a file without the field decodes as unknown.
func TestEdit_NumRangeDeletionsRoundTrip(t *testing.T) {
	known0 := meta(5, "a", "b", 1)
	known0.RangeDelsKnown = true
	known3 := meta(6, "c", "d", 2)
	known3.RangeDelsKnown, known3.NumRangeDeletions = true, 300
	unknown := meta(7, "e", "f", 3)
	for _, f := range []*FileMetadata{known0, known3, unknown} {
		f.FileChecksumFuncName = unknownChecksumFuncName // what decoding yields
	}
	e := &Edit{NewFiles: []NewFileEntry{{Level: 1, Meta: known0}, {Level: 2, Meta: known3}, {Level: 3, Meta: unknown}}}
	var got Edit
	require.NoError(t, got.Decode(e.Encode(nil)))
	require.Equal(t, e, &got)
	require.False(t, got.NewFiles[0].Meta.MayHaveRangeDeletions())
	require.True(t, got.NewFiles[1].Meta.MayHaveRangeDeletions())
	require.True(t, got.NewFiles[2].Meta.MayHaveRangeDeletions())
	require.False(t, got.NewFiles[2].Meta.RangeDelsKnown)
}

// A range-deletion count field that is not one varint is corruption.
func TestEdit_NumRangeDeletionsMalformed(t *testing.T) {
	f := meta(5, "a", "b", 1)
	good := (&Edit{NewFiles: []NewFileEntry{{Level: 1, Meta: f}}}).Encode(nil)
	// Splice a truncated varint field before the terminator (the last byte).
	bad := append([]byte(nil), good[:len(good)-1]...)
	bad = binary.AppendUvarint(bad, customNumRangeDeletions)
	bad = putVarstring(bad, []byte{0x80})
	bad = append(bad, good[len(good)-1])
	var e Edit
	err := e.Decode(bad)
	require.Error(t, err)
	require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
}

// MANIFESTs written by RocksDB carry no count: every file is unknown, so a
// reader must look into it before assuming it has no tombstones.
func TestEdit_RocksDBManifestsRangeDelsUnknown(t *testing.T) {
	files := 0
	for _, dir := range fixtureDirs(t) {
		path, data := fixtureManifest(t, dir)
		r := record.NewReader(bytes.NewReader(data), 0, path)
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			var e Edit
			require.NoError(t, e.Decode(rec))
			for _, nf := range e.NewFiles {
				require.False(t, nf.Meta.RangeDelsKnown, "%s: file %d", dir, nf.Meta.FileNum)
				files++
			}
		}
	}
	require.Greater(t, files, 0)
}

// The count is kept across a reload and a MANIFEST rotation (which
// rewrites every file's entry from the in-memory metadata).
func TestVersionSet_NumRangeDeletionsPersist(t *testing.T) {
	fs := newMemFS(t)
	vs, err := Create(fs, dir, Options{})
	require.NoError(t, err)
	f := meta(vs.NextFileNum(), "a", "b", 1)
	f.RangeDelsKnown, f.NumRangeDeletions = true, 2
	g := meta(vs.NextFileNum(), "c", "d", 2)
	g.RangeDelsKnown = true
	vs.SetLastSeq(2)
	require.NoError(t, vs.LogAndApply(&Edit{NewFiles: []NewFileEntry{{Level: 1, Meta: f}, {Level: 1, Meta: g}}}))
	require.NoError(t, vs.Close())

	check := func(vs *VersionSet) {
		l1 := vs.Current().Levels[1]
		require.Len(t, l1, 2)
		require.True(t, l1[0].RangeDelsKnown)
		require.Equal(t, uint64(2), l1[0].NumRangeDeletions)
		require.True(t, l1[1].RangeDelsKnown)
		require.False(t, l1[1].MayHaveRangeDeletions())
	}
	vs2, err := Load(fs, dir, Options{})
	require.NoError(t, err)
	check(vs2)
	// The next edit goes to a new MANIFEST that starts with a snapshot.
	flush(t, vs2, "x", "y", 3)
	require.NotEqual(t, uint64(1), vs2.ManifestFileNum())
	require.NoError(t, vs2.Close())
	vs3, err := Load(fs, dir, Options{})
	require.NoError(t, err)
	defer vs3.Close()
	check(vs3)
}
