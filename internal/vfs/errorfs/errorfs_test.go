package errorfs

import (
	"sync"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// workload runs a fixed sequence of operations and returns the first error.
func workload(fs vfs.FS) error {
	if err := fs.MkdirAll("/db", 0o755); err != nil { // mkdir
		return err
	}
	f, err := fs.Create("/db/000001.log") // create
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte("abc")); err != nil { // write
		return err
	}
	if err := f.Sync(); err != nil { // sync
		return err
	}
	if err := f.Close(); err != nil { // close
		return err
	}
	if err := fs.Rename("/db/000001.log", "/db/000002.log"); err != nil { // rename
		return err
	}
	_, err = fs.List("/db") // list
	return err
}

func TestOnIndex_FailsEachOperationInTurn(t *testing.T) {
	counter := OnIndex(-1)
	require.NoError(t, workload(Wrap(vfs.NewMem(), counter)))
	require.Equal(t, 7, counter.Count())
	wantOps := []Op{OpMkdir, OpCreate, OpWrite, OpSync, OpClose, OpRename, OpList}
	for i := 0; i < counter.Count(); i++ {
		err := workload(Wrap(vfs.NewMem(), OnIndex(i)))
		require.True(t, errors.Is(err, ErrInjected), "index %d: %v", i, err)
		require.Contains(t, err.Error(), wantOps[i].String())
	}
}

func TestOnIndex_Filters(t *testing.T) {
	inj := OnIndex(0).Only(OpSync).PathContains(".log")
	require.True(t, errors.Is(workload(Wrap(vfs.NewMem(), inj)), ErrInjected))
	require.Equal(t, 1, inj.Count())

	inj = OnIndex(0).Only(OpSync).PathContains("MANIFEST")
	require.NoError(t, workload(Wrap(vfs.NewMem(), inj)))
	require.Equal(t, 0, inj.Count())
}

func TestOnIndex_Sticky(t *testing.T) {
	fs := Wrap(vfs.NewMem(), OnIndex(1).Only(OpWrite).Sticky())
	f, err := fs.Create("/a")
	require.NoError(t, err)
	_, err = f.Write([]byte("1"))
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err = f.Write([]byte("2"))
		require.True(t, errors.Is(err, ErrInjected))
	}
	require.NoError(t, f.Close())
}

func TestOnIndex_ConcurrentCountIsExact(t *testing.T) {
	inj := OnIndex(500).Only(OpStat)
	fs := Wrap(vfs.NewMem(), inj)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failures := 0
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 250; i++ {
				if _, err := fs.Stat("/"); err != nil {
					mu.Lock()
					failures++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 1000, inj.Count())
	require.Equal(t, 1, failures)
}

func TestToggle(t *testing.T) {
	tog := NewToggle(OpWrite, OpSync)
	fs := Wrap(vfs.NewMem(), tog)
	f, err := fs.Create("/a")
	require.NoError(t, err)
	_, err = f.Write([]byte("x"))
	require.NoError(t, err)
	tog.Enable()
	_, err = f.Write([]byte("x"))
	require.True(t, errors.Is(err, ErrInjected))
	require.True(t, errors.Is(f.Sync(), ErrInjected))
	_, err = fs.Stat("/a")
	require.NoError(t, err, "stat is not filtered in")
	tog.Disable()
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())

	all := &Toggle{}
	fs = Wrap(vfs.NewMem(), all)
	all.Enable()
	_, err = fs.Lock("/LOCK")
	require.True(t, errors.Is(err, ErrInjected))
}

func TestInjectedCloseStillCloses(t *testing.T) {
	mem := vfs.NewMem()
	fs := Wrap(mem, OnIndex(0).Only(OpClose))
	l, err := fs.Lock("/LOCK")
	require.NoError(t, err)
	require.True(t, errors.Is(l.Close(), ErrInjected))
	l2, err := mem.Lock("/LOCK")
	require.NoError(t, err, "the underlying lock was released")
	require.NoError(t, l2.Close())
}
