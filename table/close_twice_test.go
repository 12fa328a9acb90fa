package table

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// closeCounter counts the Close calls its file gets.
type closeCounter struct {
	*memFile
	closes int
}

func (c *closeCounter) Close() error { c.closes++; return nil }

// TestReader_CloseTwice: a second Close does nothing (it closed the file and
// the compression dictionary a second time).
func TestReader_CloseTwice(t *testing.T) {
	f, _ := buildTable(t, randomModel(rand.New(rand.NewSource(1)), 100), nil, WriterOptions{})
	cf := &closeCounter{memFile: f}
	r, err := Open(cf, int64(len(f.b)), ReaderOptions{FileName: "mem.sst"})
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	require.Equal(t, 1, cf.closes)
}
