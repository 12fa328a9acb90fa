package db

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratadb/strata/internal/blob"
	"github.com/stratadb/strata/internal/version"
	"github.com/stretchr/testify/require"
)

// blobFilter decides by key prefix: "drop" removes, "chgbig" upper-cases
// the value, "chgsmall" replaces it with a value under min_blob_size;
// everything else is kept. It records the values it was shown.
type blobFilter struct {
	mu   sync.Mutex
	seen map[string][]byte
}

func (*blobFilter) Name() string { return "test.BlobFilter" }

func (f *blobFilter) Filter(level int, key, value []byte) (FilterDecision, []byte) {
	f.mu.Lock()
	if f.seen == nil {
		f.seen = make(map[string][]byte)
	}
	f.seen[string(key)] = append([]byte(nil), value...)
	f.mu.Unlock()
	switch k := string(key); {
	case strings.HasPrefix(k, "drop"):
		return FilterRemove, nil
	case strings.HasPrefix(k, "chgbig"):
		return FilterChangeValue, bytes.ToUpper(value)
	case strings.HasPrefix(k, "chgsmall"):
		return FilterChangeValue, []byte("small")
	}
	return FilterKeep, nil
}

func (f *blobFilter) shown(key string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.seen[key]
	return v, ok
}

// versionBlobMeta returns the default family's version entry of blob file
// num, nil when the version does not list it.
func versionBlobMeta(d *DB, num uint64) *version.BlobFileMeta {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m := d.mu.versions.Current().BlobFile(num); m != nil {
		c := *m
		return &c
	}
	return nil
}

func bigValue(key string) []byte {
	return []byte(strings.Repeat(key+"-value;", 1000/(len(key)+7)+1)[:1000])
}

// TestBlobCompactionFilter: a CompactionFilter sees the values stored in
// blob files (not their blob indexes); a removal and a changed value make
// the old blob garbage of its file, a changed value at or above
// min_blob_size goes to a new blob file and one under it inline, and a
// value a snapshot sees is never offered. Everything reads the same after
// a reopen, and RocksDB's ldb reads the result.
func TestBlobCompactionFilter(t *testing.T) {
	dir := t.TempDir()
	f := &blobFilter{}
	o := blobTestOptions(NoCompression)
	o.BlobFileSize = 1 << 20 // one blob file per flush
	o.CompactionFilter = f
	d, err := Open(dir, o)
	require.NoError(t, err)

	want := make(map[string][]byte)
	put := func(k string) {
		want[k] = bigValue(k)
		require.NoError(t, d.Put([]byte(k), want[k], nil))
	}
	put("dropsnap")
	snap := d.NewSnapshot()
	for _, k := range []string{"chgbig1", "chgsmall1", "drop1", "drop2", "keep1", "keep2"} {
		put(k)
	}
	require.NoError(t, d.Flush())
	first := versionBlobNums(d)
	require.Len(t, first, 1)
	require.Equal(t, uint64(7), versionBlobMeta(d, first[0]).TotalCount)

	require.NoError(t, d.CompactRange(nil, nil))
	delete(want, "drop1")
	delete(want, "drop2")
	want["chgbig1"] = bytes.ToUpper(want["chgbig1"])
	want["chgsmall1"] = []byte("small")

	// The filter was shown the values themselves.
	v, ok := f.shown("keep1")
	require.True(t, ok)
	require.Equal(t, bigValue("keep1"), v)
	_, ok = f.shown("dropsnap")
	require.False(t, ok, "a value a snapshot sees must not reach the filter")
	sv, err := d.Get([]byte("dropsnap"), &ReadOptions{Snapshot: snap})
	require.NoError(t, err)
	require.Equal(t, bigValue("dropsnap"), sv)
	blobCheckAll(t, d, want)

	// Garbage: drop1, drop2, chgbig1 and chgsmall1 no longer refer to the
	// first file; chgbig1's new value is in a new one.
	m := versionBlobMeta(d, first[0])
	require.NotNil(t, m)
	require.Equal(t, uint64(4), m.GarbageCount)
	var gbytes uint64
	for _, k := range []string{"chgbig1", "chgsmall1", "drop1", "drop2"} {
		gbytes += blob.RecordOverhead(len(k)) + 1000
	}
	require.Equal(t, gbytes, m.GarbageBytes)
	nums := versionBlobNums(d)
	require.Len(t, nums, 2)
	require.Equal(t, uint64(1), versionBlobMeta(d, nums[1]).TotalCount)
	snap.Release()
	require.NoError(t, d.Close())

	d, err = Open(dir, o)
	require.NoError(t, err)
	blobCheckAll(t, d, want)
	require.Equal(t, uint64(4), versionBlobMeta(d, first[0]).GarbageCount)
	require.NoError(t, d.Close())
	blobCompatCheckLDBMap(t, dir, want)
}

// TestBlobCompactionFilterRemovesFile: once the filter removed every blob
// of a file, the file leaves the version and the disk.
func TestBlobCompactionFilterRemovesFile(t *testing.T) {
	dir := t.TempDir()
	o := blobTestOptions(NoCompression)
	o.CompactionFilter = &blobFilter{}
	d, err := Open(dir, o)
	require.NoError(t, err)
	defer d.Close()
	for i := 0; i < 40; i++ {
		k := fmt.Sprintf("drop%03d", i)
		require.NoError(t, d.Put([]byte(k), bigValue(k), nil))
	}
	require.NoError(t, d.Put([]byte("keep"), []byte("inline"), nil))
	require.NoError(t, d.Flush())
	require.NotEmpty(t, blobFileNums(t, dir))
	require.NoError(t, d.CompactRange(nil, nil))
	require.Empty(t, versionBlobNums(d))
	require.NoError(t, d.Put([]byte("keep"), []byte("inline2"), nil))
	require.NoError(t, d.Flush())
	require.Empty(t, blobFileNums(t, dir))
	blobCheckAll(t, d, map[string][]byte{"keep": []byte("inline2")})
}

// TestBlobTTL: TTL expiry applies to values in blob files: a compaction
// after the TTL drops them (even IncludeExpired reads no longer find
// them) and their file goes; live values stay, and a user filter under
// TTL changes a blob value keeping its write time.
func TestBlobTTL(t *testing.T) {
	dir := t.TempDir()
	o := blobTestOptions(NoCompression)
	o.BlobFileSize = 1 << 20
	o.TTL = 10 * time.Second
	o.CompactionFilter = &blobFilter{}
	d, err := Open(dir, o)
	require.NoError(t, err)
	const t0 = 1_700_000_000
	now := t0
	var clockMu sync.Mutex
	SetClockForTesting(d, func() time.Time {
		clockMu.Lock()
		defer clockMu.Unlock()
		return time.Unix(int64(now), 0)
	})
	setNow := func(s int) {
		clockMu.Lock()
		now = s
		clockMu.Unlock()
	}
	for i := 0; i < 5; i++ {
		k := fmt.Sprintf("old%d", i)
		require.NoError(t, d.Put([]byte(k), bigValue(k), nil))
	}
	require.NoError(t, d.Flush())
	oldFile := versionBlobNums(d)
	require.Len(t, oldFile, 1)
	setNow(t0 + 5)
	want := make(map[string][]byte)
	for _, k := range []string{"young1", "young2", "chgbig"} {
		want[k] = bigValue(k)
		require.NoError(t, d.Put([]byte(k), want[k], nil))
	}
	require.NoError(t, d.Flush())
	all := &ReadOptions{IncludeExpired: true}
	setNow(t0 + 12)
	v, err := d.Get([]byte("old1"), all)
	require.NoError(t, err, "expired but not yet compacted")
	require.Equal(t, bigValue("old1"), v)

	require.NoError(t, d.CompactRange(nil, nil))
	want["chgbig"] = bytes.ToUpper(want["chgbig"])
	for i := 0; i < 5; i++ {
		_, err := d.Get([]byte(fmt.Sprintf("old%d", i)), all)
		require.ErrorIs(t, err, ErrNotFound)
	}
	blobCheckAll(t, d, want)
	require.NotContains(t, versionBlobNums(d), oldFile[0])
	require.NoError(t, d.Put([]byte("young1"), want["young1"], nil))
	require.NoError(t, d.Flush())
	require.NotContains(t, blobFileNums(t, dir), oldFile[0])
	require.NoError(t, d.Close())

	d, err = Open(dir, o)
	require.NoError(t, err)
	defer d.Close()
	SetClockForTesting(d, func() time.Time { return time.Unix(t0+12, 0) })
	blobCheckAll(t, d, want)
	// chgbig kept its write time: it expires with young1, at t0+16.
	SetClockForTesting(d, func() time.Time { return time.Unix(t0+16, 0) })
	_, err = d.Get([]byte("chgbig"), nil)
	require.ErrorIs(t, err, ErrNotFound)
}

// byKeyFilter is blobFilter with FilterBlobByKey: "drop" keys are removed
// by key, "chgbig" keys changed to a value given by key, the rest left
// undetermined. It counts the FilterBlobByKey calls.
type byKeyFilter struct {
	blobFilter
	byKey   atomic.Int64
	keysMu  sync.Mutex
	byKeyOf map[string]bool
}

func (f *byKeyFilter) FilterBlobByKey(level int, key []byte) (FilterDecision, []byte, bool) {
	f.byKey.Add(1)
	f.keysMu.Lock()
	if f.byKeyOf == nil {
		f.byKeyOf = make(map[string]bool)
	}
	f.byKeyOf[string(key)] = true
	f.keysMu.Unlock()
	switch k := string(key); {
	case strings.HasPrefix(k, "drop"):
		return FilterRemove, nil, true
	case strings.HasPrefix(k, "chgbig"):
		return FilterChangeValue, bigValue("by key " + k), true
	}
	return FilterKeep, nil, false
}

// TestBlobFilterBlobByKey: FilterBlobByKey decides for blob values by key
// alone (Filter is not asked, the blob is not read), an undetermined
// answer reads the value for Filter, inline values never reach it, and
// with TTL it is not asked at all.
func TestBlobFilterBlobByKey(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Hour} {
		dir := t.TempDir()
		f := &byKeyFilter{}
		o := blobTestOptions(NoCompression)
		o.CompactionFilter = f
		o.TTL = ttl
		d, err := Open(dir, o)
		require.NoError(t, err)
		want := map[string][]byte{}
		for _, k := range []string{"chgbig1", "drop1", "keep1"} {
			want[k] = bigValue(k)
			require.NoError(t, d.Put([]byte(k), want[k], nil))
		}
		require.NoError(t, d.Put([]byte("dropsmall"), []byte("inline"), nil))
		require.NoError(t, d.Flush())
		require.NoError(t, d.CompactRange(nil, nil))
		delete(want, "drop1")
		_, asked := f.shown("keep1")
		require.True(t, asked, "undetermined: Filter sees the value")
		_, asked = f.shown("dropsmall")
		require.True(t, asked, "an inline value goes to Filter")
		if ttl == 0 {
			want["chgbig1"] = bigValue("by key chgbig1")
			// Asked for each blob value (CompactRange with a filter also
			// rewrites the bottom level: some twice), never for inline ones.
			f.keysMu.Lock()
			require.Equal(t, map[string]bool{"chgbig1": true, "drop1": true, "keep1": true}, f.byKeyOf)
			f.keysMu.Unlock()
			for _, k := range []string{"drop1", "chgbig1"} {
				_, asked := f.shown(k)
				require.False(t, asked, "%s was decided by key", k)
			}
		} else {
			want["chgbig1"] = bytes.ToUpper(want["chgbig1"])
			require.Zero(t, f.byKey.Load(), "not asked under TTL")
		}
		blobCheckAll(t, d, want)
		require.NoError(t, d.Close())
	}
}

// TestBlobCompactionReadsDoNotFillCache: the blobs a compaction reads (for
// a filter here) are not added to the block cache, so the reads after it
// miss on every blob value (were they added, each Get would hit).
func TestBlobCompactionReadsDoNotFillCache(t *testing.T) {
	dir := t.TempDir()
	o := blobTestOptions(NoCompression)
	o.BlobFileSize = 1 << 20
	o.CompactionFilter = &blobFilter{}
	d, err := Open(dir, o)
	require.NoError(t, err)
	const n = 200
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("keep%03d", i)
		require.NoError(t, d.Put([]byte(k), bigValue(k), nil))
	}
	require.NoError(t, d.Close())
	d, err = Open(dir, o)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.CompactRange(nil, nil))
	f := o.CompactionFilter.(*blobFilter)
	_, asked := f.shown("keep000")
	require.True(t, asked)
	before := d.Metrics().BlockCache.Misses
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("keep%03d", i)
		v, err := d.Get([]byte(k), nil)
		require.NoError(t, err)
		require.Equal(t, bigValue(k), v)
	}
	require.GreaterOrEqual(t, d.Metrics().BlockCache.Misses-before, uint64(n), "every blob value read after the compaction misses")
}
