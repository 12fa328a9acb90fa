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

// TestAllowMmapReads: a database on disk read through mapped tables answers
// as one read with pread, through Get, iterators and a reopen; and a
// corrupted table block read through a mapping gives ErrCorruption.
func TestAllowMmapReads(t *testing.T) {
	dir := t.TempDir()
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }
	val := func(i int) []byte { return []byte(strings.Repeat(fmt.Sprint(i), 20)) }
	const n = 20000
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, AllowMmapReads: true, BlockCacheSize: 64 << 10})
	require.NoError(t, err)
	for i := 0; i < n; i++ {
		require.NoError(t, d.Put(key(i), val(i), nil))
		if i == n/2 {
			require.NoError(t, d.Flush())
		}
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.CompactRange(nil, nil))
	check := func(d *db.DB) {
		for i := 0; i < n; i += 7 {
			v, err := d.Get(key(i), nil)
			require.NoError(t, err)
			require.Equal(t, val(i), v)
		}
		it := d.NewIterator(nil)
		i := 0
		for it.SeekToFirst(); it.Valid(); it.Next() {
			require.Equal(t, key(i), it.Key())
			i++
		}
		require.NoError(t, it.Close())
		require.Equal(t, n, i)
	}
	check(d)
	require.NoError(t, d.Close())
	for _, mmap := range []bool{false, true} {
		d, err := db.Open(dir, &db.Options{AllowMmapReads: mmap, BlockCacheSize: 64 << 10})
		require.NoError(t, err)
		check(d)
		require.NoError(t, d.Close())
	}

	// Flip a byte in the middle of the table's data blocks.
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	var table string
	for _, e := range names {
		if strings.HasSuffix(e.Name(), ".sst") {
			table = filepath.Join(dir, e.Name())
		}
	}
	require.NotEmpty(t, table)
	data, err := os.ReadFile(table)
	require.NoError(t, err)
	data[len(data)/3] ^= 0xff
	require.NoError(t, os.WriteFile(table, data, 0o644))
	d, err = db.Open(dir, &db.Options{AllowMmapReads: true, BlockCacheSize: 64 << 10})
	require.NoError(t, err)
	it := d.NewIterator(nil)
	for it.SeekToFirst(); it.Valid(); it.Next() {
	}
	err = it.Err()
	require.ErrorIs(t, err, db.ErrCorruption)
	require.Contains(t, err.Error(), filepath.Base(table))
	require.ErrorIs(t, it.Close(), db.ErrCorruption)
	require.NoError(t, d.Close())
}
