package db_test

import (
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/prefix"
	"github.com/stretchr/testify/require"
)

// user12 is a user-defined extractor with the Name of prefix.Fixed(12): a
// compatible extractor that is a different instance (and type) from the
// built-in.
type user12 struct{}

func (user12) Name() string                { return "rocksdb.FixedPrefix.12" }
func (user12) InDomain(key []byte) bool    { return len(key) >= 12 }
func (user12) Transform(key []byte) []byte { return key[:12:12] }

// matrixExtractor is one extractor of the compatibility matrix: how to set
// it at Open and through SetOptions.
type matrixExtractor struct {
	name string
	make func() prefix.Extractor
	// opt is the SetOptions value; "" means "install a new instance through
	// db.SwapPrefixExtractor" (a user type cannot be named in a string).
	opt string
}

var matrixExtractors = []matrixExtractor{
	{"fixed8", func() prefix.Extractor { return prefix.Fixed(8) }, "fixed:8"},
	{"fixed12", func() prefix.Extractor { return prefix.Fixed(12) }, "fixed:12"},
	{"fixed16", func() prefix.Extractor { return prefix.Fixed(16) }, "rocksdb.FixedPrefix.16"},
	{"capped4", func() prefix.Extractor { return prefix.Capped(4) }, "capped:4"},
	{"noop", func() prefix.Extractor { return prefix.Noop() }, "noop"},
	{"none", func() prefix.Extractor { return nil }, "nullptr"},
	{"user12", func() prefix.Extractor { return user12{} }, ""},
}

// matrixKey draws a key from a space with much sharing at 4, 8, 12 and 16
// bytes, cut to a random length (so that some keys are out of the domain
// of fixed extractors).
func matrixKey(rng *rand.Rand) []byte {
	chunks := [][]byte{[]byte("aaaa"), []byte("abab"), []byte("b\x00b\xff")}
	var k []byte
	for i := 0; i < 5; i++ {
		k = append(k, chunks[rng.Intn(len(chunks))]...)
	}
	return k[:rng.Intn(len(k)+1)]
}

// prefixEnv is a database and the model of its contents.
type prefixEnv struct {
	t     *testing.T
	rng   *rand.Rand
	fs    vfs.FS
	d     *db.DB
	model *testutil.Model
	ext   prefix.Extractor
}

func openPrefixEnv(t *testing.T, rng *rand.Rand, fs vfs.FS, e prefix.Extractor) *db.DB {
	d, err := db.Open("/db", &db.Options{CreateIfMissing: true, FS: fs, BloomBitsPerKey: 10,
		PrefixExtractor: e, DisableAutoCompactions: true, WriteBufferSize: 1 << 20})
	require.NoError(t, err)
	return d
}

// fill writes n random keys (a few deleted), flushing into tables every
// perTable keys.
func (p *prefixEnv) fill(n, perTable int) {
	for i := 0; i < n; i++ {
		k := matrixKey(p.rng)
		if p.rng.Intn(10) == 0 {
			require.NoError(p.t, p.d.Delete(k, nil))
			p.model.Delete(k)
		} else {
			v := []byte(strconv.Itoa(p.rng.Int()))
			require.NoError(p.t, p.d.Put(k, v, nil))
			p.model.Put(k, v)
		}
		if perTable > 0 && (i+1)%perTable == 0 {
			require.NoError(p.t, p.d.Flush())
		}
	}
}

// check compares Get, MultiGet, total-order Seek, PrefixSameAsStart
// iteration in both directions (with and without TotalOrderSeek) and
// bounded iteration (auto prefix mode) with the model.
func (p *prefixEnv) check(what string) {
	t := p.t
	keys := make([][]byte, 40)
	for i := range keys {
		keys[i] = matrixKey(p.rng)
	}
	for _, k := range keys {
		v, err := p.d.Get(k, nil)
		want, ok := p.model.Get(k)
		if ok {
			require.NoError(t, err, "%s: Get(%q)", what, k)
			require.Equal(t, want, v, "%s: Get(%q)", what, k)
		} else {
			require.ErrorIs(t, err, db.ErrNotFound, "%s: Get(%q)", what, k)
		}
	}
	vals, errs := p.d.MultiGet(keys, nil)
	for i, k := range keys {
		want, ok := p.model.Get(k)
		if ok {
			require.NoError(t, errs[i], "%s: MultiGet(%q)", what, k)
			require.Equal(t, want, vals[i], "%s: MultiGet(%q)", what, k)
		} else {
			require.ErrorIs(t, errs[i], db.ErrNotFound, "%s: MultiGet(%q)", what, k)
		}
	}
	for _, ro := range []db.ReadOptions{{}, {PrefixSameAsStart: true}, {PrefixSameAsStart: true, TotalOrderSeek: true}, {TotalOrderSeek: true}} {
		for _, k := range keys[:10] {
			p.checkSeek(what, ro, k, false)
			p.checkSeek(what, ro, k, true)
		}
	}
	// Auto prefix mode: an upper bound inside the seek key's prefix.
	for _, k := range keys[:10] {
		if len(k) == 0 {
			continue
		}
		upper := append(append([]byte{}, k...), 0xff, 0xff)
		p.checkSeek(what, db.ReadOptions{UpperBound: upper}, k, false)
		lower := k[:len(k)-1]
		p.checkSeek(what, db.ReadOptions{LowerBound: lower}, k, true)
	}
}

// checkSeek runs one Seek (or SeekForPrev) and a few steps each way,
// against the model iterator.
func (p *prefixEnv) checkSeek(what string, ro db.ReadOptions, k []byte, backward bool) {
	t := p.t
	it := p.d.NewIterator(&ro)
	defer func() { require.NoError(t, it.Close()) }()
	mi := testutil.NewModelIter(p.model.Range(ro.LowerBound, ro.UpperBound), p.ext, ro.PrefixSameAsStart)
	desc := fmt.Sprintf("%s: ro=%+v key=%q backward=%v", what, ro, k, backward)
	if backward {
		it.SeekForPrev(k)
		mi.SeekForPrev(k)
	} else {
		it.Seek(k)
		mi.Seek(k)
	}
	moves := []bool{true, true, true, false, false, false, false, true}
	if backward {
		moves = []bool{false, false, false, true, true, true, true, false}
	}
	for step := 0; ; step++ {
		require.NoError(t, it.Err(), desc)
		require.Equal(t, mi.Valid(), it.Valid(), "%s step %d", desc, step)
		if !mi.Valid() || step == len(moves) {
			return
		}
		e := mi.Entry()
		require.Equal(t, e.Key, string(it.Key()), "%s step %d", desc, step)
		require.Equal(t, e.Value, string(it.Value()), "%s step %d", desc, step)
		if moves[step] {
			it.Next()
			mi.Next()
		} else {
			it.Prev()
			mi.Prev()
		}
	}
}

// TestPrefixExtractorMatrix checks, for every pair (extractor the tables
// were built with, extractor in force), changed through SetOptions and
// through reopen, with tables from before and after the change and a
// memtable, that every read mode returns what a sorted map returns.
func TestPrefixExtractorMatrix(t *testing.T) {
	seed := testutil.Seed(t)
	for bi, built := range matrixExtractors {
		for ci, cur := range matrixExtractors {
			for _, how := range []string{"setoptions", "reopen"} {
				name := fmt.Sprintf("%s->%s/%s", built.name, cur.name, how)
				t.Run(name, func(t *testing.T) {
					rng := rand.New(rand.NewSource(seed + int64(bi*100+ci*10)))
					p := &prefixEnv{t: t, rng: rng, fs: vfs.NewMem(), model: testutil.NewModel(), ext: built.make()}
					p.d = openPrefixEnv(t, rng, p.fs, p.ext)
					defer func() { require.NoError(t, p.d.Close()) }()
					p.fill(300, 100)
					p.check("before")
					p.ext = cur.make()
					if how == "reopen" {
						require.NoError(t, p.d.Close())
						p.d = openPrefixEnv(t, rng, p.fs, p.ext)
					} else if cur.opt == "" {
						db.SwapPrefixExtractor(p.d, p.ext)
					} else {
						require.NoError(t, p.d.SetOptions(map[string]string{"prefix_extractor": cur.opt}))
					}
					p.check("after change, old tables")
					p.fill(250, 100) // two new tables and a memtable
					p.check("after change, mixed tables")
				})
			}
		}
	}
}

// counters reads the filter and prefix counters.
type counters struct{ checks, useful, fast, slow, incompatible uint64 }

func readCounters(t testing.TB, d *db.DB) counters {
	get := func(name string) uint64 {
		s, ok := d.GetProperty(name)
		require.True(t, ok, name)
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, name)
		return v
	}
	return counters{get(db.PropFilterChecks), get(db.PropFilterUseful), get(db.PropPrefixFastPath),
		get(db.PropPrefixSlowPath), get(db.PropPrefixIncompatible)}
}

func (c counters) sub(o counters) counters {
	return counters{c.checks - o.checks, c.useful - o.useful, c.fast - o.fast, c.slow - o.slow, c.incompatible - o.incompatible}
}

// counterKey is a 16-byte key whose 12-byte prefix is one of 100 and whose
// table is t: table t holds prefixes t*10 .. t*10+9 plus the key range
// ends, so that every seek reaches every table.
func counterKey(pfx, i int) []byte { return []byte(fmt.Sprintf("p%010d:%04d", pfx, i)) }

// TestPrefixCounters checks the counters of the prefix filter check: the
// fast path when nothing changed, one slow-path comparison per reader after
// a compatible swap and the fast path after it, and no filter use on
// incompatible tables.
func TestPrefixCounters(t *testing.T) {
	const tables = 5
	d, err := db.Open("/db", &db.Options{CreateIfMissing: true, FS: vfs.NewMem(), BloomBitsPerKey: 16,
		PrefixExtractor: prefix.Fixed(12), DisableAutoCompactions: true, CompactionStyle: db.FIFOCompaction})
	require.NoError(t, err)
	defer d.Close()
	for tb := 0; tb < tables; tb++ {
		require.NoError(t, d.Put([]byte("a"), nil, nil)) // every table spans the key space
		require.NoError(t, d.Put([]byte("z"), nil, nil))
		for pfx := tb * 10; pfx < tb*10+10; pfx++ {
			for i := 0; i < 3; i++ {
				require.NoError(t, d.Put(counterKey(pfx, i), []byte("v"), nil))
			}
		}
		require.NoError(t, d.Flush())
	}
	// seeks does n PrefixSameAsStart seeks, one per prefix, and checks that
	// each finds its prefix's three keys.
	// want is the number of keys a seek to prefix pfx yields: those of its
	// 12-byte prefix, or with fixed:8 in force every key from the seek key
	// on.
	want := func(pfx int) int { return 3 }
	// seeks runs n prefix seeks; each, if given, runs before every iterator.
	seeks := func(n int, each ...func()) counters {
		before := readCounters(t, d)
		for s := 0; s < n; s++ {
			pfx := s % (tables * 10)
			for _, f := range each {
				f()
			}
			it := d.NewIterator(&db.ReadOptions{PrefixSameAsStart: true})
			var got int
			for it.Seek(counterKey(pfx, 0)); it.Valid(); it.Next() {
				got++
			}
			require.NoError(t, it.Close())
			require.Equal(t, want(pfx), got, "prefix %d", pfx)
		}
		return readCounters(t, d).sub(before)
	}
	const n = 50
	// Nothing changed: every check takes the fast path; each seek keeps
	// one table of five.
	c := seeks(n)
	require.Equal(t, counters{checks: n * tables, useful: n * (tables - 1), fast: n * tables}, c, "unchanged")

	// The same Name through SetOptions keeps the handle: still fast.
	require.NoError(t, d.SetOptions(map[string]string{"prefix_extractor": "rocksdb.FixedPrefix.12"}))
	require.Equal(t, counters{checks: n * tables, useful: n * (tables - 1), fast: n * tables}, seeks(n), "same name")

	// A compatible extractor in a new instance: one slow-path comparison
	// per reader, then the fast path.
	db.SwapPrefixExtractor(d, user12{})
	require.Equal(t, counters{checks: n * tables, useful: n * (tables - 1), fast: n*tables - tables, slow: tables},
		seeks(n), "compatible swap")
	require.Equal(t, counters{checks: n * tables, useful: n * (tables - 1), fast: n * tables}, seeks(n), "after swap")

	// An incompatible extractor: no filter use at all, every check slow.
	require.NoError(t, d.SetOptions(map[string]string{"prefix_extractor": "fixed:8"}))
	want = func(pfx int) int { return 3 * (tables*10 - pfx) }
	c = seeks(n)
	want = func(pfx int) int { return 3 }
	require.Equal(t, counters{checks: n * tables, slow: n * tables, incompatible: n * tables}, c, "incompatible")

	// Back to fixed:12 (a new handle): one slow comparison per reader.
	require.NoError(t, d.SetOptions(map[string]string{"prefix_extractor": "fixed:12"}))
	require.Equal(t, counters{checks: n * tables, useful: n * (tables - 1), fast: n*tables - tables, slow: tables},
		seeks(n), "swap back")

	// TotalOrderSeek never consults filters.
	before := readCounters(t, d)
	it := d.NewIterator(&db.ReadOptions{PrefixSameAsStart: true, TotalOrderSeek: true})
	it.Seek(counterKey(7, 0))
	require.True(t, it.Valid())
	require.NoError(t, it.Close())
	require.Equal(t, counters{}, readCounters(t, d).sub(before), "total order")

	// A new handle (same Name) before every iterator: every check compares
	// Names once more, as every check did before RocksDB PR 9407.
	require.Equal(t, counters{checks: n * tables, useful: n * (tables - 1), slow: n * tables},
		seeks(n, db.NewPrefixHandleRotator(d)), "new handle every seek")

	// Gets use whole-key entries: no prefix check. A Get stops at the
	// newest table holding its key, so the key of table tb costs
	// tables-tb filter checks.
	before = readCounters(t, d)
	for pfx := 0; pfx < tables*10; pfx++ {
		_, err := d.Get(counterKey(pfx, 1), nil)
		require.NoError(t, err)
	}
	c = readCounters(t, d).sub(before)
	require.Equal(t, uint64(0), c.fast+c.slow+c.incompatible, "Get uses whole-key entries")
	require.Equal(t, uint64(10*(5+4+3+2+1)), c.checks)
}

// TestPrefixCountersNewTables checks that tables written after a swap to an
// incompatible extractor carry the new Name: their filters are used (fast
// path), while the older tables' are not.
func TestPrefixCountersNewTables(t *testing.T) {
	d, err := db.Open("/db", &db.Options{CreateIfMissing: true, FS: vfs.NewMem(), BloomBitsPerKey: 16,
		PrefixExtractor: prefix.Fixed(12), DisableAutoCompactions: true})
	require.NoError(t, err)
	defer d.Close()
	write := func(pfx int) {
		require.NoError(t, d.Put([]byte("a"), nil, nil))
		require.NoError(t, d.Put([]byte("z"), nil, nil))
		require.NoError(t, d.Put(counterKey(pfx, 0), []byte("v"), nil))
		require.NoError(t, d.Flush())
	}
	write(1)
	write(2)
	require.NoError(t, d.SetOptions(map[string]string{"prefix_extractor": "fixed:8"}))
	write(3)
	before := readCounters(t, d)
	it := d.NewIterator(&db.ReadOptions{PrefixSameAsStart: true})
	it.Seek([]byte("p0000000")) // fixed:8 prefix "p0000000": all three keys
	n := 0
	for ; it.Valid(); it.Next() {
		n++
	}
	require.NoError(t, it.Close())
	require.Equal(t, 3, n)
	c := readCounters(t, d).sub(before)
	require.Equal(t, counters{checks: 3, fast: 1, slow: 2, incompatible: 2}, c)
}

// TestPrefixAutoModeDirections checks that a filter chosen for a bounded
// forward seek (auto prefix mode) does not hide keys from a later Prev or
// from SeekForPrev, which move below the seek key's prefix.
func TestPrefixAutoModeDirections(t *testing.T) {
	d, err := db.Open("/db", &db.Options{CreateIfMissing: true, FS: vfs.NewMem(), BloomBitsPerKey: 16,
		PrefixExtractor: prefix.Fixed(4), DisableAutoCompactions: true})
	require.NoError(t, err)
	defer d.Close()
	for _, k := range []string{"aaaa1", "bbbb5", "cccc1"} {
		require.NoError(t, d.Put([]byte(k), []byte(k), nil))
		// Every table also holds zzzz0, past the bound: the tables
		// overlap, so each is a merge child of its own (disjoint L0
		// tables would be one concatenation, whose seek opens only the
		// table at the seek key, filter or not).
		require.NoError(t, d.Put([]byte("zzzz0"), []byte(k), nil))
		require.NoError(t, d.Flush())
	}
	ro := &db.ReadOptions{UpperBound: []byte("bbbb9")}
	it := d.NewIterator(ro)
	it.Seek([]byte("bbbb3"))
	require.True(t, it.Valid())
	require.Equal(t, "bbbb5", string(it.Key()))
	it.Prev()
	require.True(t, it.Valid(), "Prev after a bounded seek")
	require.Equal(t, "aaaa1", string(it.Key()))
	it.SeekForPrev([]byte("bbbb3"))
	require.True(t, it.Valid(), "SeekForPrev")
	require.Equal(t, "aaaa1", string(it.Key()))
	it.Seek([]byte("bbbb3"))
	require.Equal(t, "bbbb5", string(it.Key()))
	it.Next()
	require.False(t, it.Valid())
	it.SeekToFirst()
	require.Equal(t, "aaaa1", string(it.Key()))
	require.NoError(t, it.Close())

	// The bounded seek does use the filter: cccc1's table is not read, and
	// aaaa1's is skipped by its filter.
	before := readCounters(t, d)
	it = d.NewIterator(ro)
	it.Seek([]byte("bbbb3"))
	require.Equal(t, "bbbb5", string(it.Key()))
	require.NoError(t, it.Close())
	c := readCounters(t, d).sub(before)
	require.Equal(t, uint64(1), c.useful, "%+v", c)
}

// TestPrefixSetOptionsRace races SetOptions (compatible, incompatible and
// no extractor) with Gets, MultiGets and iterators over tables built with
// several extractors; run it under -race.
func TestPrefixSetOptionsRace(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	fs := vfs.NewMem()
	p := &prefixEnv{t: t, rng: rng, fs: fs, model: testutil.NewModel(), ext: prefix.Fixed(12)}
	p.d = openPrefixEnv(t, rng, fs, p.ext)
	defer func() { require.NoError(t, p.d.Close()) }()
	opts := []string{"fixed:12", "fixed:8", "capped:4", "noop", "nullptr"}
	for _, o := range opts {
		require.NoError(t, p.d.SetOptions(map[string]string{"prefix_extractor": o}))
		p.fill(150, 150)
	}
	exts := []prefix.Extractor{nil, prefix.Fixed(12), prefix.Fixed(8), prefix.Capped(4), prefix.Noop(), user12{}}
	stop := make(chan struct{})
	// The goroutines assert through rep; the test goroutine checks it.
	rep := &testutil.Reporter{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewSource(1))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%7 == 0 {
				db.SwapPrefixExtractor(p.d, user12{})
				continue
			}
			require.NoError(rep, p.d.SetOptions(map[string]string{"prefix_extractor": opts[r.Intn(len(opts))]}))
		}
	}()
	var readers sync.WaitGroup
	for g := 0; g < 3; g++ {
		readers.Add(1)
		go func(seed int64) {
			defer readers.Done()
			r := rand.New(rand.NewSource(seed))
			for i := 0; i < 150 && !rep.Failed(); i++ {
				k := matrixKey(r)
				want, ok := p.model.Get(k)
				v, err := p.d.Get(k, nil)
				if ok {
					require.NoError(rep, err)
					require.Equal(rep, want, v)
				} else {
					require.ErrorIs(rep, err, db.ErrNotFound)
				}
				vals, errs := p.d.MultiGet([][]byte{k, matrixKey(r)}, nil)
				require.Equal(rep, want, vals[0])
				require.Equal(rep, ok, errs[0] == nil)
				racePrefixSeek(rep, p, k, exts)
			}
		}(int64(g))
	}
	readers.Wait()
	close(stop)
	wg.Wait()
	require.NoError(t, rep.Err())
}

// racePrefixSeek runs a PrefixSameAsStart scan from k while the extractor
// changes: the result must be the model's under one of the extractors.
func racePrefixSeek(t require.TestingT, p *prefixEnv, k []byte, exts []prefix.Extractor) {
	it := p.d.NewIterator(&db.ReadOptions{PrefixSameAsStart: true})
	var got []string
	for it.Seek(k); it.Valid() && len(got) < 20; it.Next() {
		got = append(got, string(it.Key()))
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	for _, e := range exts {
		mi := testutil.NewModelIter(p.model.Range(nil, nil), e, true)
		var want []string
		for mi.Seek(k); mi.Valid() && len(want) < 20; mi.Next() {
			want = append(want, mi.Entry().Key)
		}
		if equalStrings(got, want) {
			return
		}
	}
	require.Failf(t, "no extractor matches", "PrefixSameAsStart scan from %q: %q", k, got)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestGetPrefixOnlyFilter checks Get's use of prefix entries on a table
// built without whole-key filtering (as RocksDB writes with
// whole_key_filtering=false): keys whose prefix is absent are ruled out
// with a compatible extractor, never with an incompatible one.
func TestGetPrefixOnlyFilter(t *testing.T) {
	var present, absentPrefix [][]byte
	for i := 0; i < 50; i++ {
		present = append(present, counterKey(i*2, i))
		absentPrefix = append(absentPrefix, counterKey(i*2+1, i))
	}
	for _, tc := range []struct {
		ext          prefix.Extractor
		compatible   bool
		wantRejected int
	}{{prefix.Fixed(12), true, 45}, {user12{}, true, 45}, {prefix.Fixed(8), false, 0}, {nil, false, 0}} {
		d, err := db.Open("/db", &db.Options{CreateIfMissing: true, FS: vfs.NewMem(), PrefixExtractor: tc.ext})
		require.NoError(t, err)
		probe := db.NewPrefixOnlyTableProbe(t, d, prefix.Fixed(12), present)
		for _, k := range present {
			require.True(t, probe(k), "present key %q", k)
		}
		rejected := 0
		for _, k := range absentPrefix {
			if !probe(k) {
				rejected++
			}
		}
		if tc.compatible {
			require.GreaterOrEqual(t, rejected, tc.wantRejected, "%v", tc.ext)
		} else {
			require.Equal(t, 0, rejected)
		}
		c := readCounters(t, d)
		if tc.ext != nil && tc.compatible {
			require.Equal(t, uint64(0), c.incompatible)
		}
		if tc.ext != nil && !tc.compatible {
			require.Equal(t, uint64(len(present)+len(absentPrefix)), c.incompatible)
		}
		require.NoError(t, d.Close())
	}
}
