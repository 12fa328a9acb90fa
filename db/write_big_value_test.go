package db_test

import (
	"bytes"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// TestHighlyCompressibleValueRoundTrip puts a 16 MiB value of zeros (one
// data block that zstd shrinks thousands of times), flushes, reopens, and
// reads it back with Get and a scan, under every compression.
func TestHighlyCompressibleValueRoundTrip(t *testing.T) {
	for _, c := range []db.Compression{db.NoCompression, db.SnappyCompression, db.ZstdCompression} {
		t.Run(map[db.Compression]string{db.NoCompression: "none", db.SnappyCompression: "snappy", db.ZstdCompression: "zstd"}[c], func(t *testing.T) {
			opts := &db.Options{Compression: c, WriteBufferSize: 64 << 20}
			d, dir := openTest(t, opts)
			big := make([]byte, 16<<20)
			require.NoError(t, d.Put([]byte("a"), []byte("first"), nil))
			require.NoError(t, d.Put([]byte("big"), big, nil))
			require.NoError(t, d.Put([]byte("c"), []byte("last"), nil))
			require.NoError(t, d.Flush())
			check := func(d *db.DB) {
				t.Helper()
				v, err := d.Get([]byte("big"), nil)
				require.NoError(t, err)
				require.True(t, bytes.Equal(big, v), "Get big: %d bytes", len(v))
				it := d.NewIterator(nil)
				var keys []string
				for it.SeekToFirst(); it.Valid(); it.Next() {
					keys = append(keys, string(it.Key()))
					if string(it.Key()) == "big" {
						require.True(t, bytes.Equal(big, it.Value()))
					}
				}
				require.NoError(t, it.Err())
				require.NoError(t, it.Close())
				require.Equal(t, []string{"a", "big", "c"}, keys)
			}
			check(d)
			require.NoError(t, d.Close())
			opts.CreateIfMissing = true
			d, err := db.Open(dir, opts)
			require.NoError(t, err)
			check(d)
			require.NoError(t, d.Close())
		})
	}
}
