package db_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/vfs"
	"github.com/stretchr/testify/require"
)

// errFileInUse is what winFS answers for a removal or rename of an open
// file, as Windows answers ERROR_SHARING_VIOLATION when the file was opened
// without FILE_SHARE_DELETE (Go's os.Open does not set it).
var errFileInUse = errors.New("the process cannot access the file because it is being used by another process")

// winFS emulates Windows' rules on an in-memory FS: a file that some
// handle holds open cannot be removed, renamed, or renamed over. It counts
// the refusals, so a test can tell the engine never tried.
type winFS struct {
	vfs.FS
	mu       sync.Mutex
	open     map[string]int
	refusals []string
}

func newWinFS() *winFS { return &winFS{FS: vfs.NewMem(), open: map[string]int{}} }

type winFile struct {
	vfs.File
	fs   *winFS
	name string
	once sync.Once
}

func (f *winFile) Close() error {
	f.once.Do(func() {
		f.fs.mu.Lock()
		f.fs.open[f.name]--
		f.fs.mu.Unlock()
	})
	return f.File.Close()
}

func (w *winFS) track(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	name = filepath.Clean(name)
	w.mu.Lock()
	w.open[name]++
	w.mu.Unlock()
	return &winFile{File: f, fs: w, name: name}, nil
}

func (w *winFS) Create(name string) (vfs.File, error) {
	f, err := w.FS.Create(name)
	return w.track(name, f, err)
}

func (w *winFS) Open(name string) (vfs.File, error) {
	f, err := w.FS.Open(name)
	return w.track(name, f, err)
}

func (w *winFS) OpenDir(name string) (vfs.File, error) {
	f, err := w.FS.OpenDir(name)
	return w.track(name, f, err)
}

// refuseOpen fails with errFileInUse if name, or a file under it (a
// directory with an open file in it cannot be renamed or removed either),
// is open, and records it.
func (w *winFS) refuseOpen(op, name string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	name = filepath.Clean(name)
	inUse := w.open[name] > 0
	for p, n := range w.open {
		if n > 0 && strings.HasPrefix(p, name+string(filepath.Separator)) {
			inUse = true
		}
	}
	if inUse {
		w.refusals = append(w.refusals, op+" "+filepath.Base(name))
		return &os.PathError{Op: op, Path: name, Err: errFileInUse}
	}
	return nil
}

func (w *winFS) Remove(name string) error {
	if err := w.refuseOpen("remove", name); err != nil {
		return err
	}
	return w.FS.Remove(name)
}

func (w *winFS) Rename(oldname, newname string) error {
	if err := w.refuseOpen("rename", oldname); err != nil {
		return err
	}
	if err := w.refuseOpen("rename over", newname); err != nil {
		return err
	}
	return w.FS.Rename(oldname, newname)
}

func (w *winFS) refused() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.refusals...)
}

func (w *winFS) names(t *testing.T, dir, suffix string) []string {
	t.Helper()
	all, err := w.List(dir)
	require.NoError(t, err)
	var out []string
	for _, n := range all {
		if strings.HasSuffix(n, suffix) {
			out = append(out, n)
		}
	}
	return out
}

func winFill(t *testing.T, d *db.DB, round int) {
	t.Helper()
	for i := 0; i < 50; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("k%03d", i)), []byte(fmt.Sprintf("v%d", round)), nil))
	}
}

// TestWindowsRulesNeverRemoveOpenFile: through flushes, compactions with
// an iterator open across them, a checkpoint, OPTIONS and MANIFEST
// rewrites, an ingestion with Move and reopens, the engine never removes or renames a file it
// holds open: every refusal winFS would give on Windows is absent.
func TestWindowsRulesNeverRemoveOpenFile(t *testing.T) {
	fs := newWinFS()
	opts := func() *db.Options {
		return &db.Options{CreateIfMissing: true, FS: fs}
	}
	d, err := db.Open("/w", opts())
	require.NoError(t, err)
	for round := 0; round < 4; round++ {
		winFill(t, d, round)
		it := d.NewIterator(nil)
		it.SeekToFirst()
		require.True(t, it.Valid())
		require.NoError(t, d.Flush())
		require.NoError(t, d.CompactRange(nil, nil))
		// The iterator still reads the compacted-away tables.
		n := 0
		for it.SeekToFirst(); it.Valid(); it.Next() {
			n++
		}
		require.Equal(t, 50, n)
		require.NoError(t, it.Close())
	}
	require.NoError(t, d.Checkpoint("/w-ckpt"))
	writeExtFile(t, fs, "/ext.sst", []extOp{{key: "zz", value: "ingested"}})
	require.NoError(t, d.Ingest([]string{"/ext.sst"}, &db.IngestOptions{Move: true}))
	_, err = fs.Stat("/ext.sst")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, d.Close())
	d, err = db.Open("/w", opts())
	require.NoError(t, err)
	winFill(t, d, 9)
	require.NoError(t, d.Flush())
	require.NoError(t, d.CompactRange(nil, nil))
	winFill(t, d, 10)
	require.NoError(t, d.Flush()) // sweeps what the compaction replaced
	live := 0
	for _, l := range d.Metrics().Levels {
		live += l.NumFiles
	}
	require.NoError(t, d.Close())
	require.Empty(t, fs.refused())
	// Nothing obsolete was left behind for want of a retry.
	require.Len(t, fs.names(t, "/w", ".sst"), live)
}

// TestWindowsRulesRemovalRetried: a table and a WAL that another handle
// holds open (a backup tool, a virus scanner) when they become obsolete
// cannot be removed on Windows; the engine keeps them on its obsolete list
// and removes them at a later sweep once the handle is closed, instead of
// forgetting them until the next Open.
func TestWindowsRulesRemovalRetried(t *testing.T) {
	fs := newWinFS()
	d, err := db.Open("/w", &db.Options{CreateIfMissing: true, FS: fs})
	require.NoError(t, err)
	defer d.Close()
	winFill(t, d, 0)
	wals := fs.names(t, "/w", ".log")
	require.Len(t, wals, 1)
	walHold, err := fs.Open(filepath.Join("/w", wals[0]))
	require.NoError(t, err)
	require.NoError(t, d.Flush()) // the WAL is obsolete now, but held open
	require.Contains(t, fs.names(t, "/w", ".log"), wals[0])

	tables := fs.names(t, "/w", ".sst")
	require.Len(t, tables, 1)
	tableHold, err := fs.Open(filepath.Join("/w", tables[0]))
	require.NoError(t, err)
	winFill(t, d, 1)
	require.NoError(t, d.Flush())
	require.NoError(t, d.CompactRange(nil, nil)) // tables[0] is obsolete, held open
	// The version the compaction replaced goes with the read state it was
	// in; the sweep at the end of the next flush tries the removal.
	winFill(t, d, 2)
	require.NoError(t, d.Flush())
	require.Contains(t, fs.names(t, "/w", ".sst"), tables[0])
	require.Contains(t, fs.refused(), "remove "+tables[0])
	require.Contains(t, fs.refused(), "remove "+wals[0])

	// Still held: a sweep fails again and keeps them.
	before := len(fs.refused())
	winFill(t, d, 3)
	require.NoError(t, d.Flush())
	require.Contains(t, fs.names(t, "/w", ".sst"), tables[0])
	require.Contains(t, fs.names(t, "/w", ".log"), wals[0])
	require.Greater(t, len(fs.refused()), before)

	require.NoError(t, walHold.Close())
	require.NoError(t, tableHold.Close())
	winFill(t, d, 4)
	require.NoError(t, d.Flush()) // the next sweep removes both
	require.NotContains(t, fs.names(t, "/w", ".sst"), tables[0])
	require.NotContains(t, fs.names(t, "/w", ".log"), wals[0])

	it := d.NewIterator(nil)
	n := 0
	for it.SeekToFirst(); it.Valid(); it.Next() {
		require.Equal(t, "v4", string(it.Value()))
		n++
	}
	require.NoError(t, it.Close())
	require.Equal(t, 50, n)
}
