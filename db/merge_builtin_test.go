package db

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/stratadb/strata/internal/vfs"

	"github.com/stretchr/testify/require"
)

func TestMergeBuiltins(t *testing.T) {
	u := func(n uint64) []byte { return binary.LittleEndian.AppendUint64(nil, n) }
	full := func(op MergeOperator, existing []byte, ops ...string) string {
		var b [][]byte
		for _, o := range ops {
			b = append(b, []byte(o))
		}
		v, err := op.FullMerge([]byte("k"), existing, b)
		require.NoError(t, err)
		return string(v)
	}
	add := MergeOperatorByName("uint64add")
	require.Equal(t, UInt64AddOperatorName, add.Name())
	require.Equal(t, string(u(6)), full(add, u(1), string(u(2)), string(u(3))))
	require.Equal(t, string(u(5)), full(add, nil, string(u(2)), string(u(3))))
	// A value of another length counts as 0, as in RocksDB.
	require.Equal(t, string(u(3)), full(add, []byte("bad"), "xyz", string(u(3))))
	v, ok := add.PartialMerge([]byte("k"), [][]byte{u(1<<64 - 1), u(2)})
	require.True(t, ok)
	require.Equal(t, u(1), v, "wraps around")

	sa := MergeOperatorByName("{id=StringAppendOperator;delimiter=\\:;}")
	require.Equal(t, StringAppendOperatorName, sa.Name())
	require.Equal(t, "a:b:c", full(sa, []byte("a"), "b", "c"))
	require.Equal(t, "b:c", full(sa, nil, "b", "c"))
	require.Equal(t, ":b", full(sa, []byte{}, "b"), "an empty value is a value")
	v, ok = sa.PartialMerge(nil, [][]byte{[]byte("x"), []byte("y")})
	require.True(t, ok)
	require.Equal(t, "x:y", string(v))
	require.Equal(t, `{id=StringAppendOperator;delimiter=\:;}`, optionsMergeOperatorValue(sa))
	require.Equal(t, "{id=StringAppendOperator;delimiter=,;}", optionsMergeOperatorValue(MergeOperatorByName("stringappend")))
	require.Equal(t, StringAppendTESTOperatorName, MergeOperatorByName("stringappendtest").Name())

	mx := MergeOperatorByName("max")
	require.Equal(t, MaxOperatorName, mx.Name())
	require.Equal(t, "b", full(mx, []byte("a"), "b", "ab"))
	require.Equal(t, "z", full(mx, []byte("z"), "b"))
	require.Equal(t, "", full(mx, nil, ""))

	put := MergeOperatorByName("PutOperator")
	require.Equal(t, PutOperatorName, put.Name())
	require.Equal(t, "c", full(put, []byte("a"), "b", "c"))

	require.Nil(t, MergeOperatorByName("nullptr"))
	require.Nil(t, MergeOperatorByName(""))
	require.Nil(t, MergeOperatorByName("NoSuchOperator"))

	require.Equal(t, "", mergeOperatorReport("[CF]", "nullptr", nil))
	require.Equal(t, "", mergeOperatorReport("[CF]", "UInt64AddOperator", add))
	require.Equal(t, "", mergeOperatorReport("[CF]", "{id=StringAppendOperator;delimiter=\\:;}", sa))
	require.Contains(t, mergeOperatorReport("[CF]", "{id=StringAppendOperator;delimiter=,;}", sa), "Strata uses")
	require.Contains(t, mergeOperatorReport("[CF]", "MaxOperator", nil), "no Options.MergeOperator")
}

// An empty value under operands is a value, not an absent key, in every
// read path and in compaction.
func TestMergeOnEmptyValue(t *testing.T) {
	d := openMergeTestDB(t)
	require.NoError(t, d.Put([]byte("k"), nil, nil))
	require.NoError(t, d.Merge([]byte("k"), []byte("a"), nil))
	check := func() {
		v, err := d.Get([]byte("k"), nil)
		require.NoError(t, err)
		require.Equal(t, ",a", string(v))
		it := d.NewIterator(nil)
		it.SeekToLast()
		require.True(t, it.Valid())
		require.Equal(t, ",a", string(it.Value()))
		it.SeekToFirst()
		require.True(t, it.Valid())
		require.Equal(t, ",a", string(it.Value()))
		require.NoError(t, it.Close())
	}
	check()
	require.NoError(t, d.CompactRange(nil, nil))
	check()
}

// Concurrent merges of one counter, with flushes, compactions and readers
// running alongside, lose no operand.
func TestMergeConcurrentCounters(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/db", 0o755))
	d, err := Open("/db", &Options{CreateIfMissing: true, FS: fs, WriteBufferSize: 4 << 10,
		Level0FileNumCompactionTrigger: 2, MergeOperator: NewUInt64AddOperator()})
	require.NoError(t, err)
	defer d.Close()
	const writers, perWriter = 4, 300
	one := binary.LittleEndian.AppendUint64(nil, 1)
	errs := make(chan error, writers+1)
	done := make(chan struct{})
	for w := 0; w < writers; w++ {
		go func(w int) {
			for i := 0; i < perWriter; i++ {
				if err := d.Merge([]byte("counter"), one, nil); err != nil {
					errs <- err
					return
				}
				if err := d.Merge([]byte(fmt.Sprintf("w%d", w)), one, nil); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}(w)
	}
	go func() {
		// A reader: the counter never decreases.
		var last uint64
		for {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			v, err := d.Get([]byte("counter"), nil)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				errs <- err
				return
			}
			n := binary.LittleEndian.Uint64(v)
			if n < last {
				errs <- fmt.Errorf("counter went from %d to %d", last, n)
				return
			}
			last = n
		}
	}()
	for w := 0; w < writers; w++ {
		require.NoError(t, <-errs)
	}
	close(done)
	require.NoError(t, <-errs)
	require.NoError(t, d.CompactRange(nil, nil))
	v, err := d.Get([]byte("counter"), nil)
	require.NoError(t, err)
	require.Equal(t, uint64(writers*perWriter), binary.LittleEndian.Uint64(v))
	it := d.NewIterator(nil)
	n := 0
	for it.SeekToFirst(); it.Valid(); it.Next() {
		if bytes.HasPrefix(it.Key(), []byte("w")) {
			require.Equal(t, uint64(perWriter), binary.LittleEndian.Uint64(it.Value()), "%s", it.Key())
			n++
		}
	}
	require.NoError(t, it.Close())
	require.Equal(t, writers, n)
}

// A database written with an operator that is not built in: a writable
// Open without it is refused (it would compact the operands into tables
// naming no operator); a read-only one opens, and reading operands fails
// naming the operator the OPTIONS file asked for or, with no OPTIONS file,
// the one a table names; keys without operands read normally.
func TestMergeOperandWithoutOperatorNamesIt(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/db", 0o755))
	custom := &AssociativeMergeOperator{OperatorName: "MyMaxOperator", Merge: NewMaxOperator().(*AssociativeMergeOperator).Merge}
	d, err := Open("/db", &Options{CreateIfMissing: true, FS: fs, MergeOperator: custom})
	require.NoError(t, err)
	require.NoError(t, d.Merge([]byte("m"), []byte("1"), nil))
	require.NoError(t, d.Put([]byte("p"), []byte("2"), nil))
	require.NoError(t, d.Flush())
	require.NoError(t, d.Close())

	_, err = Open("/db", &Options{FS: fs})
	require.ErrorIs(t, err, ErrInvalidArgument, "a writable Open without the database's operator")
	require.ErrorContains(t, err, "merge operator MyMaxOperator")
	check := func(want string) {
		d, err := Open("/db", &Options{FS: fs, ReadOnly: true})
		require.NoError(t, err)
		defer d.Close()
		v, err := d.Get([]byte("p"), nil)
		require.NoError(t, err)
		require.Equal(t, "2", string(v))
		_, err = d.Get([]byte("m"), nil)
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.ErrorContains(t, err, want)
		it := d.NewIterator(nil)
		it.SeekToFirst()
		require.False(t, it.Valid())
		require.ErrorContains(t, it.Err(), want)
		it.SeekToLast()
		require.True(t, it.Valid(), "p is after m")
		it.Prev()
		require.False(t, it.Valid())
		require.ErrorContains(t, it.Err(), want)
		require.NoError(t, it.Close())
	}
	check("merge operator MyMaxOperator (named by the OPTIONS file)")
	names, err := fs.List("/db")
	require.NoError(t, err)
	for _, n := range names {
		if len(n) > 8 && n[:8] == "OPTIONS-" {
			require.NoError(t, fs.Remove("/db/"+n))
		}
	}
	check("merge operator MyMaxOperator (named by table 0000")
}

// A database written with a built-in operator, opened without one, takes
// the built-in the OPTIONS file names (read-only or not): operands read
// merged, a compaction resolves them as the operator does, and the OPTIONS
// file keeps naming it.
func TestMergeOperatorTakenFromOptionsFile(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/db", 0o755))
	d, err := Open("/db", &Options{CreateIfMissing: true, FS: fs, MergeOperator: NewStringAppendOperator("+")})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("k"), []byte("a"), nil))
	require.NoError(t, d.Flush())
	require.NoError(t, d.Merge([]byte("k"), []byte("b"), nil))
	require.NoError(t, d.Flush())
	require.NoError(t, d.Close())

	for _, ro := range []bool{true, false} {
		d, err = Open("/db", &Options{FS: fs, ReadOnly: ro})
		require.NoError(t, err, "read-only %v", ro)
		v, err := d.Get([]byte("k"), nil)
		require.NoError(t, err)
		require.Equal(t, "a+b", string(v))
		require.Contains(t, d.optionsFileReport(), "using the built-in {id=StringAppendOperator;delimiter=+;}")
		if !ro {
			require.NoError(t, d.Merge([]byte("k"), []byte("c"), nil))
			require.NoError(t, d.CompactRange(nil, nil))
		}
		require.NoError(t, d.Close())
	}
	d, err = Open("/db", &Options{FS: fs, ReadOnly: true, MergeOperator: NewStringAppendOperator("+")})
	require.NoError(t, err)
	v, err := d.Get([]byte("k"), nil)
	require.NoError(t, err)
	require.Equal(t, "a+b+c", string(v))
	require.NotContains(t, d.optionsFileReport(), "merge_operator", "the OPTIONS file still names the operator")
	require.NoError(t, d.Close())
}
