package db_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/internal/version"
	"github.com/stretchr/testify/require"
)

// rewriteManifest decodes every edit of a MANIFEST, lets change alter
// them, and writes them back.
func rewriteManifest(t *testing.T, name string, change func(*version.Edit)) {
	t.Helper()
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	r := record.NewReader(bytes.NewReader(data), 0, name)
	var out bytes.Buffer
	w := record.NewWriter(&out, 0)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		var e version.Edit
		require.NoError(t, e.Decode(rec))
		change(&e)
		_, err = w.WriteRecord(e.Encode(nil))
		require.NoError(t, err)
	}
	require.NoError(t, w.Flush())
	require.NoError(t, os.WriteFile(name, out.Bytes(), 0o644))
}

// TestComparatorNamed: the OPTIONS file and the MANIFEST name the bytewise
// comparator; a database whose MANIFEST or OPTIONS file names another one
// is refused at Open with ErrInvalidArgument naming both comparators.
func TestComparatorNamed(t *testing.T) {
	d, dir := openTest(t, nil)
	require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
	require.NoError(t, d.Close())
	opts := filesMatching(t, dir, "OPTIONS-*")
	require.NotEmpty(t, opts)
	data, err := os.ReadFile(opts[len(opts)-1])
	require.NoError(t, err)
	require.Contains(t, string(data), "  comparator=leveldb.BytewiseComparator\n")
	manifests := filesMatching(t, dir, "MANIFEST-*")
	require.Len(t, manifests, 1)
	named := false
	rewriteManifest(t, manifests[0], func(e *version.Edit) {
		if e.HasComparator {
			require.Equal(t, "leveldb.BytewiseComparator", e.ComparatorName)
			named = true
		}
	})
	require.True(t, named, "the MANIFEST names the comparator")

	// The MANIFEST names another comparator.
	cp := filepath.Join(t.TempDir(), "m")
	copyDir(t, dir, cp)
	rewriteManifest(t, filepath.Join(cp, filepath.Base(manifests[0])), func(e *version.Edit) {
		if e.HasComparator {
			e.ComparatorName = "rocksdb.ReverseBytewiseComparator"
		}
	})
	_, err = db.Open(cp, nil)
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.Contains(t, err.Error(), filepath.Base(manifests[0]))
	require.Contains(t, err.Error(), "rocksdb.ReverseBytewiseComparator")
	require.Contains(t, err.Error(), "leveldb.BytewiseComparator")

	// The OPTIONS file names another comparator.
	cp = filepath.Join(t.TempDir(), "o")
	copyDir(t, dir, cp)
	name := filepath.Join(cp, filepath.Base(opts[len(opts)-1]))
	bad := strings.Replace(string(data), "comparator=leveldb.BytewiseComparator", "comparator=my.Comparator", 1)
	require.NoError(t, os.WriteFile(name, []byte(bad), 0o644))
	_, err = db.Open(cp, nil)
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.Contains(t, err.Error(), "my.Comparator")
	require.Contains(t, err.Error(), "leveldb.BytewiseComparator")
	require.Contains(t, err.Error(), filepath.Base(name))
}
