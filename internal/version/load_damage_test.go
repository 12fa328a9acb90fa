package version

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/record"
)

// recordStarts returns the offset of each record of a small (one-block)
// MANIFEST image.
func recordStarts(t *testing.T, data []byte) []int {
	require.Less(t, len(data), record.BlockSize)
	var starts []int
	for off := 0; off+record.HeaderSize <= len(data); {
		starts = append(starts, off)
		off += record.HeaderSize + int(binary.LittleEndian.Uint16(data[off+4:off+6]))
	}
	return starts
}

// TestLoad_EveryFlipIsCaught: one damaged byte anywhere in the MANIFEST,
// headers of the last record included, gives ErrCorruption naming the
// MANIFEST, never an older state. (A damaged length used to pass for a
// torn tail and drop every later edit.)
func TestLoad_EveryFlipIsCaught(t *testing.T) {
	_, data, states := smallManifest(t)
	final := states[len(states)+1]
	damaged := make([]byte, len(data))
	for i := range data {
		for _, mask := range []byte{0x01, 0x02, 0x10, 0x80, 0xff} {
			copy(damaged, data)
			damaged[i] ^= mask
			vs, err := Load(writeDB(t, damaged, "MANIFEST-000001\n"), dir, Options{})
			if err == nil {
				require.Equal(t, final, state(vs), "byte %d ^%#x opened to another state", i, mask)
				continue
			}
			require.True(t, errors.Is(err, base.ErrCorruption), "byte %d ^%#x: %v", i, mask, err)
			require.Contains(t, err.Error(), "MANIFEST-000001", "byte %d ^%#x", i, mask)
			require.Contains(t, err.Error(), "offset", "byte %d ^%#x", i, mask)
		}
	}
}

// TestLoad_TornLastRecord: a MANIFEST cut anywhere inside its last record
// loads the state before that record (the edit was never acknowledged);
// cut at a record boundary it loads the state of the records before the
// cut, which Load cannot tell from a complete history.
func TestLoad_TornLastRecord(t *testing.T) {
	_, data, states := smallManifest(t)
	starts := recordStarts(t, data)
	require.Len(t, starts, len(states)+1) // comparator, counters, 4 flushes
	for r := 2; r < len(starts); r++ {
		end := len(data)
		if r+1 < len(starts) {
			end = starts[r+1]
		}
		for n := starts[r]; n < end; n++ {
			vs, err := Load(writeDB(t, data[:n], "MANIFEST-000001\n"), dir, Options{})
			require.NoError(t, err, "cut at %d", n)
			require.Equal(t, states[r], state(vs), "cut at %d (record %d at %d..%d)", n, r, starts[r], end)
		}
	}
}

// TestLoad_LastSequenceBelowTables: a recorded last sequence below a
// table's sequence numbers is corruption: new writes would reuse them.
func TestLoad_LastSequenceBelowTables(t *testing.T) {
	edits := []Edit{
		{ComparatorName: base.ComparatorName, HasComparator: true},
		{LogNumber: 1, HasLogNumber: true, NextFileNumber: 10, HasNextFileNumber: true,
			LastSequence: 6, HasLastSequence: true,
			NewFiles: []NewFileEntry{{Level: 1, Meta: meta(5, "a", "b", 7)}}},
	}
	var buf bytes.Buffer
	w := record.NewWriter(&buf, 1)
	for _, e := range edits {
		_, err := w.WriteRecord(e.Encode(nil))
		require.NoError(t, err)
	}
	require.NoError(t, w.Flush())
	_, err := Load(writeDB(t, buf.Bytes(), "MANIFEST-000001\n"), dir, Options{})
	require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
	require.Contains(t, err.Error(), "000005.sst")
	require.Contains(t, err.Error(), "MANIFEST-000001")
}

// TestLoad_CurrentNamesMissingManifest: CURRENT naming a MANIFEST that is
// not there (a damaged digit) is corruption, as in RocksDB.
func TestLoad_CurrentNamesMissingManifest(t *testing.T) {
	_, data, _ := smallManifest(t)
	_, err := Load(writeDB(t, data, "MANIFEST-000011\n"), dir, Options{})
	require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
	require.Contains(t, err.Error(), "MANIFEST-000011")
}
