package db_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// liveWALs returns the names and on-disk sizes of the WAL files in dir.
func liveWALs(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]int64{}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			fi, err := e.Info()
			require.NoError(t, err)
			out[e.Name()] = fi.Size()
		}
	}
	return out
}

// crashImage copies the regular files of src into a new directory, as a crash
// image of a live database: the WAL keeps whatever it holds now.
func crashImage(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		if e.Name() == "LOCK" || !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
	}
	return dst
}

// TestMappedWAL_CrashImageRecovers: a mapped WAL ends in reserved zeroes
// while the database is open. A copy of the directory taken then (what a
// SIGKILL leaves) recovers every acknowledged write in every recovery mode,
// and a clean Close trims the WAL to its records.
func TestMappedWAL_CrashImageRecovers(t *testing.T) {
	for _, syscalls := range []bool{false, true} {
		t.Run(fmt.Sprintf("syscalls=%v", syscalls), func(t *testing.T) {
			dir := t.TempDir()
			d, err := db.Open(dir, &db.Options{CreateIfMissing: true, WALWriteSyscalls: syscalls})
			require.NoError(t, err)
			const n = 3000
			for i := 0; i < n; i++ {
				require.NoError(t, d.Put([]byte(fmt.Sprintf("k%05d", i)), []byte(fmt.Sprintf("v%05d", i)), nil))
			}
			wals := liveWALs(t, dir)
			require.Len(t, wals, 1)
			var size int64
			for _, s := range wals {
				size = s
			}
			mapped := size%(1<<20) == 0 && size > 0
			if !syscalls && !mapped {
				t.Logf("WAL not mapped here (size %d): the file system has no fallocate", size)
			}
			if syscalls {
				require.False(t, mapped && size > 100*n, "WALWriteSyscalls: the WAL is not preallocated")
			}
			image := crashImage(t, dir)

			for _, mode := range []db.WALRecoveryMode{db.WALRecoveryTolerateCorruptedTail, db.WALRecoveryAbsoluteConsistency,
				db.WALRecoveryPointInTime, db.WALRecoverySkipAnyCorrupted} {
				img := crashImage(t, image)
				r, err := db.Open(img, &db.Options{WALRecoveryMode: mode})
				require.NoError(t, err, "mode %s", mode)
				for i := 0; i < n; i += 97 {
					v, err := r.Get([]byte(fmt.Sprintf("k%05d", i)), nil)
					require.NoError(t, err, "mode %s key %d", mode, i)
					require.Equal(t, fmt.Sprintf("v%05d", i), string(v))
				}
				v, err := r.Get([]byte(fmt.Sprintf("k%05d", n-1)), nil)
				require.NoError(t, err, "mode %s: the last write", mode)
				require.Equal(t, fmt.Sprintf("v%05d", n-1), string(v))
				require.NoError(t, r.Close())
			}

			require.NoError(t, d.Close())
			for name, s := range liveWALs(t, dir) {
				require.Less(t, s, int64(1<<20), "%s: Close trims the reserved tail", name)
			}
		})
	}
}
