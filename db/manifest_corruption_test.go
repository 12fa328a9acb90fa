package db_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// A damaged MANIFEST must never be mistaken for a shorter history: every
// single-byte change either makes Open fail with ErrCorruption or leaves the
// database exactly as it was. These tests build small databases of several
// shapes, then flip each byte of the MANIFEST in turn.

const mcDir = "/db"

// mcShape builds a database in fs under mcDir, closes it and returns the
// model of its contents and the keys ever written.
type mcShape struct {
	name  string
	build func(t *testing.T, fs vfs.FS) (*testutil.Model, [][]byte)
}

func mcKey(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }

func mcValue(round, i int) []byte { return []byte(fmt.Sprintf("v%d-%d-%0*d", round, i, i%13, 0)) }

func mcOpts(fs vfs.FS) *db.Options {
	return &db.Options{FS: fs, CreateIfMissing: true, DisableAutoCompactions: true}
}

// mcWrite puts keys [lo, hi) with round's values into d and m.
func mcWrite(t *testing.T, d *db.DB, m *testutil.Model, round, lo, hi int) {
	t.Helper()
	for i := lo; i < hi; i++ {
		k, v := mcKey(i), mcValue(round, i)
		require.NoError(t, d.Put(k, v, nil))
		m.Put(k, v)
	}
}

func mcKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = mcKey(i)
	}
	return keys
}

var mcShapes = []mcShape{
	{"flush3-compact-wal", func(t *testing.T, fs vfs.FS) (*testutil.Model, [][]byte) {
		// Three flushes, a full compaction, then writes only in the WAL.
		d, err := db.Open(mcDir, mcOpts(fs))
		require.NoError(t, err)
		m := testutil.NewModel()
		for r := 0; r < 3; r++ {
			mcWrite(t, d, m, r, r*1000, r*1000+1000)
			require.NoError(t, d.Flush())
		}
		require.NoError(t, d.CompactRange(nil, nil))
		mcWrite(t, d, m, 3, 3000, 3200)
		require.NoError(t, d.Close())
		return m, mcKeys(3200)
	}},
	{"flushes-overlapping", func(t *testing.T, fs vfs.FS) (*testutil.Model, [][]byte) {
		// Several overlapping L0 tables, no compaction, deletes.
		d, err := db.Open(mcDir, mcOpts(fs))
		require.NoError(t, err)
		m := testutil.NewModel()
		for r := 0; r < 5; r++ {
			mcWrite(t, d, m, r, r*50, r*50+300)
			k := mcKey(r * 37)
			require.NoError(t, d.Delete(k, nil))
			m.Delete(k)
			require.NoError(t, d.Flush())
		}
		mcWrite(t, d, m, 9, 100, 150)
		require.NoError(t, d.Close())
		return m, mcKeys(600)
	}},
	{"many-edits-reopened", func(t *testing.T, fs vfs.FS) (*testutil.Model, [][]byte) {
		// Many edits across reopens (each Open starts a new MANIFEST),
		// with a compaction in between.
		m := testutil.NewModel()
		for round := 0; round < 3; round++ {
			d, err := db.Open(mcDir, mcOpts(fs))
			require.NoError(t, err)
			for r := 0; r < 4; r++ {
				lo := (round*4 + r) * 20
				mcWrite(t, d, m, round*4+r, lo, lo+60)
				require.NoError(t, d.Flush())
			}
			if round == 1 {
				require.NoError(t, d.CompactRange(mcKey(0), mcKey(100)))
			}
			mcWrite(t, d, m, 99, round*7, round*7+5)
			require.NoError(t, d.Close())
		}
		return m, mcKeys(400)
	}},
	{"range-deletions", func(t *testing.T, fs vfs.FS) (*testutil.Model, [][]byte) {
		d, err := db.Open(mcDir, mcOpts(fs))
		require.NoError(t, err)
		m := testutil.NewModel()
		for r := 0; r < 3; r++ {
			mcWrite(t, d, m, r, 0, 400)
			s, e := mcKey(r*100+10), mcKey(r*100+60)
			require.NoError(t, d.DeleteRange(s, e, nil))
			m.DeleteRange(s, e)
			require.NoError(t, d.Flush())
		}
		require.NoError(t, d.CompactRange(mcKey(0), mcKey(150)))
		s, e := mcKey(390), mcKey(500)
		require.NoError(t, d.DeleteRange(s, e, nil))
		m.DeleteRange(s, e)
		require.NoError(t, d.Close())
		return m, mcKeys(500)
	}},
}

// mcClone copies every file of mcDir in src into a new MemFS.
func mcClone(t *testing.T, src vfs.FS) *vfs.MemFS {
	t.Helper()
	dst := vfs.NewMem()
	require.NoError(t, dst.MkdirAll(mcDir, 0o755))
	names, err := src.List(mcDir)
	require.NoError(t, err)
	for _, name := range names {
		if name == "LOCK" {
			continue
		}
		data := readMemFile(t, src, filepath.Join(mcDir, name))
		mcWriteFile(t, dst, filepath.Join(mcDir, name), data)
	}
	return dst
}

// mcWriteFile creates name in fs with data, synced.
func mcWriteFile(t *testing.T, fs vfs.FS, name string, data []byte) {
	t.Helper()
	require.NoError(t, vfs.WriteFileSynced(fs, name, data))
}

// mcManifest returns the name of the MANIFEST that CURRENT names.
func mcManifest(t *testing.T, fs vfs.FS) string {
	t.Helper()
	cur := readMemFile(t, fs, filepath.Join(mcDir, "CURRENT"))
	require.NotEmpty(t, cur)
	return filepath.Join(mcDir, string(cur[:len(cur)-1]))
}

// mcCheck compares d with m over keys: a full forward scan and a Get of
// every key. It returns a description of the first difference, or "".
func mcCheck(d *db.DB, m *testutil.Model, keys [][]byte) string {
	want := m.Range(nil, nil)
	it := d.NewIterator(nil)
	i := 0
	for it.SeekToFirst(); it.Valid(); it.Next() {
		if i >= len(want) {
			k := string(it.Key())
			it.Close()
			return fmt.Sprintf("scan: extra key %q", k)
		}
		if string(it.Key()) != want[i].Key || string(it.Value()) != want[i].Value {
			k := string(it.Key())
			it.Close()
			return fmt.Sprintf("scan: entry %d is %q, want %q", i, k, want[i].Key)
		}
		i++
	}
	if err := it.Err(); err != nil {
		it.Close()
		return fmt.Sprintf("scan: %v", err)
	}
	if err := it.Close(); err != nil {
		return fmt.Sprintf("scan: close: %v", err)
	}
	if i != len(want) {
		return fmt.Sprintf("scan: %d entries, want %d", i, len(want))
	}
	for _, k := range keys {
		v, err := d.Get(k, nil)
		wv, ok := m.Get(k)
		switch {
		case ok && err != nil:
			return fmt.Sprintf("get %q: %v", k, err)
		case ok && string(v) != string(wv):
			return fmt.Sprintf("get %q: %q, want %q", k, v, wv)
		case !ok && !errorsIsNotFound(err):
			return fmt.Sprintf("get %q: %q, %v; want not found", k, v, err)
		}
	}
	return ""
}

func errorsIsNotFound(err error) bool { return errors.Is(err, db.ErrNotFound) }

// mcOpenDamaged opens fs (holding a damaged MANIFEST) and returns "" when
// the outcome is acceptable: ErrCorruption at Open, or exactly the model,
// after which a new write to a key must be what Get returns (a lowered last
// sequence would hide it behind the recovered value).
func mcOpenDamaged(fs vfs.FS, m *testutil.Model, keys [][]byte) string {
	d, err := db.Open(mcDir, &db.Options{FS: fs, DisableAutoCompactions: true})
	if err != nil {
		if errors.Is(err, db.ErrCorruption) {
			return ""
		}
		return fmt.Sprintf("open: not ErrCorruption: %v", err)
	}
	defer d.Close()
	if diff := mcCheck(d, m, keys); diff != "" {
		return "opened cleanly, but " + diff
	}
	// New writes must win over everything recovered.
	k := keys[len(keys)/3]
	if err := d.Put(k, []byte("after"), nil); err != nil {
		return fmt.Sprintf("put after open: %v", err)
	}
	if v, err := d.Get(k, nil); err != nil || string(v) != "after" {
		return fmt.Sprintf("get after a new put: %q, %v", v, err)
	}
	return ""
}

// TestManifestByteFlips flips every byte of the MANIFEST of one small
// database (all shapes, two masks with STRATA_LONG=1).
func TestManifestByteFlips(t *testing.T) {
	shapes := mcShapes[:1]
	masks := []byte{0xff}
	if testutil.Long() {
		shapes = mcShapes
		masks = []byte{0xff, 0x01, 0x80}
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			orig := vfs.NewMem()
			m, keys := sh.build(t, orig)
			// The undamaged database reads back exactly.
			require.Empty(t, mcOpenDamaged(mcClone(t, orig), m, keys))
			manifest := mcManifest(t, orig)
			data := readMemFile(t, orig, manifest)
			t.Logf("%s: %d bytes", manifest, len(data))
			var failures []string
			for _, mask := range masks {
				for off := range data {
					fs := mcClone(t, orig)
					damaged := append([]byte(nil), data...)
					damaged[off] ^= mask
					mcWriteFile(t, fs, manifest, damaged)
					if diff := mcOpenDamaged(fs, m, keys); diff != "" {
						failures = append(failures, fmt.Sprintf("offset %d ^%#x: %s", off, mask, diff))
					}
				}
			}
			if len(failures) > 0 {
				n := len(failures)
				if len(failures) > 20 {
					failures = failures[:20]
				}
				t.Fatalf("%d of %d flips lost data silently:\n%s", n, len(data)*len(masks), joinLines(failures))
			}
		})
	}
}

// TestManifestTruncations cuts the MANIFEST at every length: a cut inside
// the last record is a torn write (the edit was never acknowledged, and the
// database it describes must still be consistent); a cut before it must
// not silently lose tables.
func TestManifestTruncations(t *testing.T) {
	shapes := mcShapes[:1]
	if testutil.Long() {
		shapes = mcShapes
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			orig := vfs.NewMem()
			m, keys := sh.build(t, orig)
			manifest := mcManifest(t, orig)
			data := readMemFile(t, orig, manifest)
			var failures []string
			for n := 0; n < len(data); n++ {
				fs := mcClone(t, orig)
				mcWriteFile(t, fs, manifest, data[:n])
				if diff := mcOpenDamaged(fs, m, keys); diff != "" {
					failures = append(failures, fmt.Sprintf("length %d: %s", n, diff))
				}
			}
			if len(failures) > 0 {
				n := len(failures)
				if len(failures) > 20 {
					failures = failures[:20]
				}
				t.Fatalf("%d of %d truncations lost data silently:\n%s", n, len(data), joinLines(failures))
			}
		})
	}
}

func joinLines(s []string) string {
	out := ""
	for _, l := range s {
		out += l + "\n"
	}
	return out
}

// TestOpenChecksTables: a table the MANIFEST names that is missing or has
// another size fails Open with ErrCorruption naming the table, before
// anything is replayed or deleted.
func TestOpenChecksTables(t *testing.T) {
	orig := vfs.NewMem()
	m, keys := mcShapes[1].build(t, orig)
	names, err := orig.List(mcDir)
	require.NoError(t, err)
	var tables []string
	for _, n := range names {
		if filepath.Ext(n) == ".sst" {
			tables = append(tables, n)
		}
	}
	require.NotEmpty(t, tables)
	for _, name := range tables {
		path := filepath.Join(mcDir, name)
		damage := map[string]func(fs vfs.FS){
			"missing": func(fs vfs.FS) { require.NoError(t, fs.Remove(path)) },
			"short": func(fs vfs.FS) {
				data := readMemFile(t, fs, path)
				mcWriteFile(t, fs, path, data[:len(data)-1])
			},
			"long": func(fs vfs.FS) {
				data := readMemFile(t, fs, path)
				mcWriteFile(t, fs, path, append(data, 0))
			},
		}
		for what, f := range damage {
			fs := mcClone(t, orig)
			f(fs)
			before := mcList(t, fs)
			_, err := db.Open(mcDir, &db.Options{FS: fs})
			require.True(t, errors.Is(err, db.ErrCorruption), "%s %s: %v", what, name, err)
			require.Contains(t, err.Error(), name, what)
			require.ElementsMatch(t, before, mcList(t, fs), "%s %s: a failed Open changed the directory", what, name)
		}
	}
	// The undamaged copy still opens with everything.
	require.Empty(t, mcOpenDamaged(mcClone(t, orig), m, keys))
}

// mcList lists mcDir but for LOCK (which Open creates and leaves).
func mcList(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	names, err := fs.List(mcDir)
	require.NoError(t, err)
	out := names[:0]
	for _, n := range names {
		if n != "LOCK" {
			out = append(out, n)
		}
	}
	return out
}

// TestCurrentByteFlips: a damaged CURRENT (it names the MANIFEST) gives
// ErrCorruption or exactly the data, like a damaged MANIFEST.
func TestCurrentByteFlips(t *testing.T) {
	orig := vfs.NewMem()
	m, keys := mcShapes[1].build(t, orig)
	current := filepath.Join(mcDir, "CURRENT")
	data := readMemFile(t, orig, current)
	var failures []string
	for off := range data {
		for _, mask := range []byte{0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff} {
			fs := mcClone(t, orig)
			damaged := append([]byte(nil), data...)
			damaged[off] ^= mask
			mcWriteFile(t, fs, current, damaged)
			if diff := mcOpenDamaged(fs, m, keys); diff != "" {
				failures = append(failures, fmt.Sprintf("offset %d ^%#x: %s", off, mask, diff))
			}
		}
	}
	if len(failures) > 0 {
		n := len(failures)
		if len(failures) > 20 {
			failures = failures[:20]
		}
		t.Fatalf("%d flips of CURRENT misreported:\n%s", n, joinLines(failures))
	}
}
