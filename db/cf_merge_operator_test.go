package db_test

import (
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// concatOp concatenates a value and its operands.
type concatOp struct{}

func (concatOp) Name() string { return "concat" }
func (concatOp) FullMerge(key, existing []byte, operands [][]byte) ([]byte, error) {
	out := append([]byte(nil), existing...)
	for _, o := range operands {
		out = append(out, o...)
	}
	return out, nil
}
func (concatOp) PartialMerge(key []byte, operands [][]byte) ([]byte, bool) { return nil, false }

// TestColumnFamilyOwnMergeOperator: a family's ColumnFamilyOptions
// MergeOperator resolves its merges, whatever the default family has.
func TestColumnFamilyOwnMergeOperator(t *testing.T) {
	d, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true, CreateMissingColumnFamilies: true,
		ColumnFamilies: map[string]*db.ColumnFamilyOptions{"cf1": {MergeOperator: concatOp{}}}})
	require.NoError(t, err)
	defer d.Close()
	cf := d.ColumnFamily("cf1")
	require.NoError(t, cf.Put([]byte("k"), []byte("a"), nil))
	require.NoError(t, cf.Merge([]byte("k"), []byte("b"), nil))
	v, err := cf.Get([]byte("k"), nil)
	require.NoError(t, err)
	require.Equal(t, "ab", string(v))
	require.NoError(t, cf.Flush())
	v, err = cf.Get([]byte("k"), nil)
	require.NoError(t, err)
	require.Equal(t, "ab", string(v))
}
