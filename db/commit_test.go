package db_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// slowSyncFS's files return from Sync a while after syncing, so that other
// writers append records while a sync is in progress.
type slowSyncFS struct{ vfs.FS }

func (f slowSyncFS) Create(name string) (vfs.File, error) {
	file, err := f.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return slowSyncFile{file}, nil
}

type slowSyncFile struct{ vfs.File }

func (f slowSyncFile) Sync() error {
	err := f.File.Sync()
	time.Sleep(100 * time.Microsecond)
	return err
}

// TestPowerLossConcurrentSyncedWrites: several goroutines write with Sync,
// so that they share fsyncs, while crash images (only synced bytes) are
// taken. (Syncs return late, so records are appended during them: a write
// must not count as synced by a sync that began before its record was
// appended.) In every image, each writer's writes form a prefix of its history
// holding every write it had acknowledged before the image was taken.
func TestPowerLossConcurrentSyncedWrites(t *testing.T) {
	const writers, n = 4, 300
	fs := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: slowSyncFS{fs}, CreateIfMissing: true, WriteBufferSize: 16 << 10,
		Level0SlowdownWritesTrigger: 1 << 20, Level0StopWritesTrigger: 1 << 20})
	require.NoError(t, err)
	key := func(w, i int) []byte { return []byte(fmt.Sprintf("w%d/%05d", w, i)) }
	var acked [writers]atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		acked[w].Store(-1)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < n; i++ {
				b := db.NewBatch()
				b.Put(key(w, i), []byte(strconv.Itoa(i)))
				b.Put([]byte(fmt.Sprintf("w%d/last", w)), []byte(strconv.Itoa(i)))
				if err := d.Write(b, &db.WriteOptions{Sync: true}); err != nil {
					errs <- fmt.Errorf("writer %d, write %d: %w", w, i, err)
					return
				}
				acked[w].Store(int64(i))
			}
		}(w)
	}
	type image struct {
		fs   *vfs.MemFS
		mins [writers]int
	}
	var images []image
	for done := false; !done && len(images) < 40; {
		var im image
		done = true
		for w := range im.mins {
			im.mins[w] = int(acked[w].Load())
			done = done && im.mins[w] == n-1
		}
		im.fs = fs.CrashClone()
		images = append(images, im)
	}
	wg.Wait()
	close(errs)
	var last image
	for w := range last.mins {
		last.mins[w] = n - 1
	}
	last.fs = fs.CrashClone()
	images = append(images, last)
	require.NoError(t, <-errs)
	require.NoError(t, d.Close())
	require.Greater(t, len(images), 1)
	for i, im := range images {
		r, err := db.Open("/db", &db.Options{FS: im.fs})
		require.NoError(t, err, "image %d", i)
		for w := 0; w < writers; w++ {
			last := -1
			if v, err := r.Get([]byte(fmt.Sprintf("w%d/last", w)), nil); err == nil {
				last, _ = strconv.Atoi(string(v))
			} else {
				require.True(t, errors.Is(err, db.ErrNotFound), "%v", err)
			}
			require.GreaterOrEqual(t, last, im.mins[w], "image %d, writer %d: acknowledged writes lost", i, w)
			for j := 0; j <= last; j++ {
				v, err := r.Get(key(w, j), nil)
				require.NoError(t, err, "image %d, writer %d: write %d of 0..%d", i, w, j, last)
				require.Equal(t, strconv.Itoa(j), string(v))
			}
			_, err := r.Get(key(w, last+1), nil)
			require.True(t, errors.Is(err, db.ErrNotFound), "image %d, writer %d: write %d after last %d", i, w, last+1, last)
		}
		require.NoError(t, r.Close())
	}
}
