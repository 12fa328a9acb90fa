package db_test

import (
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/internal/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// TestPutDuringManifestSync checks that a write does not wait for a
// flush's MANIFEST fsync: the sync of the MANIFEST is held until the Put
// returns (or, if the Put cannot return, until a generous guard expires,
// and then the test fails instead of hanging).
func TestPutDuringManifestSync(t *testing.T) {
	mem := vfs.NewMem()
	var armed, guardFired atomic.Bool
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	inj := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if op == errorfs.OpSync && strings.HasPrefix(filepath.Base(path), "MANIFEST-") && armed.CompareAndSwap(true, false) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-time.After(5 * time.Second): // a deadlock guard, not a timing
				guardFired.Store(true)
			}
		}
		return nil
	})
	d, err := db.Open("/db", &db.Options{FS: errorfs.Wrap(mem, inj), CreateIfMissing: true})
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))

	armed.Store(true)
	flushed := make(chan error, 1)
	go func() { flushed <- d.Flush() }()
	<-entered // the flush is inside its MANIFEST sync

	putErr := make(chan error, 1)
	go func() { putErr <- d.Put([]byte("b"), []byte("2"), nil) }()
	require.NoError(t, <-putErr)
	close(release)
	require.False(t, guardFired.Load(), "the Put waited for the flush's MANIFEST sync")
	require.NoError(t, <-flushed)

	for k, v := range map[string]string{"a": "1", "b": "2"} {
		got, err := d.Get([]byte(k), nil)
		require.NoError(t, err)
		require.Equal(t, v, string(got))
	}
}
