//go:build linux && (amd64 || arm64)

package vfs

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func writeTestFile(t *testing.T, n int) (string, []byte) {
	t.Helper()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i * 7)
	}
	name := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(name, data, 0o644))
	return name, data
}

// TestMapForReading_ReadAt: reads through the mapping return the file's
// bytes, a read past the end returns io.EOF with what there was, as
// os.File.ReadAt does.
func TestMapForReading_ReadAt(t *testing.T) {
	name, data := writeTestFile(t, 3*4096+100)
	f, err := Default.Open(name)
	require.NoError(t, err)
	m, ok := MapForReading(f, int64(len(data)))
	require.True(t, ok)
	buf := make([]byte, 5000)
	n, err := m.ReadAt(buf, 1000)
	require.NoError(t, err)
	require.Equal(t, 5000, n)
	require.Equal(t, data[1000:6000], buf)
	n, err = m.ReadAt(buf, int64(len(data))-10)
	require.Equal(t, io.EOF, err)
	require.Equal(t, 10, n)
	require.Equal(t, data[len(data)-10:], buf[:10])
	_, err = m.ReadAt(buf, int64(len(data)))
	require.Equal(t, io.EOF, err)
	_, err = m.ReadAt(buf, -1)
	require.Error(t, err)
	require.NoError(t, m.Close())
}

// TestMapForReading_FaultIsAnError: a mapped page whose file bytes are gone
// (the file was truncated under the mapping) raises SIGBUS when read; the
// read returns an error instead of crashing the process.
func TestMapForReading_FaultIsAnError(t *testing.T) {
	name, data := writeTestFile(t, 4*4096)
	f, err := Default.Open(name)
	require.NoError(t, err)
	m, ok := MapForReading(f, int64(len(data)))
	require.True(t, ok)
	require.NoError(t, os.Truncate(name, 4096))
	buf := make([]byte, 100)
	_, err = m.ReadAt(buf, 2*4096)
	require.Error(t, err)
	require.Contains(t, err.Error(), "fault reading mapped offset 8192")
	n, err := m.ReadAt(buf, 0) // the page still backed reads fine
	require.NoError(t, err)
	require.Equal(t, data[:100], buf[:n])
	require.NoError(t, m.Close())
}

// TestMapForReading_MemFSCannot: files that cannot be mapped say so.
func TestMapForReading_MemFSCannot(t *testing.T) {
	fs := NewMem()
	f, err := fs.Create("/x")
	require.NoError(t, err)
	_, err = f.Write([]byte("abc"))
	require.NoError(t, err)
	_, ok := MapForReading(f, 3)
	require.False(t, ok)
	require.NoError(t, f.Close())
}
