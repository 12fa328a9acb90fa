package db_test

import (
	"path/filepath"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// TestOpenMissingDirectory: opening a directory that does not exist, or an
// empty one, without CreateIfMissing (or read-only) is ErrInvalidArgument
// naming the directory, on disk and in memory, and does not create the
// missing directory.
func TestOpenMissingDirectory(t *testing.T) {
	for _, mem := range []bool{false, true} {
		var fs vfs.FS
		root := t.TempDir()
		if mem {
			m := vfs.NewMem()
			require.NoError(t, m.MkdirAll("/root", 0o755))
			fs, root = m, "/root"
		}
		missing := filepath.Join(root, "missing")
		empty := filepath.Join(root, "empty")
		if fs == nil {
			fs = vfs.Default
		}
		require.NoError(t, fs.MkdirAll(empty, 0o755))
		cases := []struct {
			name string
			dir  string
			opts db.Options
		}{
			{"missing", missing, db.Options{}},
			{"missing/read-only", missing, db.Options{ReadOnly: true}},
			{"missing/read-only+create", missing, db.Options{ReadOnly: true, CreateIfMissing: true}},
			{"empty", empty, db.Options{}},
			{"empty/read-only", empty, db.Options{ReadOnly: true}},
		}
		for _, tc := range cases {
			o := tc.opts
			o.FS = fs
			d, err := db.Open(tc.dir, &o)
			require.Nil(t, d, "mem=%v %s", mem, tc.name)
			require.True(t, errors.Is(err, db.ErrInvalidArgument), "mem=%v %s: %v", mem, tc.name, err)
			require.Contains(t, err.Error(), tc.dir, "mem=%v %s", mem, tc.name)
		}
		_, err := fs.Stat(missing)
		require.Error(t, err, "mem=%v: the failed Opens created %s", mem, missing)
	}
}
