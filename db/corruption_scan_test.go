package db_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/prefix"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

// scanImage is a database of a few dozen tables over several levels, with
// range deletions, and the contents it must read back.
type scanImage struct {
	fs       *vfs.MemFS
	tables   []string // base names of the *.sst files
	expected []testutil.KV
	absent   [][]byte // keys written and then deleted
}

const scanImageDir = "/db"

func scanKey(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }

// buildScanImage writes overlapping generations of keys with deletes and
// range deletions under small table and level sizes, lets compaction spread
// them over levels, then adds a few L0 files on top.
func buildScanImage(t *testing.T, c db.Compression) *scanImage {
	t.Helper()
	fs := vfs.NewMem()
	opts := db.Options{
		CreateIfMissing:                true,
		FS:                             fs,
		Compression:                    c,
		WriteBufferSize:                24 << 10,
		BlockSize:                      512,
		TargetFileSizeBase:             4 << 10,
		MaxBytesForLevelBase:           16 << 10,
		MaxBytesForLevelMultiplier:     3,
		Level0FileNumCompactionTrigger: 2,
	}
	rng := rand.New(rand.NewSource(1))
	model := testutil.NewModel()
	written := map[string]bool{}
	d, err := db.Open(scanImageDir, &opts)
	require.NoError(t, err)
	const keySpace = 3000
	put := func(i int) {
		k := scanKey(i)
		v := []byte(fmt.Sprintf("v%d-%x", i, rng.Int63()))
		require.NoError(t, d.Put(k, v, nil))
		model.Put(k, v)
		written[string(k)] = true
	}
	for i := 0; i < keySpace; i++ {
		put(i)
	}
	for round := 0; round < 6; round++ {
		for j := 0; j < 700; j++ {
			i := rng.Intn(keySpace)
			switch x := rng.Intn(20); {
			case x < 16:
				put(i)
			case x < 19:
				require.NoError(t, d.Delete(scanKey(i), nil))
				model.Delete(scanKey(i))
			default:
				s, e := scanKey(i), scanKey(i+1+rng.Intn(25))
				require.NoError(t, d.DeleteRange(s, e, nil))
				model.DeleteRange(s, e)
			}
		}
		require.NoError(t, d.Flush())
	}
	require.NoError(t, d.Close())

	// A few L0 tables on top of the compacted levels.
	opts.DisableAutoCompactions = true
	d, err = db.Open(scanImageDir, &opts)
	require.NoError(t, err)
	for f := 0; f < 3; f++ {
		for j := 0; j < 150; j++ {
			put(rng.Intn(keySpace))
		}
		i := rng.Intn(keySpace)
		s, e := scanKey(i), scanKey(i+10)
		require.NoError(t, d.DeleteRange(s, e, nil))
		model.DeleteRange(s, e)
		require.NoError(t, d.Flush())
	}
	levels := 0
	var counts []string
	for l := 0; l < 7; l++ {
		s, ok := d.GetProperty(fmt.Sprintf("%s%d", db.PropNumFilesAtLevelPrefix, l))
		require.True(t, ok)
		counts = append(counts, s)
		if s != "0" {
			levels++
		}
	}
	require.NoError(t, d.Close())

	img := &scanImage{fs: fs, expected: model.Range(nil, nil)}
	names, err := fs.List(scanImageDir)
	require.NoError(t, err)
	for _, n := range names {
		if strings.HasSuffix(n, ".sst") {
			img.tables = append(img.tables, n)
		}
	}
	sort.Strings(img.tables)
	for k := range written {
		if _, ok := model.Get([]byte(k)); !ok {
			img.absent = append(img.absent, []byte(k))
		}
	}
	sort.Slice(img.absent, func(i, j int) bool { return bytes.Compare(img.absent[i], img.absent[j]) < 0 })
	t.Logf("%s image: %d tables, files per level %v, %d live keys, %d deleted",
		c, len(img.tables), counts, len(img.expected), len(img.absent))
	require.GreaterOrEqual(t, len(img.tables), 20, "want a few dozen tables")
	require.GreaterOrEqual(t, levels, 3, "want several levels")
	return img
}

// readMemFile returns the contents of name in fs.
func readMemFile(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	data, err := io.ReadAll(f)
	require.NoError(t, err)
	return data
}

// writeMemFile replaces name in fs with data.
func writeMemFile(t *testing.T, fs vfs.FS, name string, data []byte) {
	t.Helper()
	require.NoError(t, fs.Remove(name))
	require.NoError(t, vfs.WriteFileSynced(fs, name, data))
}

// dataSize returns the size of the data-block region of a table file: the
// blocks (trailers included) that precede the meta blocks.
func dataSize(t *testing.T, data []byte) int {
	t.Helper()
	r, err := table.Open(nopReaderAt{bytes.NewReader(data)}, int64(len(data)), table.ReaderOptions{FileName: "probe"})
	require.NoError(t, err)
	defer r.Close()
	n := int(r.Properties().DataSize)
	require.Greater(t, n, 0)
	require.LessOrEqual(t, n, len(data))
	return n
}

type nopReaderAt struct{ *bytes.Reader }

func (nopReaderAt) Close() error { return nil }

// damage corrupts data[:limit] in one of three ways and describes it.
func damage(rng *rand.Rand, data []byte, limit int) string {
	switch rng.Intn(3) {
	case 0:
		off := rng.Intn(limit)
		data[off] ^= byte(1 + rng.Intn(255))
		return fmt.Sprintf("flip byte at %d", off)
	case 1:
		start := rng.Intn(limit)
		n := 2 + rng.Intn(6)
		var offs []int
		for j := 0; j < n; j++ {
			off := min(start+rng.Intn(64), limit-1)
			data[off] ^= byte(1 + rng.Intn(255))
			offs = append(offs, off)
		}
		return fmt.Sprintf("flip bytes at %v", offs)
	default:
		off := rng.Intn(limit)
		n := min(1+rng.Intn(100), limit-off)
		clear(data[off : off+n])
		return fmt.Sprintf("zero %d bytes at %d", n, off)
	}
}

// scanCheck runs the reads of one damaged image against the expected
// contents; every read is exact or fails with ErrCorruption naming file.
type scanCheck struct {
	t        *testing.T
	rng      *rand.Rand
	d        *db.DB
	file     string
	desc     string
	expected []testutil.KV
	absent   [][]byte
	// outcomes, counted over every read
	exact, corrupt int
}

func (c *scanCheck) requireCorrupt(err error, what string) {
	c.t.Helper()
	require.ErrorIs(c.t, err, db.ErrCorruption, "%s: %s", c.desc, what)
	require.Contains(c.t, err.Error(), c.file, "%s: %s: error does not name the file", c.desc, what)
	require.Contains(c.t, err.Error(), "offset", "%s: %s: error does not name the offset", c.desc, what)
	c.corrupt++
}

// finish checks how a walk ended: complete with no error, or an error.
func (c *scanCheck) finish(it *db.Iterator, complete bool, what string) {
	c.t.Helper()
	if err := it.Err(); err != nil {
		c.requireCorrupt(err, what)
		return
	}
	require.True(c.t, complete, "%s: %s ended early with Err() == nil", c.desc, what)
	c.exact++
}

func (c *scanCheck) forwardScan() {
	it := c.d.NewIterator(nil)
	defer c.closeIter(it)
	n := 0
	for it.SeekToFirst(); it.Valid(); it.Next() {
		require.Less(c.t, n, len(c.expected), "%s: forward scan returned extra key %q", c.desc, it.Key())
		e := c.expected[n]
		require.Equal(c.t, e.Key, string(it.Key()), "%s: forward scan entry %d", c.desc, n)
		require.Equal(c.t, e.Value, string(it.Value()), "%s: forward scan value of %q", c.desc, e.Key)
		n++
	}
	c.finish(it, n == len(c.expected), fmt.Sprintf("forward scan (%d of %d keys)", n, len(c.expected)))
}

func (c *scanCheck) reverseScan() {
	it := c.d.NewIterator(nil)
	defer c.closeIter(it)
	n := 0
	for it.SeekToLast(); it.Valid(); it.Prev() {
		require.Less(c.t, n, len(c.expected), "%s: reverse scan returned extra key %q", c.desc, it.Key())
		e := c.expected[len(c.expected)-1-n]
		require.Equal(c.t, e.Key, string(it.Key()), "%s: reverse scan entry %d", c.desc, n)
		require.Equal(c.t, e.Value, string(it.Value()), "%s: reverse scan value of %q", c.desc, e.Key)
		n++
	}
	c.finish(it, n == len(c.expected), fmt.Sprintf("reverse scan (%d of %d keys)", n, len(c.expected)))
}

// randomKey returns a key near or in the key space, present or not.
func (c *scanCheck) randomKey() []byte {
	switch c.rng.Intn(4) {
	case 0:
		return []byte(c.expected[c.rng.Intn(len(c.expected))].Key)
	case 1:
		if len(c.absent) > 0 {
			return c.absent[c.rng.Intn(len(c.absent))]
		}
	case 2:
		return append(scanKey(c.rng.Intn(3100)), 'x')
	}
	return scanKey(c.rng.Intn(3100) - 50)
}

// walk checks the iterator against position pos of expected (-1 or
// len(expected) meaning not valid) after each of a series of random moves
// and seeks; it stops at the first error, which must be a corruption.
func (c *scanCheck) walk(it *db.Iterator, pos int, what string, steps int) {
	c.t.Helper()
	trace := []string{what}
	for s := 0; ; s++ {
		if err := it.Err(); err != nil {
			require.False(c.t, it.Valid())
			c.requireCorrupt(err, strings.Join(trace, ", "))
			return
		}
		if pos < 0 || pos >= len(c.expected) {
			if it.Valid() {
				require.Fail(c.t, "unexpected entry", "%s: %v: want no entry (pos %d), got %q",
					c.desc, trace, pos, it.Key())
			}
		} else {
			e := c.expected[pos]
			require.True(c.t, it.Valid(), "%s: %v: want %q, got no entry and no error", c.desc, trace, e.Key)
			require.Equal(c.t, e.Key, string(it.Key()), "%s: %v", c.desc, trace)
			require.Equal(c.t, e.Value, string(it.Value()), "%s: %v: value of %q", c.desc, trace, e.Key)
		}
		c.exact++
		if s == steps {
			return
		}
		valid := pos >= 0 && pos < len(c.expected)
		switch x := c.rng.Intn(10); {
		case valid && x < 4:
			it.Next()
			pos++
			trace = append(trace, "Next")
		case valid && x < 8:
			it.Prev()
			pos--
			trace = append(trace, "Prev")
		case x < 9:
			k := c.randomKey()
			it.SeekForPrev(k)
			pos = c.posForPrev(k)
			trace = append(trace, fmt.Sprintf("SeekForPrev(%q)", k))
		default:
			k := c.randomKey()
			it.Seek(k)
			pos = sort.Search(len(c.expected), func(i int) bool { return c.expected[i].Key >= string(k) })
			trace = append(trace, fmt.Sprintf("Seek(%q)", k))
		}
		if len(trace) > 12 {
			trace = trace[len(trace)-12:]
		}
	}
}

// posForPrev is the index of the last expected key <= k, or -1.
func (c *scanCheck) posForPrev(k []byte) int {
	return sort.Search(len(c.expected), func(i int) bool { return c.expected[i].Key > string(k) }) - 1
}

// seekForPrevWalks: SeekForPrev at random keys, then Prev/Next runs with
// direction changes.
func (c *scanCheck) seekForPrevWalks(n int) {
	for j := 0; j < n; j++ {
		it := c.d.NewIterator(nil)
		k := c.randomKey()
		it.SeekForPrev(k)
		c.walk(it, c.posForPrev(k), fmt.Sprintf("SeekForPrev(%q)", k), 60)
		c.closeIter(it)
	}
	// Long backward runs from the end, turning around now and then.
	it := c.d.NewIterator(nil)
	it.SeekToLast()
	c.walk(it, len(c.expected)-1, "SeekToLast", 400)
	c.closeIter(it)
}

// closeIter closes it; a close may repeat the corruption the reads saw.
func (c *scanCheck) closeIter(it *db.Iterator) {
	c.t.Helper()
	if err := it.Close(); err != nil {
		require.ErrorIs(c.t, err, db.ErrCorruption, c.desc)
	}
}

func (c *scanCheck) gets() {
	for _, e := range c.expected {
		v, err := c.d.Get([]byte(e.Key), nil)
		if err != nil {
			c.requireCorrupt(err, fmt.Sprintf("Get(%q)", e.Key))
			continue
		}
		require.Equal(c.t, e.Value, string(v), "%s: Get(%q)", c.desc, e.Key)
		c.exact++
	}
	for _, k := range c.absent {
		_, err := c.d.Get(k, nil)
		if errors.Is(err, db.ErrNotFound) {
			c.exact++
			continue
		}
		require.Error(c.t, err, "%s: Get(%q) of a deleted key found it", c.desc, k)
		c.requireCorrupt(err, fmt.Sprintf("Get(%q)", k))
	}
}

// TestCorruptTableScan damages a data block of one table of a multi-level
// database and checks that every read, in both directions and across
// direction changes, returns exactly the right data or fails with
// ErrCorruption naming the file and offset: no scan may skip keys and end
// with Err() == nil. STRATA_LONG=1 runs 200 images per compression.
func TestCorruptTableScan(t *testing.T) {
	base := testutil.Seed(t)
	images := 6
	if testutil.Long() {
		images = 200
	}
	for _, comp := range []db.Compression{db.NoCompression, db.SnappyCompression} {
		t.Run(comp.String(), func(t *testing.T) {
			img := buildScanImage(t, comp)
			var unchanged, corruptScans, exactReads, corruptReads int
			for i := 0; i < images; i++ {
				seed := base + int64(i)
				rng := rand.New(rand.NewSource(seed))
				fs := img.fs.CrashClone()
				file := img.tables[rng.Intn(len(img.tables))]
				name := path.Join(scanImageDir, file)
				data := readMemFile(t, fs, name)
				desc := fmt.Sprintf("seed %d: %s: %s", seed, file, damage(rng, data, dataSize(t, data)))
				writeMemFile(t, fs, name, data)

				d, err := db.Open(scanImageDir, &db.Options{FS: fs, DisableAutoCompactions: true})
				if err != nil {
					require.ErrorIs(t, err, db.ErrCorruption, desc)
					continue
				}
				c := &scanCheck{t: t, rng: rng, d: d, file: file, desc: desc,
					expected: img.expected, absent: img.absent}
				c.forwardScan()
				c.reverseScan()
				switch c.corrupt {
				case 0:
					unchanged++ // zeroing bytes that were zero already
				case 2:
					corruptScans++
				default:
					// Both scans read every data block: one direction
					// cannot see damage the other misses.
					require.Fail(t, "only one scan direction saw the damage", desc)
				}
				c.seekForPrevWalks(8)
				c.gets()
				exactReads += c.exact
				corruptReads += c.corrupt
				// Closing may repeat the errors the reads saw.
				_ = d.Close()
			}
			t.Logf("%s: %d images: both full scans ErrCorruption on %d, both exact on %d; "+
				"over every scan, walk step and Get: %d exact, %d ErrCorruption",
				comp, images, corruptScans, unchanged, exactReads, corruptReads)
		})
	}
}

// TestCorruptTableAutoPrefixPrev: a bounded seek in auto prefix mode skips
// a table by its filter; Prev then repositions without the filter and reads
// that table for the first time. A damaged block there must stop Prev with
// ErrCorruption naming the file (it used to step an exhausted merging
// iterator).
func TestCorruptTableAutoPrefixPrev(t *testing.T) {
	fs := vfs.NewMem()
	opts := &db.Options{CreateIfMissing: true, FS: fs, BloomBitsPerKey: 16,
		PrefixExtractor: prefix.Fixed(4), DisableAutoCompactions: true}
	d, err := db.Open(scanImageDir, opts)
	require.NoError(t, err)
	// The first table spans the seek key's prefix without holding it.
	for _, k := range []string{"aaaa1", "cccc1"} {
		require.NoError(t, d.Put([]byte(k), []byte(k), nil))
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.Put([]byte("bbbb5"), []byte("bbbb5"), nil))
	require.NoError(t, d.Flush())
	require.NoError(t, d.Close())

	names, err := fs.List(scanImageDir)
	require.NoError(t, err)
	var tables []string
	for _, n := range names {
		if strings.HasSuffix(n, ".sst") {
			tables = append(tables, n)
		}
	}
	sort.Strings(tables)
	require.Len(t, tables, 2)
	name := path.Join(scanImageDir, tables[0])
	data := readMemFile(t, fs, name)
	data[dataSize(t, data)/2] ^= 0x20
	writeMemFile(t, fs, name, data)

	d, err = db.Open(scanImageDir, opts)
	require.NoError(t, err)
	defer d.Close()
	it := d.NewIterator(&db.ReadOptions{UpperBound: []byte("bbbb9")})
	it.Seek([]byte("bbbb3"))
	require.NoError(t, it.Err(), "the filter should have kept the damaged table out of the seek")
	require.True(t, it.Valid())
	require.Equal(t, "bbbb5", string(it.Key()))
	it.Prev()
	require.False(t, it.Valid())
	require.ErrorIs(t, it.Err(), db.ErrCorruption)
	require.Contains(t, it.Err().Error(), tables[0])
	require.ErrorIs(t, it.Close(), db.ErrCorruption)
}
