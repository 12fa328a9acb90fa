package db_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

// TestColumnFamilyEventInfos: every info of a family's job names the
// family, as RocksDB's cf_name does: flushes, compactions, the tables they
// create and ingestions, each in the family that ran it.
func TestColumnFamilyEventInfos(t *testing.T) {
	var ev eventLog
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, DisableAutoCompactions: true,
		EventListener: ev.listener(nil), CreateMissingColumnFamilies: true,
		ColumnFamilies: map[string]*db.ColumnFamilyOptions{"a": {}, "b": {}}})
	require.NoError(t, err)
	a, b := d.ColumnFamily("a"), d.ColumnFamily("b")
	require.NoError(t, a.Put([]byte("ka"), []byte("v"), nil))
	require.NoError(t, a.Flush())
	for i := range 2 {
		require.NoError(t, b.Put(fmt.Appendf(nil, "kb%d", i), []byte("v"), nil))
		require.NoError(t, b.Flush())
	}
	require.NoError(t, b.CompactRange(nil, nil))
	require.NoError(t, d.Put([]byte("kd"), []byte("v"), nil))
	require.NoError(t, d.Flush())

	ext := filepath.Join(t.TempDir(), "ext.sst")
	f, err := vfs.Default.Create(ext)
	require.NoError(t, err)
	w := table.NewExternalWriter(f, table.ExternalWriterOptions{})
	require.NoError(t, w.Put([]byte("ki"), []byte("v")))
	_, err = w.Finish()
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, a.Ingest([]string{ext}, nil))
	require.NoError(t, d.Close())

	ev.mu.Lock()
	defer ev.mu.Unlock()
	var flushes []string
	for _, fi := range ev.flushes {
		if len(fi.Output) > 0 {
			flushes = append(flushes, fi.ColumnFamilyName)
		}
	}
	require.Equal(t, []string{"a", "b", "b", "default"}, flushes)
	require.Len(t, ev.compactions, 1)
	require.Equal(t, "b", ev.compactions[0].ColumnFamilyName)
	require.NotEmpty(t, ev.compactions[0].Output)
	var created []string
	for _, ci := range ev.created {
		created = append(created, ci.Reason+" "+ci.ColumnFamilyName)
	}
	want := []string{"flush a", "flush b", "flush b"}
	for range ev.compactions[0].Output {
		want = append(want, "compaction b")
	}
	want = append(want, "flush default")
	require.Equal(t, want, created)
	require.Len(t, ev.ingests, 1)
	require.Equal(t, "a", ev.ingests[0].ColumnFamilyName)
}

// TestColumnFamilyWriteStallInfo: a write stalled on a family's full
// memtables reports that family.
func TestColumnFamilyWriteStallInfo(t *testing.T) {
	fs := &blockingFS{FS: vfs.Default, blocked: make(chan struct{}), release: make(chan struct{})}
	stalled := make(chan db.WriteStallBeginInfo, 1)
	ended := make(chan struct{}, 1)
	l := &db.EventListener{
		WriteStallBegin: func(i db.WriteStallBeginInfo) { stalled <- i },
		WriteStallEnd:   func() { ended <- struct{}{} },
	}
	d, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true, EventListener: l, FS: fs,
		CreateMissingColumnFamilies: true,
		ColumnFamilies:              map[string]*db.ColumnFamilyOptions{"a": {WriteBufferSize: 64 << 10}}})
	require.NoError(t, err)
	a := d.ColumnFamily("a")
	fs.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		val := make([]byte, 1000)
		for i := 0; i < 200; i++ {
			if err := a.Put(fmt.Appendf(nil, "k%05d", i), val, nil); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	<-fs.blocked // a's first flush waits
	info := <-stalled
	require.Equal(t, "a", info.ColumnFamilyName)
	require.Equal(t, "memtables full", info.Reason)
	close(fs.release)
	<-ended
	require.NoError(t, <-done)
	require.NoError(t, d.Close())
}
