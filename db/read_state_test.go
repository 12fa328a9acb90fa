package db_test

import (
	"sync"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// TestReadViewAndSeqConsistent forces, inside a read, between the loads of
// its read view and its sequence number, an overwrite of a key, a flush and
// a full compaction that merges the old version away. A read that paired a
// sequence number with a newer view would find only the overwrite, newer
// than its sequence number, and miss a key that existed throughout.
func TestReadViewAndSeqConsistent(t *testing.T) {
	reads := map[string]func(d *db.DB) (string, error){
		"Get": func(d *db.DB) (string, error) {
			v, err := d.Get([]byte("k"), nil)
			return string(v), err
		},
		"MultiGet": func(d *db.DB) (string, error) {
			vals, errs := d.MultiGet([][]byte{[]byte("k")}, nil)
			return string(vals[0]), errs[0]
		},
		"Iterator": func(d *db.DB) (string, error) {
			it := d.NewIterator(nil)
			defer it.Close()
			it.Seek([]byte("k"))
			if !it.Valid() || string(it.Key()) != "k" {
				return "", errorsJoin(db.ErrNotFound, it.Err())
			}
			return string(it.Value()), it.Err()
		},
	}
	for name, read := range reads {
		t.Run(name, func(t *testing.T) {
			d, _ := openTest(t, &db.Options{DisableAutoCompactions: true})
			defer d.Close()
			require.NoError(t, d.Put([]byte("k"), []byte("v1"), nil))
			require.NoError(t, d.Flush())

			var once sync.Once
			var hookErr error
			ran := false
			db.SetBetweenViewAndSeqHook(d, func() {
				// Runs on the test goroutine, inside the read.
				once.Do(func() {
					ran = true
					hookErr = d.Put([]byte("k"), []byte("v2"), nil)
					if hookErr == nil {
						hookErr = d.Flush()
					}
					if hookErr == nil {
						hookErr = d.CompactRange(nil, nil)
					}
				})
			})
			v, err := read(d)
			require.True(t, ran, "the hook did not run")
			require.NoError(t, hookErr)
			require.NoError(t, err, "a key that existed throughout was missed")
			require.Contains(t, []string{"v1", "v2"}, v)

			// The compaction did merge the old version away.
			n, ok := d.GetProperty(db.PropNumFilesAtLevelPrefix + "1")
			require.True(t, ok)
			require.Equal(t, "1", n)
			got, err := d.Get([]byte("k"), nil)
			require.NoError(t, err)
			require.Equal(t, "v2", string(got))
		})
	}
}

// errorsJoin returns err, or base when err is nil.
func errorsJoin(base, err error) error {
	if err != nil {
		return err
	}
	return base
}
