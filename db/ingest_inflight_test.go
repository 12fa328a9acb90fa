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

// pauseManifestSync returns a file system that, once armed, holds the next
// sync of a MANIFEST (DB.mu is released then) until release is closed, and
// signals entered when it gets there.
func pauseManifestSync(mem *vfs.MemFS) (fs vfs.FS, armed *atomic.Bool, entered chan struct{}, release chan struct{}) {
	armed = new(atomic.Bool)
	entered = make(chan struct{}, 1)
	release = make(chan struct{})
	inj := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if op == errorfs.OpSync && strings.HasPrefix(filepath.Base(path), "MANIFEST-") && armed.CompareAndSwap(true, false) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-time.After(5 * time.Second): // a deadlock guard, not a timing
			}
		}
		return nil
	})
	return errorfs.Wrap(mem, inj), armed, entered, release
}

// TestIngestRegistersInFlight: a compaction picked while Ingest writes its
// MANIFEST edit must not plan against the version without the ingested
// table. Four L0 files hold keys a, b and x, y; the file ingested holds m
// and goes to the bottom level, where nothing overlaps it; while its edit
// is being synced, enabling automatic compactions picks L0 -> bottom over
// [a, y]. Before the fix that compaction's output overlapped the ingested
// table, its edit failed the level check and every later write failed on
// the background error.
func TestIngestRegistersInFlight(t *testing.T) {
	mem := vfs.NewMem()
	fs, armed, entered, release := pauseManifestSync(mem)
	d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true, DisableAutoCompactions: true,
		// L0 compacts into the bottom level, where the ingested file goes.
		LevelCompactionDynamicLevelBytes: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	for i := 0; i < 4; i++ {
		for _, k := range [][]string{{"a", "b"}, {"x", "y"}}[i%2] {
			require.NoError(t, d.Put([]byte(k), []byte("v"+k), nil))
		}
		require.NoError(t, d.Flush())
	}
	writeExtFile(t, mem, "/ext.sst", []extOp{{key: "m", value: "ingested"}})

	armed.Store(true)
	ingested := make(chan error, 1)
	go func() { ingested <- d.Ingest([]string{"/ext.sst"}, nil) }()
	<-entered // Ingest is inside its MANIFEST edit, DB.mu released
	setErr := d.SetOptions(map[string]string{"disable_auto_compactions": "false"})
	close(release)
	require.NoError(t, setErr)
	require.NoError(t, <-ingested)

	require.NoError(t, d.CompactRange(nil, nil))
	require.NoError(t, d.Put([]byte("after"), []byte("1"), nil), "writes fail after the ingestion")
	for k, want := range map[string]string{"a": "va", "b": "vb", "m": "ingested", "x": "vx", "y": "vy"} {
		v, err := d.Get([]byte(k), nil)
		require.NoError(t, err, k)
		require.Equal(t, want, string(v), k)
	}
}

// TestIngestRegistersWithClose: Close waits for an Ingest under way, which
// then fails with ErrClosed, so that once Close returns nothing touches the
// directory. Before the fix Close returned (and released the LOCK) while
// the Ingest was still to sync the directory and remove its linked file.
func TestIngestRegistersWithClose(t *testing.T) {
	mem := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: mem, CreateIfMissing: true})
	require.NoError(t, err)
	writeExtFile(t, mem, "/ext.sst", []extOp{{key: "m", value: "ingested"}})

	closeErr := make(chan error, 1)
	var closedDuringIngest bool
	db.SetIngestHooks(d, func(uint64) {
		go func() { closeErr <- d.Close() }()
		// Close must wait for this Ingest: if it returns within the guard,
		// it did not (a guard against a hang, not a timing the pass needs).
		select {
		case err := <-closeErr:
			closedDuringIngest = true
			closeErr <- err
		case <-time.After(200 * time.Millisecond):
		}
	}, nil)
	ingestErr := d.Ingest([]string{"/ext.sst"}, nil)
	require.NoError(t, <-closeErr)
	require.False(t, closedDuringIngest, "Close returned while an Ingest was running")
	require.ErrorIs(t, ingestErr, db.ErrClosed)

	// The Ingest removed the file it linked before Close returned.
	d, err = db.Open("/db", &db.Options{FS: mem})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	_, err = d.Get([]byte("m"), nil)
	require.ErrorIs(t, err, db.ErrNotFound)
}
