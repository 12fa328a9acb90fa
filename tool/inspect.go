package tool

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/blob"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/table"
)

func init() {
	// A database's merge operator is needed to read merged keys (check)
	// and to flush or compact them (the writes, and a read-only open
	// replaying a WAL), so every verb that opens one takes it.
	register("db", "lsm", "DIR [--merge-operator=NAME]", dbLSM)
	register("db", "properties", "DIR [--merge-operator=NAME]", dbProperties)
	register("db", "space", "DIR [--from=K] [--to=K] [--hex] [--merge-operator=NAME]", dbSpace)
	register("db", "check", "DIR [--merge-operator=NAME]", dbCheck)
	register("db", "checkpoint", "DIR DEST [--merge-operator=NAME]", dbCheckpoint)
	registerCF("db", "compact", "DIR [--from=K] [--to=K] [--hex] [--merge-operator=NAME]", dbCompact)
	register("sstable", "scan", "FILE|DIR [--hex] [--from=K] [--to=K] [--prefix=P] [--limit=N]", sstScan)
	register("sstable", "properties", "FILE|DIR", sstProperties)
	register("sstable", "layout", "FILE|DIR", sstLayout)
	register("sstable", "check", "FILE|DIR", sstCheck)
	register("manifest", "check", "FILE|DIR", manifestCheck)
}

// bounds returns the --from and --to keys (nil when absent).
func (c *cmdline) bounds() (from, to []byte, err error) {
	if c.hasFrom {
		if from, err = c.key(c.from); err != nil {
			return nil, nil, err
		}
	}
	if c.hasTo {
		if to, err = c.key(c.to); err != nil {
			return nil, nil, err
		}
	}
	return from, to, nil
}

// prefixKey is --prefix as a key (nil when absent).
func (c *cmdline) prefixKey() ([]byte, error) {
	if c.prefix == "" {
		return nil, nil
	}
	return c.key(c.prefix)
}

// prefixBounds narrows the bytewise range [lo, hi) to the keys with
// prefix p, which are [p, PrefixUpperBound(p)) in that order (nil bounds
// are open).
func prefixBounds(p, lo, hi []byte) ([]byte, []byte) {
	if lo == nil || bytes.Compare(p, lo) > 0 {
		lo = p
	}
	if end := db.PrefixUpperBound(p); end != nil && (hi == nil || bytes.Compare(end, hi) < 0) {
		hi = end
	}
	return lo, hi
}

func dbLSM(t *T, c *cmdline) error {
	if err := c.need(1, "DIR"); err != nil {
		return err
	}
	d, err := t.open(c, c.args[0], false)
	if err != nil {
		return err
	}
	defer d.Close()
	fmt.Fprint(c.out, d.Metrics().String())
	return nil
}

// dbPropertyNames are the properties db properties prints, in order.
var dbPropertyNames = []string{
	db.PropTotalSSTFilesSize, db.PropNumSnapshots, db.PropNumImmutableMemTable,
	db.PropCurSizeActiveMemTable, db.PropBlockCacheUsage, db.PropBlockCacheCapacity,
	db.PropTableReadersMem, db.PropPrefixExtractor, db.PropBackgroundError,
}

func dbProperties(t *T, c *cmdline) error {
	if err := c.need(1, "DIR"); err != nil {
		return err
	}
	d, err := t.open(c, c.args[0], false)
	if err != nil {
		return err
	}
	defer d.Close()
	for level := 0; level < db.NumLevels; level++ {
		v, _ := d.GetProperty(fmt.Sprintf("%s%d", db.PropNumFilesAtLevelPrefix, level))
		fmt.Fprintf(c.out, "%s%d: %s\n", db.PropNumFilesAtLevelPrefix, level, v)
	}
	for _, name := range dbPropertyNames {
		if v, ok := d.GetProperty(name); ok {
			fmt.Fprintf(c.out, "%s: %s\n", name, v)
		}
	}
	if v, ok := d.GetProperty(db.PropLevels); ok {
		fmt.Fprintf(c.out, "%s:\n%s", db.PropLevels, v)
	}
	return nil
}

// dbSpace prints the approximate bytes on disk of the keys in [--from, --to).
func dbSpace(t *T, c *cmdline) error {
	if err := c.need(1, "DIR"); err != nil {
		return err
	}
	from, to, err := c.bounds()
	if err != nil {
		return err
	}
	d, err := t.open(c, c.args[0], false)
	if err != nil {
		return err
	}
	defer d.Close()
	n, err := d.ApproximateSize(from, to, nil)
	if err != nil {
		return errors.Wrapf(err, "strata: db space %s", c.args[0])
	}
	fmt.Fprintln(c.out, n)
	return nil
}

// dbCheck replays the MANIFEST, verifies every block checksum of every live
// table and reads every key through the database.
func dbCheck(t *T, c *cmdline) error {
	if err := c.need(1, "DIR"); err != nil {
		return err
	}
	dir := c.args[0]
	if err := checkDB(dir); err != nil {
		return err
	}
	vs, err := version.Load(vfs.Default, dir, version.Options{Comparer: t.versionComparer(dir)})
	if err != nil {
		return errors.Wrapf(err, "strata: db check %s", dir)
	}
	v := vs.Current()
	var live []string
	for level := range v.Levels {
		for _, f := range v.Levels[level] {
			live = append(live, filepath.Join(dir, base.MakeFilename(base.FileKindTable, f.FileNum)))
		}
	}
	blobs := make([]version.BlobFileMeta, len(v.BlobFiles))
	for i, b := range v.BlobFiles {
		blobs[i] = *b
	}
	vs.Close()
	for _, p := range live {
		if err := t.checkTable(p, nil); err != nil {
			return err
		}
	}
	// Every blob file whole: reading the live keys below reads only the
	// blobs they refer to, not the garbage, nor the footer.
	for _, b := range blobs {
		if err := checkBlobFile(dir, b); err != nil {
			return err
		}
	}
	d, err := t.open(c, dir, false)
	if err != nil {
		return err
	}
	defer d.Close()
	it := d.NewIterator(nil)
	n := 0
	for it.SeekToFirst(); it.Valid(); it.Next() {
		n++
	}
	if err := it.Err(); err != nil {
		it.Close()
		return errors.Wrapf(err, "strata: db check %s", dir)
	}
	if err := it.Close(); err != nil {
		return err
	}
	if len(blobs) > 0 {
		fmt.Fprintf(c.out, "OK: %d tables, %d blob files, %d live keys\n", len(live), len(blobs), n)
		return nil
	}
	fmt.Fprintf(c.out, "OK: %d tables, %d live keys\n", len(live), n)
	return nil
}

// checkBlobFile reads the blob file b of dir whole (blob.CheckFile) and
// checks that it holds what the MANIFEST recorded of it.
func checkBlobFile(dir string, b version.BlobFileMeta) error {
	name := base.MakeFilename(base.FileKindBlob, b.FileNum)
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return errors.Wrapf(err, "strata: db check: blob file %s, listed in the MANIFEST", name)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return errors.Wrap(err, "strata")
	}
	s, err := blob.CheckFile(name, f, st.Size())
	if err != nil {
		return err
	}
	if s.Count != b.TotalCount || s.Bytes != b.TotalBytes {
		return base.CorruptionErrorf("blob file %s: offset 0: holds %d blobs of %d bytes, the MANIFEST records %d of %d",
			name, s.Count, s.Bytes, b.TotalCount, b.TotalBytes)
	}
	return nil
}

func dbCheckpoint(t *T, c *cmdline) error {
	if err := c.need(2, "DIR DEST"); err != nil {
		return err
	}
	d, err := t.open(c, c.args[0], false)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Checkpoint(c.args[1]); err != nil {
		return errors.Wrapf(err, "strata: db checkpoint %s", c.args[0])
	}
	fmt.Fprintln(c.out, "OK")
	return nil
}

func dbCompact(t *T, c *cmdline) error {
	if err := c.need(1, "DIR"); err != nil {
		return err
	}
	from, to, err := c.bounds()
	if err != nil {
		return err
	}
	return t.write(c, func(cf *db.ColumnFamily) error { return cf.CompactRange(from, to) })
}

// tableFiles expands a FILE|DIR argument to table files.
func tableFiles(arg string) ([]string, error) {
	st, err := os.Stat(arg)
	if err != nil {
		return nil, errors.Wrap(err, "strata")
	}
	if !st.IsDir() {
		return []string{arg}, nil
	}
	m, err := filepath.Glob(filepath.Join(arg, "*.sst"))
	if err != nil {
		return nil, errors.Wrap(err, "strata")
	}
	if len(m) == 0 {
		return nil, errors.Wrapf(db.ErrInvalidArgument, "strata: %s holds no .sst file", arg)
	}
	slices.Sort(m)
	return m, nil
}

// openTable opens a table in the order its rocksdb.comparator property
// names: a built-in comparator or one given with WithComparer.
func (t *T) openTable(path string) (*table.Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Wrap(err, "strata")
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, errors.Wrap(err, "strata")
	}
	_, num, _ := base.ParseFilename(filepath.Base(path))
	r, err := table.Open(f, st.Size(), table.ReaderOptions{FileName: path, FileNum: num, ComparerByName: t.tableComparer})
	if err != nil {
		f.Close()
		return nil, errors.Wrapf(err, "strata: %s", path)
	}
	return r, nil
}

// eachTable runs fn on every table of arg, printing "FILE:" before each
// when arg is a directory.
func (t *T) eachTable(c *cmdline, fn func(path string, r *table.Reader) error) error {
	if err := c.need(1, "FILE|DIR"); err != nil {
		return err
	}
	files, err := tableFiles(c.args[0])
	if err != nil {
		return err
	}
	for _, p := range files {
		if len(files) > 1 || p != c.args[0] {
			fmt.Fprintf(c.out, "%s:\n", p)
		}
		r, err := t.openTable(p)
		if err != nil {
			return err
		}
		err = fn(p, r)
		r.Close()
		if err != nil {
			return errors.Wrapf(err, "strata: %s", p)
		}
	}
	return nil
}

// sstScan prints every point entry as sst_dump does:
// 'KEY' seq:N, type:T => VALUE, and range tombstones as
// [START, END) seq:N.
func sstScan(t *T, c *cmdline) error {
	from, to, err := c.bounds()
	if err != nil {
		return err
	}
	p, err := c.prefixKey()
	if err != nil {
		return err
	}
	return t.eachTable(c, func(path string, r *table.Reader) error {
		it := r.NewIter()
		// In bytewise order the keys with prefix p are one range; in
		// another order they are filtered.
		start, end := from, to
		bytewise := r.Comparer().Bytewise
		if p != nil && bytewise {
			start, end = prefixBounds(p, from, to)
		}
		var ok bool
		if start != nil {
			ok = it.SeekGE(start)
		} else {
			ok = it.First()
		}
		for n := int64(0); ok && (c.limit < 0 || n < c.limit); ok = it.Next() {
			k := it.Key()
			if end != nil && r.Comparer().CompareUser(k.UserKey, end) >= 0 {
				break
			}
			if p != nil && !bytewise && !bytes.HasPrefix(k.UserKey, p) {
				continue
			}
			val := c.format(it.Value())
			if k.Kind() == base.KindBlobIndex {
				if x, err := blob.DecodeIndex(k.UserKey, it.Value()); err == nil {
					val = x.String(c.format)
				}
			}
			fmt.Fprintf(c.out, "'%s' seq:%d, type:%d => %s\n", c.format(k.UserKey), k.SeqNum(), k.Kind(), val)
			n++
		}
		if err := it.Error(); err != nil {
			it.Close()
			return err
		}
		for _, ts := range r.Tombstones() {
			fmt.Fprintf(c.out, "range deletion [%s, %s) seq:%d\n", c.format(ts.Start), c.format(ts.End), ts.Seq)
		}
		return it.Close()
	})
}

func sstProperties(t *T, c *cmdline) error {
	return t.eachTable(c, func(path string, r *table.Reader) error {
		fmt.Fprint(c.out, r.Properties().String())
		return nil
	})
}

func sstLayout(t *T, c *cmdline) error {
	return t.eachTable(c, func(path string, r *table.Reader) error {
		blocks, err := r.Layout()
		if err != nil {
			return err
		}
		for _, b := range blocks {
			kind := b.Kind
			if b.Name != "" {
				kind += " " + b.Name
			}
			fmt.Fprintf(c.out, "%10d %8d  %s\n", b.Offset, b.Size, kind)
		}
		return nil
	})
}

// checkTable verifies every block checksum of a table and that its point
// keys are in strictly increasing internal-key order; n counts them.
func (t *T) checkTable(path string, n *int) error {
	r, err := t.openTable(path)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.VerifyChecksums(); err != nil {
		return errors.Wrapf(err, "strata: %s", path)
	}
	it := r.NewIter()
	var prev base.InternalKey
	count := 0
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if count > 0 && r.Comparer().InternalCompare(prev, k) >= 0 {
			it.Close()
			return base.CorruptionErrorf("%s: key %q#%d out of order after %q#%d", path,
				k.UserKey, k.SeqNum(), prev.UserKey, prev.SeqNum())
		}
		prev = k.Clone()
		count++
	}
	if err := it.Error(); err != nil {
		it.Close()
		return errors.Wrapf(err, "strata: %s", path)
	}
	if n != nil {
		*n = count
	}
	return it.Close()
}

func sstCheck(t *T, c *cmdline) error {
	if err := c.need(1, "FILE|DIR"); err != nil {
		return err
	}
	files, err := tableFiles(c.args[0])
	if err != nil {
		return err
	}
	for _, p := range files {
		var n int
		if err := t.checkTable(p, &n); err != nil {
			return err
		}
		fmt.Fprintf(c.out, "%s: OK, %d entries\n", p, n)
	}
	return nil
}

// manifestCheck replays a MANIFEST (a file, or the one CURRENT names in a
// directory) and checks the state it describes: files of each level above 0
// sorted and not overlapping, no file seen at two levels, no sequence
// number above the last sequence.
func manifestCheck(t *T, c *cmdline) error {
	if err := c.need(1, "FILE|DIR"); err != nil {
		return err
	}
	path := c.args[0]
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		if path, err = currentManifest(path); err != nil {
			return err
		}
	}
	st, err := replayManifest(path)
	if err != nil {
		return err
	}
	t.orderFamilies(st)
	files := 0
	for _, cf := range st.cfs {
		seen := map[uint64]int{}
		for level := range cf.levels {
			fs := cf.files(level)
			for i, f := range fs {
				files++
				if l, ok := seen[f.FileNum]; ok {
					return base.CorruptionErrorf("%s: file %d at levels %d and %d", path, f.FileNum, l, level)
				}
				seen[f.FileNum] = level
				if f.LargestSeq > st.lastSeq {
					return base.CorruptionErrorf("%s: file %d holds sequence number %d above the last sequence %d",
						path, f.FileNum, f.LargestSeq, st.lastSeq)
				}
				if level > 0 && i > 0 && cf.cmp().CompareUser(fs[i-1].Largest.UserKey, f.Smallest.UserKey) >= 0 &&
					!(version.IsSentinel(fs[i-1].Largest) && bytes.Equal(fs[i-1].Largest.UserKey, f.Smallest.UserKey)) {
					return base.CorruptionErrorf("%s: level %d: file %d overlaps file %d", path, level,
						fs[i-1].FileNum, f.FileNum)
				}
			}
		}
	}
	fmt.Fprintf(c.out, "OK: %d edits, %d files\n", st.edits, files)
	return nil
}
