package table_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

type nopCloser struct{ io.ReaderAt }

func (nopCloser) Close() error { return nil }

// TestLayout_TilesTheFile: the blocks Layout lists, each followed by its
// 5-byte trailer, cover the file from 0 to its end without gap or overlap.
func TestLayout_TilesTheFile(t *testing.T) {
	var buf bytes.Buffer
	w := table.NewExternalWriter(&buf, table.ExternalWriterOptions{BlockSize: 256, BloomBitsPerKey: 10})
	for i := 0; i < 200; i++ {
		require.NoError(t, w.Put([]byte(fmt.Sprintf("key%05d", i)), bytes.Repeat([]byte("v"), 20)))
	}
	require.NoError(t, w.DeleteRange([]byte("x"), []byte("y")))
	_, err := w.Finish()
	require.NoError(t, err)
	r, err := table.Open(nopCloser{bytes.NewReader(buf.Bytes())}, int64(buf.Len()), table.ReaderOptions{})
	require.NoError(t, err)
	defer r.Close()
	blocks, err := r.Layout()
	require.NoError(t, err)
	kinds := map[string]int{}
	off := uint64(0)
	for _, b := range blocks {
		require.Equal(t, off, b.Offset, "%+v", b)
		off = b.Offset + b.Size
		if b.Kind != "footer" {
			off += 5
		}
		kinds[b.Kind]++
	}
	require.Equal(t, uint64(buf.Len()), off)
	require.Greater(t, kinds["data"], 10)
	require.Equal(t, 1, kinds["index"])
	require.Equal(t, 1, kinds["metaindex"])
	require.GreaterOrEqual(t, kinds["meta"], 3) // properties, filter, range deletions
}
