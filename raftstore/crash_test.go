package raftstore

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// TestStoreLogsCrashAtomic takes crash images of the file system while
// StoreLogs runs: every image holds every batch acknowledged before it was
// taken (the batch was synced) and only whole batches (it was one write).
func TestStoreLogsCrashAtomic(t *testing.T) {
	const batch, batches = 8, 60
	fs := vfs.NewMem()
	s, err := Open("/raft", &db.Options{FS: fs}, nil)
	require.NoError(t, err)
	var acked atomic.Int64
	errc := make(chan error, 1)
	go func() {
		for b := 0; b < batches; b++ {
			logs := make([]*raft.Log, batch)
			for i := range logs {
				idx := uint64(b*batch + i + 1)
				logs[i] = &raft.Log{Index: idx, Term: 1, Data: []byte(fmt.Sprint("entry", idx))}
			}
			if err := s.StoreLogs(logs); err != nil {
				errc <- err
				return
			}
			acked.Add(1)
		}
		errc <- nil
	}()

	check := func(img *vfs.MemFS, mustHave int64) {
		c, err := Open("/raft", &db.Options{FS: img}, nil)
		require.NoError(t, err)
		defer c.Close()
		first, _ := c.FirstIndex()
		last, _ := c.LastIndex()
		require.Zero(t, last%batch, "a crash image holds part of a batch: last index %d", last)
		require.GreaterOrEqual(t, last, uint64(mustHave*batch), "an acknowledged batch was lost")
		if last > 0 {
			require.Equal(t, uint64(1), first)
		}
		var l raft.Log
		for i := uint64(1); i <= last; i++ {
			require.NoError(t, c.GetLog(i, &l), "entry %d", i)
			require.Equal(t, fmt.Sprint("entry", i), string(l.Data))
		}
	}
	for done := false; !done; {
		select {
		case err := <-errc:
			require.NoError(t, err)
			done = true
		default:
		}
		n := acked.Load()
		check(fs.CrashClone(), n)
	}
	require.NoError(t, s.Close())
	check(fs.CrashClone(), batches)
}
