package db_test

// The helpers the db_test tests share: open a database, scan it. Tests that
// need a particular shape of database (many tables, a prefix matrix, seek
// compactions) keep their own opener beside them.

import (
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// openTest opens a fresh database in a temporary directory.
func openTest(t *testing.T, opts *db.Options) (*db.DB, string) {
	t.Helper()
	dir := t.TempDir()
	o := db.Options{}
	if opts != nil {
		o = *opts
	}
	o.CreateIfMissing = true
	if o.WriteBufferSize == 0 {
		o.WriteBufferSize = 1 << 20
	}
	d, err := db.Open(dir, &o)
	require.NoError(t, err)
	return d, dir
}

// scan returns every key and value at ro, in order.
func scan(t *testing.T, d *db.DB, ro *db.ReadOptions) []string {
	t.Helper()
	it := d.NewIterator(ro)
	var out []string
	for it.SeekToFirst(); it.Valid(); it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return out
}

// scanKeys returns every key at ro, in order.
func scanKeys(t *testing.T, d *db.DB, ro *db.ReadOptions) []string {
	t.Helper()
	it := d.NewIterator(ro)
	var keys []string
	for it.SeekToFirst(); it.Valid(); it.Next() {
		keys = append(keys, string(it.Key()))
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return keys
}
