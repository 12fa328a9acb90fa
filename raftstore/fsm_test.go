package raftstore

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// memSink is a raft.SnapshotSink into memory.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { s.closed = true; return nil }

func applyCmd(t *testing.T, f *FSM, idx uint64, cmd []byte) {
	t.Helper()
	res := f.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: cmd})
	require.Nil(t, res)
}

func fsmContents(t *testing.T, f *FSM) map[string]string {
	t.Helper()
	m := map[string]string{}
	require.NoError(t, f.View(func(d *db.DB) error {
		it := d.NewIterator(nil)
		defer it.Close()
		for it.SeekToFirst(); it.Valid(); it.Next() {
			m[string(it.Key())] = string(it.Value())
		}
		return it.Err()
	}))
	return m
}

func TestFSMApply(t *testing.T) {
	f, err := OpenFSM(t.TempDir(), nil)
	require.NoError(t, err)
	defer f.Close()
	applyCmd(t, f, 1, EncodePut([]byte("a"), []byte("1")))
	applyCmd(t, f, 2, EncodePut([]byte("b"), nil))
	applyCmd(t, f, 3, EncodePut(nil, []byte("empty key")))
	applyCmd(t, f, 4, EncodeDelete([]byte("a")))
	// Non-command entries are ignored.
	require.Nil(t, f.Apply(&raft.Log{Type: raft.LogNoop}))
	require.Equal(t, map[string]string{"b": "", "": "empty key"}, fsmContents(t, f))
	_, err = f.Get([]byte("a"))
	require.ErrorIs(t, err, db.ErrNotFound)

	for _, bad := range [][]byte{nil, {9}, {opPut}, {opPut, 5, 'a'}} {
		res := f.Apply(&raft.Log{Type: raft.LogCommand, Data: bad})
		err, ok := res.(error)
		require.True(t, ok, "command %x: %v", bad, res)
		require.ErrorIs(t, err, db.ErrInvalidArgument)
	}
}

func TestFSMSnapshotRestore(t *testing.T) {
	src, err := OpenFSM(t.TempDir(), nil)
	require.NoError(t, err)
	defer src.Close()
	want := map[string]string{}
	for i := 0; i < 500; i++ {
		k, v := fmt.Sprintf("key%04d", i), fmt.Sprintf("value%d", i)
		applyCmd(t, src, uint64(i+1), EncodePut([]byte(k), []byte(v)))
		want[k] = v
	}
	snap, err := src.Snapshot()
	require.NoError(t, err)
	// Writes after Snapshot returns are not in the snapshot.
	applyCmd(t, src, 1000, EncodePut([]byte("late"), []byte("x")))
	var sink memSink
	require.NoError(t, snap.Persist(&sink))
	require.True(t, sink.closed)
	snap.Release()
	archive := sink.Bytes()

	dstDir := t.TempDir()
	dst, err := OpenFSM(dstDir, nil)
	require.NoError(t, err)
	applyCmd(t, dst, 1, EncodePut([]byte("stale"), []byte("gone after restore")))
	require.NoError(t, dst.Restore(io.NopCloser(bytes.NewReader(archive))))
	require.Equal(t, want, fsmContents(t, dst))
	applyCmd(t, dst, 501, EncodePut([]byte("after"), []byte("restore")))

	// The restored state, and writes after it, survive a reopen; the old
	// generation's directory is gone.
	require.NoError(t, dst.Close())
	dst, err = OpenFSM(dstDir, nil)
	require.NoError(t, err)
	defer dst.Close()
	want["after"] = "restore"
	require.Equal(t, want, fsmContents(t, dst))
	entries, err := os.ReadDir(dstDir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{fsmCurrent, "db-2"}, names)
}

func TestFSMRestoreCorruptArchive(t *testing.T) {
	src, err := OpenFSM(t.TempDir(), nil)
	require.NoError(t, err)
	defer src.Close()
	applyCmd(t, src, 1, EncodePut([]byte("k"), []byte("v")))
	snap, err := src.Snapshot()
	require.NoError(t, err)
	var sink memSink
	require.NoError(t, snap.Persist(&sink))
	snap.Release()
	archive := sink.Bytes()

	dstDir := t.TempDir()
	dst, err := OpenFSM(dstDir, nil)
	require.NoError(t, err)
	defer dst.Close()
	applyCmd(t, dst, 1, EncodePut([]byte("mine"), []byte("kept")))
	step := len(archive)/40 + 1
	for cut := 0; cut < len(archive); cut += step {
		err := dst.Restore(io.NopCloser(bytes.NewReader(archive[:cut])))
		require.ErrorIs(t, err, db.ErrCorruption, "archive cut at %d", cut)
		require.Contains(t, err.Error(), "offset")
	}
	flipped := bytes.Clone(archive)
	flipped[len(flipped)-10] ^= 0x40
	require.ErrorIs(t, dst.Restore(io.NopCloser(bytes.NewReader(flipped))), db.ErrCorruption)
	// A refused archive leaves the state and the directory as they were.
	require.Equal(t, map[string]string{"mine": "kept"}, fsmContents(t, dst))
	_, err = os.Stat(filepath.Join(dstDir, "db-2"))
	require.True(t, os.IsNotExist(err))
}
