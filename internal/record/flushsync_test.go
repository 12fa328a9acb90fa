package record

import (
	"bytes"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"
)

// syncWriter records how each flush reached it.
type syncWriter struct {
	bytes.Buffer
	supported bool
	err       error
	writes    int
	syncs     int
}

func (s *syncWriter) Write(p []byte) (int, error) { s.writes++; return s.Buffer.Write(p) }

func (s *syncWriter) WriteSync(p []byte) (int, bool, error) {
	if !s.supported {
		return 0, false, nil
	}
	if s.err != nil {
		return 0, true, s.err
	}
	s.syncs++
	n, _ := s.Buffer.Write(p)
	return n, true, nil
}

// TestWriter_FlushSync: FlushSync hands the buffered bytes to WriteSync
// when the writer supports it (synced), and otherwise to Write (the caller
// syncs); a failure breaks the Writer as a failed Flush does. The log reads
// back the same either way.
func TestWriter_FlushSync(t *testing.T) {
	for _, supported := range []bool{true, false} {
		sw := &syncWriter{supported: supported}
		w := NewRecyclableWriter(sw, 7)
		for i := 0; i < 3; i++ {
			_, err := w.WriteRecord(bytes.Repeat([]byte{byte('a' + i)}, 100+i*BlockSize/2))
			require.NoError(t, err)
			synced, err := w.FlushSync()
			require.NoError(t, err)
			require.Equal(t, supported, synced)
		}
		synced, err := w.FlushSync()
		require.NoError(t, err)
		require.False(t, synced, "nothing buffered: nothing synced")
		if supported {
			require.Equal(t, 3, sw.syncs)
			require.Zero(t, sw.writes)
		} else {
			require.Equal(t, 3, sw.writes)
		}
		require.Equal(t, w.Size(), int64(sw.Len()))
		r := NewReader(bytes.NewReader(sw.Bytes()), 7, "log")
		for i := 0; i < 3; i++ {
			got, err := r.Next()
			require.NoError(t, err)
			require.Equal(t, bytes.Repeat([]byte{byte('a' + i)}, 100+i*BlockSize/2), got)
		}
	}

	injected := errors.New("injected")
	sw := &syncWriter{supported: true, err: injected}
	w := NewRecyclableWriter(sw, 7)
	_, err := w.WriteRecord([]byte("x"))
	require.NoError(t, err)
	_, err = w.FlushSync()
	require.ErrorIs(t, err, injected)
	_, err = w.WriteRecord([]byte("y"))
	require.ErrorIs(t, err, injected, "the Writer is broken")
	require.ErrorIs(t, w.Flush(), injected)
}
