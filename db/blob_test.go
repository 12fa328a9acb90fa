package db

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// blobTestOptions turns blob files on with a small min_blob_size and small
// blob files, so a few hundred keys make several.
func blobTestOptions(c Compression) *Options {
	return &Options{CreateIfMissing: true, EnableBlobFiles: true, MinBlobSize: 200, BlobFileSize: 16 << 10,
		BlobCompressionType: c, DisableAutoCompactions: true}
}

func blobTestValue(rng *rand.Rand, i, round int) []byte {
	n := 20 + rng.Intn(600)
	return []byte(strings.Repeat(fmt.Sprintf("v%d.%d-", i, round), n)[:n])
}

// blobFileNums lists the blob files in dir.
func blobFileNums(t *testing.T, dir string) []uint64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var nums []uint64
	for _, e := range ents {
		if kind, num, ok := base.ParseFilename(e.Name()); ok && kind == base.FileKindBlob {
			nums = append(nums, num)
		}
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	return nums
}

// versionBlobNums lists the blob files of the default family's version.
func versionBlobNums(d *DB) []uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var nums []uint64
	for _, b := range d.mu.versions.Current().BlobFiles {
		nums = append(nums, b.FileNum)
	}
	return nums
}

func blobCheckAll(t *testing.T, d *DB, want map[string][]byte) {
	t.Helper()
	for k, v := range want {
		got, err := d.Get([]byte(k), nil)
		require.NoError(t, err, "key %s", k)
		require.Equal(t, v, got, "key %s", k)
	}
	it := d.NewIterator(nil)
	n := 0
	for it.SeekToFirst(); it.Valid(); it.Next() {
		require.Equal(t, want[string(it.Key())], it.Value(), "key %s", it.Key())
		n++
	}
	require.NoError(t, it.Err())
	require.Equal(t, len(want), n)
	for it.SeekToLast(); it.Valid(); it.Prev() {
		require.Equal(t, want[string(it.Key())], it.Value(), "reverse %s", it.Key())
		n--
	}
	require.NoError(t, it.Err())
	require.Equal(t, 0, n)
	require.NoError(t, it.Close())
}

// TestBlobFilesWriteReadCompact writes values above and below min_blob_size,
// flushes them into blob files, overwrites and deletes some, compacts, and
// checks every read, that exactly the version's blob files are on disk, and
// that RocksDB's ldb reads the directory the same.
func TestBlobFilesWriteReadCompact(t *testing.T) {
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		t.Run(c.String(), func(t *testing.T) {
			dir := t.TempDir()
			d, err := Open(dir, blobTestOptions(c))
			require.NoError(t, err)
			rng := rand.New(rand.NewSource(1))
			want := make(map[string][]byte)
			for round := 0; round < 3; round++ {
				for i := 0; i < 300; i++ {
					if round > 0 && rng.Intn(3) == 0 {
						continue
					}
					k := fmt.Sprintf("key%05d", i)
					if round == 2 && rng.Intn(5) == 0 {
						require.NoError(t, d.Delete([]byte(k), nil))
						delete(want, k)
						continue
					}
					v := blobTestValue(rng, i, round)
					require.NoError(t, d.Put([]byte(k), v, nil))
					want[k] = v
				}
				require.NoError(t, d.Flush())
				blobCheckAll(t, d, want)
			}
			require.NotEmpty(t, blobFileNums(t, dir))
			require.Equal(t, blobFileNums(t, dir), versionBlobNums(d))
			before := len(versionBlobNums(d))
			require.NoError(t, d.CompactRange(nil, nil))
			blobCheckAll(t, d, want)
			// The compaction dropped the overwritten and deleted blobs'
			// references: files left with garbage only left the version
			// (and the disk once no older version lists them; at the
			// latest, the next Open's sweep).
			if c == NoCompression { // compressed, the values fit in 3 files that all keep live ones
				require.Less(t, len(versionBlobNums(d)), before)
			}
			require.NoError(t, d.Close())

			d, err = Open(dir, blobTestOptions(c))
			require.NoError(t, err)
			require.Equal(t, blobFileNums(t, dir), versionBlobNums(d))
			blobCheckAll(t, d, want)
			require.NoError(t, d.Close())

			keys := make([]string, 0, len(want))
			digests := make(map[string]string, len(want))
			for k, v := range want {
				keys = append(keys, k)
				digests[k] = blobDigest(v)
			}
			sort.Strings(keys)
			blobCompatCheckLDB(t, dir, keys, digests)
		})
	}
}

// TestBlobFilesDeletedWhenUnreferenced overwrites every key: after a full
// compaction no table refers to the first flush's blob files, which must
// be deleted.
func TestBlobFilesDeletedWhenUnreferenced(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, blobTestOptions(NoCompression))
	require.NoError(t, err)
	defer d.Close()
	big := []byte(strings.Repeat("x", 1000))
	for i := 0; i < 50; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("k%03d", i)), big, nil))
	}
	require.NoError(t, d.Flush())
	first := blobFileNums(t, dir)
	require.NotEmpty(t, first)
	for i := 0; i < 50; i++ {
		require.NoError(t, d.Put([]byte(fmt.Sprintf("k%03d", i)), []byte("small"), nil))
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.CompactRange(nil, nil))
	require.Empty(t, versionBlobNums(d))
	// The files go at the next flush or compaction once no older version
	// lists them (the compaction's own held its inputs' version).
	require.NoError(t, d.Put([]byte("k000"), []byte("small"), nil))
	require.NoError(t, d.Flush())
	require.Empty(t, blobFileNums(t, dir))
	v, err := d.Get([]byte("k007"), nil)
	require.NoError(t, err)
	require.Equal(t, "small", string(v))
}

// TestBlobFileCorruption damages a blob file: reads fail with ErrCorruption
// naming the file and an offset, never with wrong data.
func TestBlobFileCorruption(t *testing.T) {
	dir := t.TempDir()
	o := blobTestOptions(NoCompression)
	o.BlockCacheSize = 1 // nothing stays cached
	d, err := Open(dir, o)
	require.NoError(t, err)
	v := []byte(strings.Repeat("y", 500))
	require.NoError(t, d.Put([]byte("a"), v, nil))
	require.NoError(t, d.Flush())
	require.NoError(t, d.Close())
	nums := blobFileNums(t, dir)
	require.Len(t, nums, 1)
	name := filepath.Join(dir, base.MakeFilename(base.FileKindBlob, nums[0]))
	orig, err := os.ReadFile(name)
	require.NoError(t, err)
	for _, off := range []int{0, 4, 13, 30, 40, 60, 65, 300, len(orig) - 40, len(orig) - 20} {
		bad := append([]byte(nil), orig...)
		bad[off] ^= 0x10
		require.NoError(t, os.WriteFile(name, bad, 0o644))
		d, err := Open(dir, o)
		require.NoError(t, err)
		got, err := d.Get([]byte("a"), nil)
		require.Nil(t, got)
		{
			require.True(t, errors.Is(err, ErrCorruption), "offset %d: %v", off, err)
			require.Contains(t, err.Error(), base.MakeFilename(base.FileKindBlob, nums[0]))
			require.Contains(t, err.Error(), "offset")
			it := d.NewIterator(nil)
			it.SeekToFirst()
			require.False(t, it.Valid())
			require.True(t, errors.Is(it.Err(), ErrCorruption), "offset %d: %v", off, it.Err())
			require.NoError(t, it.Close())
		}
		require.NoError(t, d.Close())
	}
	require.NoError(t, os.WriteFile(name, orig[:20], 0o644))
	d, err = Open(dir, o)
	require.NoError(t, err)
	_, err = d.Get([]byte("a"), nil)
	require.True(t, errors.Is(err, ErrCorruption), "%v", err)
	require.NoError(t, d.Close())
}

// TestBlobOptionsSetOptions turns blob files off and on at run time and
// checks the OPTIONS file follows under RocksDB's names.
func TestBlobOptionsSetOptions(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, blobTestOptions(NoCompression))
	require.NoError(t, err)
	defer d.Close()
	big := []byte(strings.Repeat("z", 400))
	require.NoError(t, d.SetOptions(map[string]string{"enable_blob_files": "false"}))
	require.NoError(t, d.Put([]byte("a"), big, nil))
	require.NoError(t, d.Flush())
	require.Empty(t, blobFileNums(t, dir))
	require.NoError(t, d.SetOptions(map[string]string{"enable_blob_files": "true", "min_blob_size": "300",
		"blob_compression_type": "kSnappyCompression", "blob_garbage_collection_age_cutoff": "0.5"}))
	require.NoError(t, d.Put([]byte("b"), big, nil))
	require.NoError(t, d.Put([]byte("c"), big[:299], nil))
	require.NoError(t, d.Flush())
	require.Len(t, blobFileNums(t, dir), 1)
	for _, k := range []string{"a", "b"} {
		v, err := d.Get([]byte(k), nil)
		require.NoError(t, err)
		require.Equal(t, big, v)
	}
	opts := readLatestOptionsFile(t, dir)
	for _, kv := range []string{"enable_blob_files=true", "min_blob_size=300", "blob_file_size=16384",
		"blob_compression_type=kSnappyCompression", "enable_blob_garbage_collection=false",
		"blob_garbage_collection_age_cutoff=0.500000", "blob_garbage_collection_force_threshold=1.000000"} {
		require.Contains(t, opts, "  "+kv+"\n")
	}
	for _, bad := range []map[string]string{
		{"min_blob_size": "-1"}, {"blob_compression_type": "kLZ4Compression"},
		{"blob_garbage_collection_age_cutoff": "1.5"}, {"blob_file_size": "0"},
	} {
		require.True(t, errors.Is(d.SetOptions(bad), ErrInvalidArgument), "%v", bad)
	}
}

func readLatestOptionsFile(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var last string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "OPTIONS-") && !strings.HasSuffix(e.Name(), ".dbtmp") && e.Name() > last {
			last = e.Name()
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, last))
	require.NoError(t, err)
	return string(b)
}

// TestBlobGarbageCollection: with garbage collection on and age cutoff
// 1.0, a full compaction moves every blob to new files and the old ones
// go; with blob files then off, the next one moves the values back into
// the tables. Cutoff 0.5 moves only the older half's blobs.
func TestBlobGarbageCollection(t *testing.T) {
	dir := t.TempDir()
	o := blobTestOptions(NoCompression)
	o.EnableBlobGarbageCollection = true
	o.BlobGarbageCollectionAgeCutoff = 0.5
	d, err := Open(dir, o)
	require.NoError(t, err)
	rng := rand.New(rand.NewSource(2))
	want := make(map[string][]byte)
	for round := 0; round < 4; round++ {
		for i := 0; i < 40; i++ {
			k := fmt.Sprintf("r%dk%03d", round, i)
			v := blobTestValue(rng, i, round)
			if len(v) < 200 {
				v = append(v, make([]byte, 200)...)
			}
			require.NoError(t, d.Put([]byte(k), v, nil))
			want[k] = v
		}
		require.NoError(t, d.Flush())
	}
	old := versionBlobNums(d)
	require.Greater(t, len(old), 3)
	require.NoError(t, d.CompactRange(nil, nil))
	blobCheckAll(t, d, want)
	now := versionBlobNums(d)
	half := old[len(old)/2]
	for _, n := range now {
		require.False(t, n < half, "blob file %d, under the cutoff %d, should have been collected (now %v, was %v)", n, half, now, old)
	}
	require.Contains(t, now, old[len(old)-1], "files above the cutoff stay")

	// A flush spanning every key makes the next full compaction rewrite
	// the bottom level (a manual compaction leaves a lone bottommost
	// level as it is).
	span := func() {
		for _, k := range []string{"a", "zz"} {
			require.NoError(t, d.Put([]byte(k), []byte(k), nil))
			want[k] = []byte(k)
		}
		require.NoError(t, d.Flush())
	}
	require.NoError(t, d.SetOptions(map[string]string{"blob_garbage_collection_age_cutoff": "1.0"}))
	span()
	require.NoError(t, d.CompactRange(nil, nil))
	blobCheckAll(t, d, want)
	for _, n := range versionBlobNums(d) {
		require.Greater(t, n, now[len(now)-1], "cutoff 1.0 moves every blob")
	}

	require.NoError(t, d.SetOptions(map[string]string{"enable_blob_files": "false"}))
	span()
	require.NoError(t, d.CompactRange(nil, nil))
	blobCheckAll(t, d, want)
	require.Empty(t, versionBlobNums(d))
	require.NoError(t, d.Close())
	d, err = Open(dir, o)
	require.NoError(t, err)
	require.Empty(t, blobFileNums(t, dir))
	blobCheckAll(t, d, want)
	require.NoError(t, d.Close())
	blobCompatCheckLDBMap(t, dir, want)
}

// blobCompatCheckLDBMap is blobCompatCheckLDB for a map of values.
func blobCompatCheckLDBMap(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	keys := make([]string, 0, len(want))
	digests := make(map[string]string, len(want))
	for k, v := range want {
		keys = append(keys, k)
		digests[k] = blobDigest(v)
	}
	sort.Strings(keys)
	blobCompatCheckLDB(t, dir, keys, digests)
}

// TestBlobForceGC: with a force threshold below the garbage ratio of the
// oldest blob files, automatic compactions rewrite the tables naming the
// oldest file until its blobs are relocated and the file is gone.
func TestBlobForceGC(t *testing.T) {
	dir := t.TempDir()
	o := blobTestOptions(NoCompression)
	o.DisableAutoCompactions = true
	o.EnableBlobGarbageCollection = true
	o.BlobGarbageCollectionAgeCutoff = 0.5
	o.BlobGarbageCollectionForceThreshold = 0.1
	d, err := Open(dir, o)
	require.NoError(t, err)
	defer d.Close()
	want := make(map[string][]byte)
	big := func(i, r int) []byte { return []byte(strings.Repeat(fmt.Sprintf("%d/%d;", i, r), 100)) }
	for r := 0; r < 4; r++ {
		for i := 0; i < 60; i++ {
			k := fmt.Sprintf("k%03d", i)
			if r > 0 && i%3 != 0 {
				continue
			}
			want[k] = big(i, r)
			require.NoError(t, d.Put([]byte(k), want[k], nil))
		}
		require.NoError(t, d.Flush())
		if r == 0 {
			require.NoError(t, d.CompactRange(nil, nil))
		}
	}
	// The overwrites reach the bottom level with a compaction that drops
	// their old blobs' references, without collecting (cutoff tiny).
	require.NoError(t, d.SetOptions(map[string]string{"blob_garbage_collection_age_cutoff": "0.01"}))
	require.NoError(t, d.CompactRange(nil, nil))
	first := versionBlobNums(d)[0]
	require.NoError(t, d.SetOptions(map[string]string{"blob_garbage_collection_age_cutoff": "0.5",
		"disable_auto_compactions": "false"}))
	require.NoError(t, WaitForCompactions(d))
	for _, n := range versionBlobNums(d) {
		require.NotEqual(t, first, n, "the oldest blob file %d should have been collected: %v", first, versionBlobNums(d))
	}
	blobCheckAll(t, d, want)
}

// TestBlobCheckpoint: a checkpoint holds the blob files its tables refer
// to and opens to the same values.
func TestBlobCheckpoint(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, blobTestOptions(SnappyCompression))
	require.NoError(t, err)
	defer d.Close()
	rng := rand.New(rand.NewSource(3))
	want := make(map[string][]byte)
	for i := 0; i < 100; i++ {
		k := fmt.Sprintf("c%03d", i)
		want[k] = blobTestValue(rng, i, 0)
		require.NoError(t, d.Put([]byte(k), want[k], nil))
	}
	require.NoError(t, d.Flush())
	cp := filepath.Join(t.TempDir(), "cp")
	require.NoError(t, d.Checkpoint(cp))
	require.Equal(t, versionBlobNums(d), blobFileNums(t, cp))
	c, err := Open(cp, nil)
	require.NoError(t, err)
	blobCheckAll(t, c, want)
	require.NoError(t, c.Close())
}

// TestBlobSingleDelete: a single deletion over a blob value drops with it
// in compaction, and the blob becomes garbage.
func TestBlobSingleDelete(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, blobTestOptions(NoCompression))
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Put([]byte("k"), []byte(strings.Repeat("s", 300)), nil))
	require.NoError(t, d.Put([]byte("m"), []byte("small"), nil))
	require.NoError(t, d.Flush())
	require.Len(t, versionBlobNums(d), 1)
	require.NoError(t, d.SingleDelete([]byte("k"), nil))
	require.NoError(t, d.Flush())
	require.NoError(t, d.CompactRange(nil, nil))
	_, err = d.Get([]byte("k"), nil)
	require.True(t, errors.Is(err, ErrNotFound), "%v", err)
	require.Empty(t, versionBlobNums(d))
}

// TestBlobMinSizeZero: min_blob_size 0 sends every non-empty value to a
// blob file; an empty value stays inline and reads back empty.
func TestBlobMinSizeZero(t *testing.T) {
	dir := t.TempDir()
	o := blobTestOptions(NoCompression)
	o.MinBlobSize = 0
	d, err := Open(dir, o)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Put([]byte("e"), nil, nil))
	require.NoError(t, d.Put([]byte("x"), []byte("1"), nil))
	require.NoError(t, d.Flush())
	require.Len(t, versionBlobNums(d), 1)
	v, err := d.Get([]byte("e"), nil)
	require.NoError(t, err)
	require.Empty(t, v)
	v, err = d.Get([]byte("x"), nil)
	require.NoError(t, err)
	require.Equal(t, "1", string(v))
	blobCheckAll(t, d, map[string][]byte{"e": {}, "x": []byte("1")})
}

// TestBlobSubcompactions: a compaction split into ranges writes blob files
// per range and records the garbage of all of them; values and ldb agree.
func TestBlobSubcompactions(t *testing.T) {
	dir := t.TempDir()
	o := blobTestOptions(NoCompression)
	o.MaxSubcompactions = 4
	o.TargetFileSizeBase = 32 << 10
	o.EnableBlobGarbageCollection = true
	o.BlobGarbageCollectionAgeCutoff = 1
	d, err := Open(dir, o)
	require.NoError(t, err)
	rng := rand.New(rand.NewSource(5))
	want := make(map[string][]byte)
	for round := 0; round < 4; round++ {
		for i := 0; i < 400; i++ {
			if rng.Intn(2) == 0 {
				continue
			}
			k := fmt.Sprintf("s%05d", i)
			want[k] = blobTestValue(rng, i, round)
			require.NoError(t, d.Put([]byte(k), want[k], nil))
		}
		require.NoError(t, d.Flush())
	}
	old := versionBlobNums(d)
	require.NoError(t, d.CompactRange(nil, nil))
	require.Positive(t, d.stats.subcompactions.Load(), "the compaction should have split")
	blobCheckAll(t, d, want)
	for _, n := range versionBlobNums(d) {
		require.Greater(t, n, old[len(old)-1], "cutoff 1: every blob moved to the compaction's files")
	}
	require.NoError(t, d.Close())
	d, err = Open(dir, o)
	require.NoError(t, err)
	require.Equal(t, blobFileNums(t, dir), versionBlobNums(d))
	blobCheckAll(t, d, want)
	require.NoError(t, d.Close())
	blobCompatCheckLDBMap(t, dir, want)
}
