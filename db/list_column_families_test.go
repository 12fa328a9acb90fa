package db_test

import (
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

func TestListColumnFamiliesOpenAndClosed(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	_, err = d.CreateColumnFamily("b", nil)
	require.NoError(t, err)
	a, err := d.CreateColumnFamily("a", nil)
	require.NoError(t, err)
	_, err = d.CreateColumnFamily("c", nil)
	require.NoError(t, err)
	require.NoError(t, d.DropColumnFamily(a))
	// While open: the MANIFEST is read, not written.
	names, err := db.ListColumnFamilies(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"default", "b", "c"}, names)
	require.NoError(t, d.Close())
	names, err = db.ListColumnFamilies(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"default", "b", "c"}, names)

	_, err = db.ListColumnFamilies(t.TempDir())
	require.Error(t, err)
}
