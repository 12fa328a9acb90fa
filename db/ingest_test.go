package db_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

// extOp is one entry of an external file: a put, a delete (del) or a range
// deletion [key, end).
type extOp struct {
	key, value, end string
	del             bool
}

// writeExtFile writes ops (points ascending; range deletions anywhere)
// with table.ExternalWriter into fs at path.
func writeExtFile(t testing.TB, fs vfs.FS, path string, ops []extOp) table.ExternalFileInfo {
	t.Helper()
	f, err := fs.Create(path)
	require.NoError(t, err)
	w := table.NewExternalWriter(f, table.ExternalWriterOptions{BlockSize: 512, BloomBitsPerKey: 10})
	for _, op := range ops {
		switch {
		case op.end != "":
			require.NoError(t, w.DeleteRange([]byte(op.key), []byte(op.end)))
		case op.del:
			require.NoError(t, w.Delete([]byte(op.key)))
		default:
			require.NoError(t, w.Put([]byte(op.key), []byte(op.value)))
		}
	}
	info, err := w.Finish()
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	return info
}

// applyExt applies an ingested file to a model: its range deletions hide
// older data (not the file's own points), then its points apply.
func applyExt(model map[string]string, ops []extOp) {
	for _, op := range ops {
		if op.end == "" {
			continue
		}
		for k := range model {
			if k >= op.key && k < op.end {
				delete(model, k)
			}
		}
	}
	for _, op := range ops {
		switch {
		case op.end != "":
		case op.del:
			delete(model, op.key)
		default:
			model[op.key] = op.value
		}
	}
}

// checkModel compares a full scan, both directions, and point reads with
// the model.
func checkModel(t *testing.T, d *db.DB, ro *db.ReadOptions, model map[string]string, what string) {
	t.Helper()
	keys := make([]string, 0, len(model))
	for k := range model {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	it := d.NewIterator(ro)
	var got []string
	for it.SeekToFirst(); it.Valid(); it.Next() {
		got = append(got, string(it.Key()))
		require.Equal(t, model[string(it.Key())], string(it.Value()), "%s: value of %q", what, it.Key())
	}
	require.NoError(t, it.Err())
	require.Equal(t, keys, got, "%s: forward scan", what)
	got = got[:0]
	for it.SeekToLast(); it.Valid(); it.Prev() {
		got = append(got, string(it.Key()))
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.Len(t, got, len(keys), "%s: reverse scan", what)
	for i := range got {
		require.Equal(t, keys[len(keys)-1-i], got[i], "%s: reverse scan", what)
	}
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("key%04d", i)
		v, err := d.Get([]byte(k), ro)
		if want, ok := model[k]; ok {
			require.NoError(t, err, "%s: Get %q", what, k)
			require.Equal(t, want, string(v), "%s: Get %q", what, k)
		} else {
			require.ErrorIs(t, err, db.ErrNotFound, "%s: Get %q = %q", what, k, v)
		}
	}
}

func cloneModel(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// randomExtOps returns sorted points over key indexes [lo, hi) and maybe a
// range deletion inside it.
func randomExtOps(rng *rand.Rand, lo, hi, round int) []extOp {
	var ops []extOp
	if rng.Intn(2) == 0 {
		a := lo + rng.Intn(hi-lo)
		b := a + 1 + rng.Intn(hi-a)
		ops = append(ops, extOp{key: fmt.Sprintf("key%04d", a), end: fmt.Sprintf("key%04d", b)})
	}
	for i := lo; i < hi; i++ {
		if rng.Intn(3) != 0 {
			continue
		}
		k := fmt.Sprintf("key%04d", i)
		if rng.Intn(5) == 0 {
			ops = append(ops, extOp{key: k, del: true})
		} else {
			ops = append(ops, extOp{key: k, value: fmt.Sprintf("ext-%d-%d", round, i)})
		}
	}
	if len(ops) == 0 {
		ops = append(ops, extOp{key: fmt.Sprintf("key%04d", lo), value: "only"})
	}
	return ops
}

// TestIngestModel ingests random non-overlapping files into a database
// with data in the memtable and in several levels, and checks reads
// against a sorted map: after each ingestion, at a snapshot taken before
// it, and after reopening.
func TestIngestModel(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewSource(seed))
	rounds := 8
	if testutil.Long() {
		rounds = 200
	}
	fs := vfs.NewMem()
	opts := &db.Options{FS: fs, CreateIfMissing: true, WriteBufferSize: 32 << 10, BloomBitsPerKey: 10}
	d, err := db.Open("/db", opts)
	require.NoError(t, err)
	model := map[string]string{}
	put := func(i int, v string) {
		k := fmt.Sprintf("key%04d", i)
		require.NoError(t, d.Put([]byte(k), []byte(v), nil))
		model[k] = v
	}
	for round := 0; round < rounds; round++ {
		// Existing data: some flushed and compacted, some in the memtable.
		for i := 0; i < 40; i++ {
			put(rng.Intn(300), fmt.Sprintf("db-%d-%d", round, i))
		}
		switch rng.Intn(3) {
		case 0:
			require.NoError(t, d.Flush())
		case 1:
			require.NoError(t, d.CompactRange(nil, nil))
		}
		for i := 0; i < 10; i++ {
			put(rng.Intn(300), fmt.Sprintf("mem-%d-%d", round, i))
		}
		if rng.Intn(4) == 0 {
			a := rng.Intn(300)
			lo, hi := fmt.Sprintf("key%04d", a), fmt.Sprintf("key%04d", a+rng.Intn(20))
			require.NoError(t, d.DeleteRange([]byte(lo), []byte(hi), nil))
			for k := range model {
				if k >= lo && k < hi {
					delete(model, k)
				}
			}
		}
		// One to three files over disjoint ranges; some far beyond the
		// existing keys (no overlap: they go to the bottom level).
		nFiles := 1 + rng.Intn(3)
		var paths []string
		var all [][]extOp
		for f := 0; f < nFiles; f++ {
			lo := f*100 + rng.Intn(50)
			hi := lo + 1 + rng.Intn(49)
			if rng.Intn(4) == 0 {
				lo, hi = 1000+round*10+f*3, 1000+round*10+f*3+2
			}
			ops := randomExtOps(rng, lo, hi, round)
			path := fmt.Sprintf("/ext-%d-%d.sst", round, f)
			writeExtFile(t, fs, path, ops)
			paths = append(paths, path)
			all = append(all, ops)
		}
		before := cloneModel(model)
		snap := d.NewSnapshot()
		require.NoError(t, d.Ingest(paths, &db.IngestOptions{Move: rng.Intn(2) == 0}))
		for _, ops := range all {
			applyExt(model, ops)
		}
		checkModel(t, d, nil, model, fmt.Sprintf("round %d (seed %d)", round, seed))
		checkModel(t, d, &db.ReadOptions{Snapshot: snap}, before, fmt.Sprintf("round %d snapshot (seed %d)", round, seed))
		snap.Release()
		// Writes after the ingestion are newer than it.
		put(rng.Intn(300), fmt.Sprintf("after-%d", round))
		if round%3 == 2 {
			require.NoError(t, d.Close())
			d, err = db.Open("/db", opts)
			require.NoError(t, err)
			checkModel(t, d, nil, model, fmt.Sprintf("round %d reopened (seed %d)", round, seed))
		}
	}
	require.NoError(t, d.CompactRange(nil, nil))
	checkModel(t, d, nil, model, "after full compaction")
	require.NoError(t, d.Close())
}

// A file that overlaps nothing goes to the bottom level; one overlapping
// level-0 data goes to level 0; one overlapping the memtable makes it flush.
func TestIngestLevels(t *testing.T) {
	fs := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true, DisableAutoCompactions: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	files := func(level int) string {
		v, ok := d.GetProperty(fmt.Sprintf("rocksdb.num-files-at-level%d", level))
		require.True(t, ok)
		return v
	}
	writeExtFile(t, fs, "/a.sst", []extOp{{key: "a", value: "1"}, {key: "b", value: "2"}})
	require.NoError(t, d.Ingest([]string{"/a.sst"}, nil))
	require.Equal(t, "1", files(6))

	require.NoError(t, d.Put([]byte("m"), []byte("mem"), nil))
	writeExtFile(t, fs, "/m.sst", []extOp{{key: "l", value: "x"}, {key: "m", value: "ext"}})
	err = d.Ingest([]string{"/m.sst"}, &db.IngestOptions{NoBlockingFlush: true})
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	v, err := d.Get([]byte("l"), nil)
	require.ErrorIs(t, err, db.ErrNotFound, "refused ingestion left %q", v)
	names, err := fs.List("/db")
	require.NoError(t, err)
	ssts := 0
	for _, n := range names {
		if strings.HasSuffix(n, ".sst") {
			ssts++
		}
	}
	require.Equal(t, 1, ssts, "a refused ingestion leaves no file behind: %v", names)

	require.NoError(t, d.Ingest([]string{"/m.sst"}, nil))
	// The memtable was flushed to L0 and the file, overlapping it, went to
	// L0 above it.
	require.Equal(t, "2", files(0))
	v, err = d.Get([]byte("m"), nil)
	require.NoError(t, err)
	require.Equal(t, "ext", string(v))
	require.NoError(t, d.Put([]byte("m"), []byte("newer"), nil))
	v, err = d.Get([]byte("m"), nil)
	require.NoError(t, err)
	require.Equal(t, "newer", string(v))
}

func TestIngestRefusesBadFiles(t *testing.T) {
	fs := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	require.NoError(t, d.Put([]byte("k"), []byte("v"), nil))

	unchanged := func(what string) {
		t.Helper()
		it := d.NewIterator(nil)
		var keys []string
		for it.SeekToFirst(); it.Valid(); it.Next() {
			keys = append(keys, string(it.Key()))
		}
		require.NoError(t, it.Close())
		require.Equal(t, []string{"k"}, keys, what)
		names, err := fs.List("/db")
		require.NoError(t, err)
		for _, n := range names {
			require.False(t, strings.HasSuffix(n, ".sst"), "%s: leftover %s", what, n)
		}
	}

	// Overlapping files.
	writeExtFile(t, fs, "/x1.sst", []extOp{{key: "a", value: "1"}, {key: "c", value: "1"}})
	writeExtFile(t, fs, "/x2.sst", []extOp{{key: "b", value: "2"}})
	err = d.Ingest([]string{"/x1.sst", "/x2.sst"}, nil)
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.Contains(t, err.Error(), "overlap")
	unchanged("overlapping files")
	// A range deletion's end is exclusive: [a, b) and b do not overlap.
	writeExtFile(t, fs, "/r1.sst", []extOp{{key: "a", end: "b"}})
	writeExtFile(t, fs, "/r2.sst", []extOp{{key: "b", value: "2"}})

	// A damaged data block: found by the verification pass.
	info := writeExtFile(t, fs, "/bad.sst", []extOp{{key: "p", value: strings.Repeat("v", 100)}, {key: "q", value: "w"}})
	data := readAll(t, fs, "/bad.sst")
	require.Equal(t, int(info.Size), len(data))
	data[20] ^= 0xff
	writeAll(t, fs, "/bad.sst", data)
	err = d.Ingest([]string{"/bad.sst"}, nil)
	require.ErrorIs(t, err, db.ErrCorruption)
	require.Contains(t, err.Error(), "/bad.sst")
	unchanged("corrupt file")

	// Not a table at all.
	writeAll(t, fs, "/junk.sst", []byte("not a table, certainly not one of ours"))
	err = d.Ingest([]string{"/junk.sst"}, nil)
	require.ErrorIs(t, err, db.ErrCorruption)
	unchanged("junk")

	// A table not written for ingestion (entries with sequence numbers).
	f, err := fs.Create("/plain.sst")
	require.NoError(t, err)
	tw := table.NewWriter(f, table.WriterOptions{})
	writePlainTable(t, tw)
	require.NoError(t, f.Close())
	err = d.Ingest([]string{"/plain.sst"}, nil)
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.Contains(t, err.Error(), "not an external table file")
	unchanged("plain table")

	// Missing file.
	err = d.Ingest([]string{"/nope.sst"}, nil)
	require.Error(t, err)
	unchanged("missing file")
	require.ErrorIs(t, d.Ingest(nil, nil), db.ErrInvalidArgument)

	require.NoError(t, d.Ingest([]string{"/r1.sst", "/r2.sst"}, nil))
	v, err := d.Get([]byte("b"), nil)
	require.NoError(t, err)
	require.Equal(t, "2", string(v))
}

func readAll(t *testing.T, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	require.NoError(t, err)
	var b bytes.Buffer
	_, err = b.ReadFrom(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return b.Bytes()
}

func writeAll(t *testing.T, fs vfs.FS, path string, data []byte) {
	t.Helper()
	f, err := fs.Create(path)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// TestIngestCrashAllOrNothing takes crash images (synced bytes and synced
// directory entries only) of a strict in-memory file system at each step
// of an ingestion of two files: after each link, just before the MANIFEST
// edit, and after Ingest returns. Each image opens to a database holding
// none of the files' keys or all of them.
func TestIngestCrashAllOrNothing(t *testing.T) {
	fs := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("base"), []byte("v"), &db.WriteOptions{Sync: true}))
	writeExtFile(t, fs, "/e1.sst", []extOp{{key: "e1", value: "1"}})
	writeExtFile(t, fs, "/e2.sst", []extOp{{key: "e2", value: "2"}})
	root, err := fs.OpenDir("/")
	require.NoError(t, err)
	require.NoError(t, root.Sync())
	require.NoError(t, root.Close())

	type image struct {
		when string
		fs   *vfs.MemFS
	}
	var images []image
	db.SetIngestHooks(d, func(n uint64) {
		images = append(images, image{fmt.Sprintf("after link of %06d", n), fs.CrashClone()})
	}, func() {
		images = append(images, image{"before MANIFEST", fs.CrashClone()})
	})
	require.NoError(t, d.Ingest([]string{"/e1.sst", "/e2.sst"}, &db.IngestOptions{Move: true}))
	images = append(images, image{"after Ingest", fs.CrashClone()})
	require.NoError(t, d.Close())
	require.Len(t, images, 4)

	for i, im := range images {
		cd, err := db.Open("/db", &db.Options{FS: im.fs})
		require.NoError(t, err, im.when)
		var found []string
		for _, k := range []string{"base", "e1", "e2"} {
			if _, err := cd.Get([]byte(k), nil); err == nil {
				found = append(found, k)
			} else {
				require.ErrorIs(t, err, db.ErrNotFound)
			}
		}
		if i == len(images)-1 {
			require.Equal(t, []string{"base", "e1", "e2"}, found, im.when)
		} else {
			require.Equal(t, []string{"base"}, found, im.when)
		}
		// The leftovers of an interrupted ingestion are swept at Open:
		// every table in the directory is a live one.
		live := 0
		for level := 0; level < 7; level++ {
			v, ok := cd.GetProperty(fmt.Sprintf("rocksdb.num-files-at-level%d", level))
			require.True(t, ok)
			n, err := strconv.Atoi(v)
			require.NoError(t, err)
			live += n
		}
		require.NoError(t, cd.Close())
		names, err := im.fs.List("/db")
		require.NoError(t, err)
		ssts := 0
		for _, n := range names {
			if strings.HasSuffix(n, ".sst") {
				ssts++
			}
		}
		require.Equal(t, live, ssts, "%s: tables on disk %v", im.when, names)
	}
}

// Move hard-links the file into the database and removes the caller's
// name; without Move the caller's file stays.
func TestIngestMoveLinks(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(filepath.Join(dir, "db"), &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	src := filepath.Join(dir, "a.sst")
	writeExtFile(t, vfs.Default, src, []extOp{{key: "a", value: "1"}})
	st, err := os.Stat(src)
	require.NoError(t, err)
	require.NoError(t, d.Ingest([]string{src}, &db.IngestOptions{Move: true}))
	_, err = os.Stat(src)
	require.True(t, os.IsNotExist(err), "Move removes the source: %v", err)
	ents, err := filepath.Glob(filepath.Join(dir, "db", "*.sst"))
	require.NoError(t, err)
	require.Len(t, ents, 1)
	st2, err := os.Stat(ents[0])
	require.NoError(t, err)
	require.Equal(t, st.Size(), st2.Size())

	src = filepath.Join(dir, "b.sst")
	writeExtFile(t, vfs.Default, src, []extOp{{key: "b", value: "2"}})
	require.NoError(t, d.Ingest([]string{src}, nil))
	_, err = os.Stat(src)
	require.NoError(t, err, "without Move the source stays")
	v, err := d.Get([]byte("b"), nil)
	require.NoError(t, err)
	require.Equal(t, "2", string(v))
}

func writePlainTable(t *testing.T, tw *table.Writer) {
	t.Helper()
	require.NoError(t, tw.Add(base.MakeInternalKey([]byte("a"), 5, base.KindSet), []byte("v")))
	_, err := tw.Finish()
	require.NoError(t, err)
}

// Ingestions run while other goroutines write and read: every write and
// every ingested key is there at the end, and a reader never sees part of
// an ingestion (the two files of one call appear together).
func TestIngestConcurrentWrites(t *testing.T) {
	fs := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true, WriteBufferSize: 16 << 10})
	require.NoError(t, err)
	const rounds = 6
	errc := make(chan error, 2)
	stop := make(chan struct{})
	go func() {
		for i := 0; i < 400; i++ {
			if err := d.Put([]byte(fmt.Sprintf("w%05d", i)), []byte("v"), nil); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	go func() {
		// The files of round r hold "x%d-a" and "y%d-b": a reader that
		// sees one must see the other.
		for {
			select {
			case <-stop:
				errc <- nil
				return
			default:
			}
			for r := 0; r < rounds; r++ {
				_, errA := d.Get([]byte(fmt.Sprintf("x%d-a", r)), nil)
				_, errB := d.Get([]byte(fmt.Sprintf("y%d-b", r)), nil)
				if (errA == nil) != (errB == nil) {
					// The reads are not one view: x may have been read
					// before the ingestion and y after; y before x is
					// impossible.
					if errA == nil {
						errc <- fmt.Errorf("round %d: x seen, then y missing", r)
						return
					}
				}
			}
		}
	}()
	for r := 0; r < rounds; r++ {
		a, b := fmt.Sprintf("/a%d.sst", r), fmt.Sprintf("/b%d.sst", r)
		writeExtFile(t, fs, a, []extOp{{key: fmt.Sprintf("x%d-a", r), value: "1"}})
		writeExtFile(t, fs, b, []extOp{{key: fmt.Sprintf("y%d-b", r), value: "2"}})
		require.NoError(t, d.Ingest([]string{a, b}, nil))
	}
	require.NoError(t, <-errc)
	close(stop)
	require.NoError(t, <-errc)
	for i := 0; i < 400; i++ {
		_, err := d.Get([]byte(fmt.Sprintf("w%05d", i)), nil)
		require.NoError(t, err)
	}
	for r := 0; r < rounds; r++ {
		_, err := d.Get([]byte(fmt.Sprintf("x%d-a", r)), nil)
		require.NoError(t, err)
	}
	require.NoError(t, d.Close())
}

// Without Move the caller's file stays the caller's: a loader that writes
// the next batch to the same path after the ingestion (os.Create truncates
// it) must not change the database's table. Before the fix the table was a
// hard link to that path: reopening failed on its size, or Get returned a
// value never ingested.
func TestIngestCopyIndependentOfSource(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db")
	d, err := db.Open(path, &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	src := filepath.Join(dir, "bulk.sst")
	var first, second []extOp
	for i := 0; i < 200; i++ {
		k := fmt.Sprintf("k%04d", i)
		first = append(first, extOp{key: k, value: "first-" + k})
		second = append(second, extOp{key: k, value: "later-" + k})
	}
	writeExtFile(t, vfs.Default, src, first)
	require.NoError(t, d.Ingest([]string{src}, nil))
	// The next batch, same path, same size (values of the same length).
	writeExtFile(t, vfs.Default, src, second)
	require.NoError(t, d.Close())

	d, err = db.Open(path, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	for _, op := range first {
		v, err := d.Get([]byte(op.key), nil)
		require.NoError(t, err, op.key)
		require.Equal(t, op.value, string(v), op.key)
	}
	// And a shorter rewrite of the path does not matter either.
	writeExtFile(t, vfs.Default, src, first[:1])
	v, err := d.Get([]byte("k0199"), nil)
	require.NoError(t, err)
	require.Equal(t, "first-k0199", string(v))
}

// An ingestion through a symlink takes the file it points to: the table is
// never a link to the caller's symlink. Before the fix, with Move, link(2)
// linked the symlink itself, and once the caller removed its staging
// directory the database no longer opened.
func TestIngestThroughSymlink(t *testing.T) {
	for _, move := range []bool{false, true} {
		t.Run(fmt.Sprintf("Move=%v", move), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "db")
			d, err := db.Open(path, &db.Options{CreateIfMissing: true})
			require.NoError(t, err)
			staging := filepath.Join(dir, "staging")
			require.NoError(t, os.Mkdir(staging, 0o755))
			writeExtFile(t, vfs.Default, filepath.Join(staging, "bulk.sst"), []extOp{{key: "k", value: "ingested"}})
			link := filepath.Join(dir, "link.sst")
			require.NoError(t, os.Symlink(filepath.Join(staging, "bulk.sst"), link))
			require.NoError(t, d.Ingest([]string{link}, &db.IngestOptions{Move: move}))
			require.NoError(t, d.Close())
			if move {
				_, err := os.Lstat(filepath.Join(staging, "bulk.sst"))
				require.True(t, os.IsNotExist(err), "Move leaves the caller a name for the table: %v", err)
				_, err = os.Lstat(link)
				require.True(t, os.IsNotExist(err), "Move leaves the caller's symlink: %v", err)
			} else {
				require.NoError(t, os.Remove(link))
			}
			require.NoError(t, os.RemoveAll(staging))

			d, err = db.Open(path, nil)
			require.NoError(t, err)
			defer func() { require.NoError(t, d.Close()) }()
			v, err := d.Get([]byte("k"), nil)
			require.NoError(t, err)
			require.Equal(t, "ingested", string(v))
		})
	}
}
