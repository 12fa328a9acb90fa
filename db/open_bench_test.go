package db_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// makeManyFileDB lays out a database whose MANIFEST lists n table files
// (non-overlapping, spread over L1..L6) and whose directory holds them, as
// empty files: Open must not open any table, so their contents never
// matter. (Their recorded size is 0, the size Open checks them against.)
func makeManyFileDB(tb testing.TB, n int) string {
	dir := tb.TempDir()
	fs := vfs.Default
	vs, err := version.Create(fs, dir, version.Options{})
	require.NoError(tb, err)
	ve := &version.Edit{}
	for i := 0; i < n; i++ {
		num := vs.NextFileNum()
		level := 1 + i*6/n
		lo := []byte(fmt.Sprintf("key%09d", 2*i))
		hi := []byte(fmt.Sprintf("key%09d", 2*i+1))
		ve.NewFiles = append(ve.NewFiles, version.NewFileEntry{Level: level, Meta: &version.FileMetadata{
			FileNum: num, Size: 0,
			Smallest:    base.MakeInternalKey(lo, base.SeqNum(i+1), base.KindSet),
			Largest:     base.MakeInternalKey(hi, base.SeqNum(i+1), base.KindSet),
			SmallestSeq: base.SeqNum(i + 1), LargestSeq: base.SeqNum(i + 1),
		}})
		f, err := fs.Create(filepath.Join(dir, base.MakeFilename(base.FileKindTable, num)))
		require.NoError(tb, err)
		require.NoError(tb, f.Close())
	}
	ve.LastSequence, ve.HasLastSequence = base.SeqNum(n), true
	require.NoError(tb, vs.LogAndApply(ve))
	require.NoError(tb, vs.Close())
	return dir
}

// BenchmarkOpen measures Open+Close of a database with n table files. Open
// lists the directory once, parses each name once and sorts numbers; it
// opens no table file. Goal: time grows no faster than n log n.
func BenchmarkOpen(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000, 50000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			dir := makeManyFileDB(b, n)
			opts := &db.Options{DisableAutoCompactions: true}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d, err := db.Open(dir, opts)
				if err != nil {
					b.Fatal(err)
				}
				if got, _ := d.GetProperty(db.PropTablesOpened); got != "0" {
					b.Fatalf("Open opened %s table files", got)
				}
				if err := d.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestOpenManyFilesOpensNoTable checks the promise BenchmarkOpen measures.
func TestOpenManyFilesOpensNoTable(t *testing.T) {
	dir := makeManyFileDB(t, 2000)
	d, err := db.Open(dir, &db.Options{DisableAutoCompactions: true})
	require.NoError(t, err)
	got, ok := d.GetProperty(db.PropTablesOpened)
	require.True(t, ok)
	require.Equal(t, "0", got)
	n := 0
	for level := 0; level < 7; level++ {
		s, _ := d.GetProperty(fmt.Sprintf("rocksdb.num-files-at-level%d", level))
		var c int
		fmt.Sscan(s, &c)
		n += c
	}
	require.Equal(t, 2000, n)
	require.NoError(t, d.Close())
}
