package db_test

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/record"
	"github.com/stretchr/testify/require"
)

// TestInfoLog: the default LOG records the options, recovery, flushes and
// compactions; a second Open rotates it to LOG.old.<micros>; a read-only
// Open writes none.
func TestInfoLog(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, WriteBufferSize: 64 << 10})
	require.NoError(t, err)
	for i := 0; i < 100; i++ {
		require.NoError(t, d.Put([]byte{byte(i)}, []byte("v"), nil))
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.CompactRange(nil, nil))
	require.NoError(t, d.Close())
	first, err := os.ReadFile(filepath.Join(dir, "LOG"))
	require.NoError(t, err)
	for _, want := range []string{"msg=open", "msg=option", "name=write_buffer_size value=65536",
		"msg=\"flush finished\"", "msg=\"compaction finished\"", "reason=manual", "msg=\"created WAL\""} {
		require.Contains(t, string(first), want)
	}

	d, err = db.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	olds, err := filepath.Glob(filepath.Join(dir, "LOG.old.*"))
	require.NoError(t, err)
	require.Len(t, olds, 1)
	old, err := os.ReadFile(olds[0])
	require.NoError(t, err)
	require.Equal(t, first, old)
	second, err := os.ReadFile(filepath.Join(dir, "LOG"))
	require.NoError(t, err)
	require.Contains(t, string(second), "msg=\"recovered WAL\"")

	d, err = db.Open(dir, &db.Options{ReadOnly: true})
	require.NoError(t, err)
	require.NoError(t, d.Close())
	olds, err = filepath.Glob(filepath.Join(dir, "LOG*"))
	require.NoError(t, err)
	require.Len(t, olds, 2, "read-only Open leaves the LOGs alone")
}

// recordingHandler keeps log records.
type recordingHandler struct {
	mu   sync.Mutex
	msgs []string
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b bytes.Buffer
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	h.msgs = append(h.msgs, b.String())
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// TestLoggerOption: a Logger given in Options gets the records and no LOG
// file is written; point-in-time recovery that stops logs a warning.
func TestLoggerOption(t *testing.T) {
	h := &recordingHandler{}
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, Logger: slog.New(h)})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
	require.NoError(t, d.Close())
	_, err = os.Stat(filepath.Join(dir, "LOG"))
	require.True(t, os.IsNotExist(err))
	h.mu.Lock()
	all := strings.Join(h.msgs, "\n")
	h.mu.Unlock()
	require.Contains(t, all, "INFO open")
	require.Contains(t, all, "INFO option")

	// A flipped byte in the first of two WALs, recovered at a point in
	// time: the log says where replay stopped.
	ws := newWALSet(t, rand.New(rand.NewSource(1)), 2, 5)
	logs := append([][]byte(nil), ws.logs...)
	logs[0] = append([]byte(nil), logs[0]...)
	logs[0][ws.recs[2].start+record.HeaderSize] ^= 0xff
	dir = filepath.Join(t.TempDir(), "db")
	ws.write(t, dir, logs)
	h = &recordingHandler{}
	d, err = db.Open(dir, &db.Options{WALRecoveryMode: db.WALRecoveryPointInTime, Logger: slog.New(h)})
	require.NoError(t, err)
	require.NoError(t, d.Close())
	h.mu.Lock()
	all = strings.Join(h.msgs, "\n")
	h.mu.Unlock()
	require.Contains(t, all, "WARN WAL damaged: replay stops here")
	require.Contains(t, all, "checksum mismatch")
	require.Contains(t, all, "batches=2")
}
