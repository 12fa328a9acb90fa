package version

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/vfs/errorfs"
)

// After SetMutex, LogAndApply releases the mutex while it syncs the
// MANIFEST (the injector finds it free), and edits from several goroutines
// are still applied one at a time: every file is installed, the MANIFEST
// (rotated many times) replays to the same Version, and no file number is
// handed out twice.
func TestLogAndApply_ReleasesMutex(t *testing.T) {
	var mu sync.Mutex
	var freeDuringSync atomic.Int64
	fs := errorfs.Wrap(newMemFS(t), errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if op == errorfs.OpSync && strings.HasPrefix(filepath.Base(path), "MANIFEST-") && mu.TryLock() {
			freeDuringSync.Add(1)
			mu.Unlock()
		}
		return nil
	}))
	vs, err := Create(fs, dir, Options{MaxManifestFileSize: 1 << 10})
	require.NoError(t, err)
	mu.Lock()
	vs.SetMutex(&mu)
	mu.Unlock()

	const goroutines, edits = 4, 25
	nums := make(chan uint64, goroutines*edits)
	errs := make(chan error, goroutines*edits)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < edits; i++ {
				mu.Lock()
				num := vs.NextFileNum()
				k := fmt.Sprintf("k%06d", num)
				e := &Edit{NewFiles: []NewFileEntry{{Level: 6, Meta: meta(num, k, k, 0)}}}
				errs <- vs.LogAndApply(e)
				mu.Unlock()
				nums <- num
			}
		}()
	}
	wg.Wait()
	close(errs)
	close(nums)
	for err := range errs {
		require.NoError(t, err)
	}
	seen := map[uint64]bool{}
	for n := range nums {
		require.False(t, seen[n], "file number %d handed out twice", n)
		seen[n] = true
	}
	require.Positive(t, freeDuringSync.Load(), "the mutex was held during every MANIFEST sync")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, vs.Current().Levels[6], goroutines*edits)
	want := dumpVersion(vs.Current())
	require.NoError(t, vs.Close())
	vs2, err := Load(fs, dir, Options{})
	require.NoError(t, err)
	defer vs2.Close()
	require.Equal(t, want, dumpVersion(vs2.Current()))
}
