package db_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// countingFS counts the files opened through it and not yet closed.
type countingFS struct {
	vfs.FS
	mu   sync.Mutex
	open map[string]int
}

func newCountingFS(fs vfs.FS) *countingFS { return &countingFS{FS: fs, open: map[string]int{}} }

type countedFile struct {
	vfs.File
	fs   *countingFS
	name string
	once sync.Once
}

func (f *countedFile) Close() error {
	f.once.Do(func() {
		f.fs.mu.Lock()
		f.fs.open[f.name]--
		if f.fs.open[f.name] == 0 {
			delete(f.fs.open, f.name)
		}
		f.fs.mu.Unlock()
	})
	return f.File.Close()
}

func (c *countingFS) track(f vfs.File, err error, name string) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	c.mu.Lock()
	c.open[filepath.Base(name)]++
	c.mu.Unlock()
	return &countedFile{File: f, fs: c, name: filepath.Base(name)}, nil
}

func (c *countingFS) Open(name string) (vfs.File, error) {
	f, err := c.FS.Open(name)
	return c.track(f, err, name)
}

func (c *countingFS) Create(name string) (vfs.File, error) {
	f, err := c.FS.Create(name)
	return c.track(f, err, name)
}

func (c *countingFS) OpenDir(name string) (vfs.File, error) {
	f, err := c.FS.OpenDir(name)
	return c.track(f, err, name)
}

// stillOpen lists the files opened and not closed.
func (c *countingFS) stillOpen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for name, n := range c.open {
		out = append(out, fmt.Sprintf("%s x%d", name, n))
	}
	sort.Strings(out)
	return out
}

// openManyTables opens a database on a counting FS holding tables L0
// tables with MaxOpenFiles 1, so most tables are opened only when read.
func openManyTables(t *testing.T, tables int) (*db.DB, *countingFS) {
	fs := newCountingFS(vfs.Default)
	d, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true, FS: fs, MaxOpenFiles: 1,
		DisableAutoCompactions: true})
	require.NoError(t, err)
	for i := 0; i < tables; i++ {
		for j := 0; j < 10; j++ {
			require.NoError(t, d.Put([]byte(fmt.Sprintf("k%d-%02d", i, j)), []byte("v"), nil))
		}
		require.NoError(t, d.Flush())
	}
	return d, fs
}

// TestIteratorAcrossCloseLeaksNoFiles: iterators left open across Close,
// unpositioned or positioned, and then used, do not panic, end with
// ErrClosed or normally, and leave no file open once closed themselves.
func TestIteratorAcrossCloseLeaksNoFiles(t *testing.T) {
	d, fs := openManyTables(t, 4)
	unpositioned := d.NewIterator(nil)
	positioned := d.NewIterator(nil)
	positioned.SeekToFirst()
	require.True(t, positioned.Valid())
	require.NoError(t, d.Close())

	for name, it := range map[string]*db.Iterator{"unpositioned": unpositioned, "positioned": positioned} {
		for step := 0; step < 100 && it.Valid(); step++ {
			it.Next()
		}
		it.Seek([]byte("k3"))
		it.SeekToLast()
		it.Prev()
		if err := it.Err(); err != nil {
			require.True(t, errors.Is(err, db.ErrClosed), "%s: %v", name, err)
		}
		if err := it.Close(); err != nil {
			require.True(t, errors.Is(err, db.ErrClosed), "%s: Close: %v", name, err)
		}
	}
	require.Empty(t, fs.stillOpen(), "files left open after Close and the iterators' Close")
}

// TestUnpositionedIteratorAfterCloseIsErrClosed: a table first needed
// after Close is not opened; the iterator reports ErrClosed.
func TestUnpositionedIteratorAfterCloseIsErrClosed(t *testing.T) {
	d, fs := openManyTables(t, 3)
	it := d.NewIterator(nil)
	require.NoError(t, d.Close())
	it.SeekToFirst()
	require.False(t, it.Valid())
	require.True(t, errors.Is(it.Err(), db.ErrClosed), "%v", it.Err())
	if err := it.Close(); err != nil { // Close reports the iterator's error
		require.True(t, errors.Is(err, db.ErrClosed), "Close: %v", err)
	}
	require.Empty(t, fs.stillOpen())
}

// TestGetRacingCloseLeaksNoFiles runs Gets over many tables (a cache of
// one reader, so most Gets open a table) while Close runs: each Get
// succeeds or returns ErrClosed, and no file stays open.
func TestGetRacingCloseLeaksNoFiles(t *testing.T) {
	const tables = 6
	for round := 0; round < 3; round++ {
		d, fs := openManyTables(t, tables)
		started := make(chan struct{})
		errc := make(chan error, 4)
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; ; i++ {
					_, err := d.Get([]byte(fmt.Sprintf("k%d-%02d", (i+g)%tables, i%10)), nil)
					if i == 10 && g == 0 {
						close(started)
					}
					if err != nil {
						errc <- err
						return
					}
				}
			}(g)
		}
		<-started
		require.NoError(t, d.Close())
		wg.Wait()
		close(errc)
		for err := range errc {
			require.True(t, errors.Is(err, db.ErrClosed), "Get racing Close: %v", err)
		}
		require.Empty(t, fs.stillOpen(), "round %d: files left open after Close", round)
	}
}

// TestIteratorLeftOpenAcrossClose: an iterator positioned on a key and left
// open across Close is no longer Valid, has no Key or Value, and its Err
// wraps ErrClosed, without a positioning call in between; Close logs the
// leaked iterator and snapshot, and Iterator.Close stays harmless.
func TestIteratorLeftOpenAcrossClose(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
	require.NoError(t, d.Put([]byte("b"), []byte("2"), nil))
	it := d.NewIterator(nil)
	it.SeekToFirst()
	require.True(t, it.Valid())
	closedIt := d.NewIterator(nil)
	require.NoError(t, closedIt.Close()) // not a leak
	snap := d.NewSnapshot()

	require.NoError(t, d.Close())
	require.False(t, it.Valid(), "an iterator is not Valid after its DB's Close")
	require.Nil(t, it.Key())
	require.Nil(t, it.Value())
	require.True(t, errors.Is(it.Err(), db.ErrClosed), "%v", it.Err())
	it.Next()
	require.False(t, it.Valid())
	require.True(t, errors.Is(it.Err(), db.ErrClosed), "%v", it.Err())
	_, err = d.Get([]byte("a"), &db.ReadOptions{Snapshot: snap})
	require.True(t, errors.Is(err, db.ErrClosed), "%v", err)
	if err := it.Close(); err != nil {
		require.True(t, errors.Is(err, db.ErrClosed), "%v", err)
	}
	snap.Release()

	log, err := os.ReadFile(filepath.Join(dir, "LOG"))
	require.NoError(t, err)
	require.Contains(t, string(log), "leaked iterators and snapshots")
	require.Contains(t, string(log), "iterators=1")
	require.Contains(t, string(log), "snapshots=1")
}
