package db_test

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/memtable"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/internal/vfs/errorfs"
	"github.com/stratadb/strata/prefix"
	"github.com/stretchr/testify/require"
)

// The bounds sweep: every Options field and every SetOptions key at its
// edges (negative, zero, one, the largest accepted value, one past it, the
// type's maximum), write and read option combinations, batch and key sizes,
// and the Iterator used out of order. Each row either works (a short
// put/get/flush/reopen round trip) or returns an error that wraps
// ErrInvalidArgument and names the option or size. A panic is a failure
// reported on the test goroutine.

// noPanic runs f and turns a panic into an error.
func noPanic(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return f()
}

// requireNoPanic fails the test if f panics.
func requireNoPanic(t *testing.T, what string, f func()) {
	t.Helper()
	err := noPanic(func() error { f(); return nil })
	require.NoError(t, err, what)
}

// requireInvalid checks that err wraps ErrInvalidArgument and names want.
func requireInvalid(t *testing.T, err error, want string) {
	t.Helper()
	require.Error(t, err)
	require.NotContains(t, err.Error(), "panic:")
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.Contains(t, err.Error(), want)
}

// roundTrip writes, reads, flushes, reopens and reads again. lossy rows
// (FIFO with a tiny size limit) may drop the flushed data by design.
func roundTrip(fs vfs.FS, o db.Options, lossy bool) error {
	o.FS, o.CreateIfMissing = fs, true
	d, err := db.Open("/db", &o)
	if err != nil {
		return err
	}
	check := func(d *db.DB, when string) error {
		v, err := d.Get([]byte("k"), nil)
		if err != nil {
			return errors.Wrapf(err, "Get %s", when)
		}
		if string(v) != "v" {
			return errors.Newf("Get %s = %q", when, v)
		}
		return nil
	}
	steps := func() error {
		if err := d.Put([]byte("k"), []byte("v"), nil); err != nil {
			return err
		}
		if err := d.Put([]byte("k2"), []byte("v2"), &db.WriteOptions{Sync: true}); err != nil {
			return err
		}
		if err := check(d, "before flush"); err != nil {
			return err
		}
		if err := d.Flush(); err != nil {
			return err
		}
		it := d.NewIterator(nil)
		n := 0
		for it.SeekToFirst(); it.Valid(); it.Next() {
			n++
		}
		if err := errors.CombineErrors(it.Err(), it.Close()); err != nil {
			return err
		}
		if !lossy && n != 2 {
			return errors.Newf("iteration saw %d keys, want 2", n)
		}
		return nil
	}
	if err := steps(); err != nil {
		_ = d.Close()
		return err
	}
	if err := d.Close(); err != nil {
		return err
	}
	o.CreateIfMissing = false
	d, err = db.Open("/db", &o)
	if err != nil {
		return errors.Wrap(err, "reopen")
	}
	if !lossy {
		err = check(d, "after reopen")
	}
	return errors.CombineErrors(err, d.Close())
}

// int64Limit is v as an int, for rows that test 64-bit limits; it is a
// function so that the file compiles on 32-bit platforms, where those tests
// skip.
func int64Limit(v int64) int { return int(v) }

func skipOn32Bit(t *testing.T) {
	if strconv.IntSize < 64 {
		t.Skip("the rows test 64-bit limits")
	}
}

func TestOptionsBounds(t *testing.T) {
	skipOn32Bit(t)
	type row struct {
		name  string // the option; an error must name it
		set   func(o *db.Options)
		ok    bool
		lossy bool
	}
	const maxArena = memtable.MaxArenaSize
	rows := []row{
		{"WriteBufferSize", func(o *db.Options) { o.WriteBufferSize = -1 }, false, false},
		{"WriteBufferSize", func(o *db.Options) { o.WriteBufferSize = math.MinInt }, false, false},
		{"WriteBufferSize", func(o *db.Options) { o.WriteBufferSize = 0 }, true, false},
		{"WriteBufferSize", func(o *db.Options) { o.WriteBufferSize = 1 }, false, false}, // every write would flush
		{"WriteBufferSize", func(o *db.Options) { o.WriteBufferSize = 255 }, false, false},
		{"WriteBufferSize", func(o *db.Options) { o.WriteBufferSize = 256 }, true, false},
		{"WriteBufferSize", func(o *db.Options) { o.WriteBufferSize = int64Limit(maxArena + 1) }, false, false},
		{"WriteBufferSize", func(o *db.Options) { o.WriteBufferSize = int64Limit(1 << 40) }, false, false},
		{"WriteBufferSize", func(o *db.Options) { o.WriteBufferSize = math.MaxInt }, false, false},

		{"MaxWriteBufferNumber", func(o *db.Options) { o.MaxWriteBufferNumber = -1 }, false, false},
		{"MaxWriteBufferNumber", func(o *db.Options) { o.MaxWriteBufferNumber = 1 }, false, false},
		{"MaxWriteBufferNumber", func(o *db.Options) { o.MaxWriteBufferNumber = 2 }, true, false},
		{"MaxWriteBufferNumber", func(o *db.Options) { o.MaxWriteBufferNumber = math.MaxInt }, true, false},

		{"BloomBitsPerKey", func(o *db.Options) { o.BloomBitsPerKey = -1 }, false, false},
		{"BloomBitsPerKey", func(o *db.Options) { o.BloomBitsPerKey = 1 }, true, false},
		{"BloomBitsPerKey", func(o *db.Options) { o.BloomBitsPerKey = 1000 }, true, false},
		{"BloomBitsPerKey", func(o *db.Options) { o.BloomBitsPerKey = math.MaxInt }, true, false},

		{"PrefixExtractor", func(o *db.Options) { o.PrefixExtractor = prefix.Fixed(1 << 20) }, true, false},
		{"PrefixExtractor", func(o *db.Options) { o.PrefixExtractor = prefix.Capped(1) }, true, false},
		{"PrefixExtractor", func(o *db.Options) { o.PrefixExtractor = prefix.Noop() }, true, false},

		{"Compression", func(o *db.Options) { o.Compression = -1 }, false, false},
		{"Compression", func(o *db.Options) { o.Compression = db.ZstdCompression + 1 }, false, false},
		{"Compression", func(o *db.Options) { o.Compression = db.SnappyCompression }, true, false},
		{"Compression", func(o *db.Options) { o.Compression = db.ZstdCompression }, true, false},

		{"CompactionStyle", func(o *db.Options) { o.CompactionStyle = -1 }, false, false},
		{"CompactionStyle", func(o *db.Options) { o.CompactionStyle = db.FIFOCompaction + 1 }, false, false},
		{"CompactionStyle", func(o *db.Options) { o.CompactionStyle = db.FIFOCompaction }, true, false},

		{"FIFOMaxTableFilesSize", func(o *db.Options) { o.FIFOMaxTableFilesSize = -1 }, false, false},
		{"FIFOMaxTableFilesSize", func(o *db.Options) {
			o.CompactionStyle, o.FIFOMaxTableFilesSize = db.FIFOCompaction, 1
		}, true, true},
		{"FIFOMaxTableFilesSize", func(o *db.Options) {
			o.CompactionStyle, o.FIFOMaxTableFilesSize, o.FIFOAllowCompaction = db.FIFOCompaction, math.MaxInt64, true
		}, true, false},

		{"DisableAutoCompactions", func(o *db.Options) { o.DisableAutoCompactions = true }, true, false},

		{"BlockCacheSize", func(o *db.Options) { o.BlockCacheSize = -1 }, false, false},
		{"BlockCacheSize", func(o *db.Options) { o.BlockCacheSize = 1 }, true, false},
		{"BlockCacheSize", func(o *db.Options) { o.BlockCacheSize = math.MaxInt64 }, true, false},

		{"HighPriPoolRatio", func(o *db.Options) { o.HighPriPoolRatio = -0.1 }, false, false},
		{"HighPriPoolRatio", func(o *db.Options) { o.HighPriPoolRatio = 1.01 }, false, false},
		{"HighPriPoolRatio", func(o *db.Options) { o.HighPriPoolRatio = math.NaN() }, false, false},
		{"HighPriPoolRatio", func(o *db.Options) { o.HighPriPoolRatio = math.Inf(1) }, false, false},
		{"HighPriPoolRatio", func(o *db.Options) { o.HighPriPoolRatio = 1 }, true, false},
		{"HighPriPoolRatio", func(o *db.Options) {
			o.HighPriPoolRatio, o.CacheIndexAndFilterBlocks = 0.01, true
		}, true, false},
		{"DisableCacheIndexAndFilterBlocksWithHighPriority", func(o *db.Options) {
			o.DisableCacheIndexAndFilterBlocksWithHighPriority, o.CacheIndexAndFilterBlocks = true, true
		}, true, false},

		{"MaxOpenFiles", func(o *db.Options) { o.MaxOpenFiles = -1 }, false, false},
		{"MaxOpenFiles", func(o *db.Options) { o.MaxOpenFiles = 1 }, true, false},
		{"MaxOpenFiles", func(o *db.Options) { o.MaxOpenFiles = math.MaxInt }, true, false},

		{"BlockSize", func(o *db.Options) { o.BlockSize = -1 }, false, false},
		{"BlockSize", func(o *db.Options) { o.BlockSize = 1 }, true, false},
		{"BlockSize", func(o *db.Options) { o.BlockSize = int64Limit(math.MaxUint32) }, true, false},
		{"BlockSize", func(o *db.Options) { o.BlockSize = int64Limit(math.MaxUint32 + 1) }, false, false},
		{"BlockSize", func(o *db.Options) { o.BlockSize = math.MaxInt }, false, false},

		{"Level0FileNumCompactionTrigger", func(o *db.Options) { o.Level0FileNumCompactionTrigger = -1 }, false, false},
		{"Level0FileNumCompactionTrigger", func(o *db.Options) { o.Level0FileNumCompactionTrigger = 1 }, true, false},
		{"Level0SlowdownWritesTrigger", func(o *db.Options) { o.Level0FileNumCompactionTrigger = 21 }, false, false},
		{"Level0SlowdownWritesTrigger", func(o *db.Options) { o.Level0SlowdownWritesTrigger = -1 }, false, false},
		{"Level0SlowdownWritesTrigger", func(o *db.Options) { o.Level0SlowdownWritesTrigger = 3 }, false, false},
		{"Level0StopWritesTrigger", func(o *db.Options) { o.Level0StopWritesTrigger = -1 }, false, false},
		{"Level0StopWritesTrigger", func(o *db.Options) { o.Level0StopWritesTrigger = 19 }, false, false},
		{"Level0StopWritesTrigger", func(o *db.Options) {
			o.Level0FileNumCompactionTrigger, o.Level0SlowdownWritesTrigger, o.Level0StopWritesTrigger = 1, 1, 1
		}, true, false},
		{"Level0StopWritesTrigger", func(o *db.Options) {
			o.Level0FileNumCompactionTrigger, o.Level0SlowdownWritesTrigger, o.Level0StopWritesTrigger = math.MaxInt, math.MaxInt, math.MaxInt
		}, true, false},

		{"TargetFileSizeBase", func(o *db.Options) { o.TargetFileSizeBase = -1 }, false, false},
		{"TargetFileSizeBase", func(o *db.Options) { o.TargetFileSizeBase = 1 }, true, false},
		{"TargetFileSizeBase", func(o *db.Options) { o.TargetFileSizeBase = math.MaxInt64 / 10 }, true, false},
		{"TargetFileSizeBase", func(o *db.Options) { o.TargetFileSizeBase = math.MaxInt64/10 + 1 }, false, false},
		{"TargetFileSizeBase", func(o *db.Options) { o.TargetFileSizeBase = math.MaxInt64 }, false, false},

		{"MaxBytesForLevelBase", func(o *db.Options) { o.MaxBytesForLevelBase = -1 }, false, false},
		{"MaxBytesForLevelBase", func(o *db.Options) { o.MaxBytesForLevelBase = 1 }, true, false},
		{"MaxBytesForLevelBase", func(o *db.Options) { o.MaxBytesForLevelBase = math.MaxInt64 }, true, false},

		{"MaxBytesForLevelMultiplier", func(o *db.Options) { o.MaxBytesForLevelMultiplier = -1 }, false, false},
		{"MaxBytesForLevelMultiplier", func(o *db.Options) { o.MaxBytesForLevelMultiplier = 1 }, true, false},
		{"MaxBytesForLevelMultiplier", func(o *db.Options) { o.MaxBytesForLevelMultiplier = 1000 }, true, false},
		{"MaxBytesForLevelMultiplier", func(o *db.Options) { o.MaxBytesForLevelMultiplier = 1001 }, false, false},
		{"MaxBytesForLevelMultiplier", func(o *db.Options) { o.MaxBytesForLevelMultiplier = math.MaxInt }, false, false},

		{"MaxBackgroundJobs", func(o *db.Options) { o.MaxBackgroundJobs = -1 }, false, false},
		{"MaxBackgroundJobs", func(o *db.Options) { o.MaxBackgroundJobs = 1 }, true, false},
		{"MaxBackgroundJobs", func(o *db.Options) { o.MaxBackgroundJobs = math.MaxInt }, true, false},

		{"SoftPendingCompactionBytesLimit", func(o *db.Options) { o.SoftPendingCompactionBytesLimit = -1 }, false, false},
		{"SoftPendingCompactionBytesLimit", func(o *db.Options) { o.SoftPendingCompactionBytesLimit = 1 }, true, false},
		{"SoftPendingCompactionBytesLimit", func(o *db.Options) { o.SoftPendingCompactionBytesLimit = math.MaxInt64 }, true, false},
		{"HardPendingCompactionBytesLimit", func(o *db.Options) { o.HardPendingCompactionBytesLimit = -1 }, false, false},
		{"HardPendingCompactionBytesLimit", func(o *db.Options) { o.HardPendingCompactionBytesLimit = 1 }, true, false},
		{"HardPendingCompactionBytesLimit", func(o *db.Options) { o.HardPendingCompactionBytesLimit = math.MaxInt64 }, true, false},
	}
	for i, r := range rows {
		// The memtable stays small unless the row is about its size.
		o := db.Options{WriteBufferSize: 64 << 10}
		r.set(&o)
		fs := vfs.NewMem()
		err := noPanic(func() error { return roundTrip(fs, o, r.lossy) })
		what := fmt.Sprintf("row %d: %s in %+v", i, r.name, o)
		if r.ok {
			require.NoError(t, err, what)
			continue
		}
		requireInvalid(t, err, r.name)
		// A refused Open creates nothing.
		names, lerr := fs.List("/db")
		if lerr == nil {
			require.Empty(t, names, what)
		}
	}
}

func TestOptionsBoundsOpenModes(t *testing.T) {
	fs := vfs.NewMem()
	// A missing directory without CreateIfMissing: an error, no panic.
	for _, o := range []db.Options{{FS: fs, ReadOnly: true}, {FS: fs}} {
		err := noPanic(func() error { _, err := db.Open("/db", &o); return err })
		require.Error(t, err)
		require.NotContains(t, err.Error(), "panic:")
	}
	// ReadOnly or no CreateIfMissing on an empty directory.
	require.NoError(t, fs.MkdirAll("/db", 0o755))
	for _, o := range []db.Options{{FS: fs, ReadOnly: true}, {FS: fs}} {
		var d *db.DB
		err := noPanic(func() (err error) { d, err = db.Open("/db", &o); return err })
		requireInvalid(t, err, "CreateIfMissing")
		require.Nil(t, d)
	}
	require.NoError(t, roundTrip(fs, db.Options{WriteBufferSize: 64 << 10}, false))
	err := noPanic(func() error {
		_, err := db.Open("/db", &db.Options{FS: fs, ErrorIfExists: true})
		return err
	})
	requireInvalid(t, err, "ErrorIfExists")
	// ReadOnly with every write kind.
	d, err := db.Open("/db", &db.Options{FS: fs, ReadOnly: true})
	require.NoError(t, err)
	b := db.NewBatch()
	b.Put([]byte("a"), nil)
	for _, err := range []error{
		d.Put([]byte("a"), nil, nil), d.Delete([]byte("a"), nil),
		d.DeleteRange([]byte("a"), []byte("b"), nil), d.Write(b, nil),
	} {
		require.ErrorIs(t, err, db.ErrReadOnly)
	}
	require.NoError(t, d.Close())
}

func TestSetOptionsBounds(t *testing.T) {
	skipOn32Bit(t)
	type row struct {
		key, value string
		ok         bool
	}
	big := strconv.FormatInt(math.MaxInt64, 10)
	rows := []row{
		{"write_buffer_size", "0", false},
		{"write_buffer_size", "-1", false},
		{"write_buffer_size", "1", false}, // every write would flush
		{"write_buffer_size", "255", false},
		{"write_buffer_size", "256", true},
		{"write_buffer_size", " 65536 ", true},
		{"write_buffer_size", strconv.FormatInt(memtable.MaxArenaSize, 10), true},
		{"write_buffer_size", strconv.FormatInt(memtable.MaxArenaSize+1, 10), false},
		{"write_buffer_size", big, false},
		{"write_buffer_size", "99999999999999999999", false},
		{"write_buffer_size", "1e6", false},
		{"write_buffer_size", "0x10", false},
		{"write_buffer_size", "", false},
		{"write_buffer_size", "abc", false},

		{"disable_auto_compactions", "true", true},
		{"disable_auto_compactions", "false", true},
		{"disable_auto_compactions", "1", false},
		{"disable_auto_compactions", "TRUE", false},
		{"disable_auto_compactions", "", false},

		{"prefix_extractor", "", true},
		{"prefix_extractor", "nullptr", true},
		{"prefix_extractor", "rocksdb.FixedPrefix.3", true},
		{"prefix_extractor", "capped:1", true},
		{"prefix_extractor", "fixed:0", false},
		{"prefix_extractor", "capped:-1", false},
		{"prefix_extractor", "fixed:99999999999999999999", false},
		{"prefix_extractor", "bogus:2", false},

		{"target_file_size_base", "1", true},
		{"target_file_size_base", strconv.FormatInt(math.MaxInt64/10, 10), true},
		{"target_file_size_base", strconv.FormatInt(math.MaxInt64/10+1, 10), false},
		{"target_file_size_base", big, false},
		{"target_file_size_base", "0", false},

		{"max_bytes_for_level_multiplier", "1", false},
		{"max_bytes_for_level_multiplier", "1.5", true},
		{"max_bytes_for_level_multiplier", "1000", true},
		{"max_bytes_for_level_multiplier", "1000.5", false},
		{"max_bytes_for_level_multiplier", "NaN", false},
		{"max_bytes_for_level_multiplier", "Inf", false},
		{"max_bytes_for_level_multiplier", "-Inf", false},
		{"max_bytes_for_level_multiplier", "1e308", false},
		{"max_bytes_for_level_multiplier", "", false},

		{"max_open_files", "100", false}, // immutable
		{"no_such_option", "1", false},
		{"", "", false},
	}
	for _, key := range []string{
		"level0_file_num_compaction_trigger", "level0_slowdown_writes_trigger",
		"level0_stop_writes_trigger", "max_bytes_for_level_base", "max_background_jobs",
	} {
		rows = append(rows, row{key, "0", false},
			row{key, "-1", false}, row{key, "99999999999999999999", false}, row{key, "1.5", false})
	}
	// The L0 triggers must stay ordered as Open requires (compaction <=
	// slowdown <= stop; the others are 4, 20, 36 here), or writes would
	// stall for good.
	rows = append(rows,
		row{"level0_file_num_compaction_trigger", "1", true},
		row{"level0_file_num_compaction_trigger", "20", true},
		row{"level0_file_num_compaction_trigger", "21", false},
		row{"level0_file_num_compaction_trigger", big, false},
		row{"level0_slowdown_writes_trigger", "4", true},
		row{"level0_slowdown_writes_trigger", "3", false},
		row{"level0_slowdown_writes_trigger", "36", true},
		row{"level0_slowdown_writes_trigger", "37", false},
		row{"level0_stop_writes_trigger", "20", true},
		row{"level0_stop_writes_trigger", "19", false},
		row{"level0_stop_writes_trigger", "1", false},
		row{"level0_stop_writes_trigger", big, true},
		row{"max_bytes_for_level_base", "1", true}, row{"max_bytes_for_level_base", big, true},
		row{"max_background_jobs", "1", true}, row{"max_background_jobs", big, true},
	)

	fs := vfs.NewMem()
	d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true, WriteBufferSize: 64 << 10})
	require.NoError(t, err)
	defaults := map[string]string{
		"write_buffer_size": "65536", "disable_auto_compactions": "false", "prefix_extractor": "",
		"target_file_size_base": "67108864", "max_bytes_for_level_multiplier": "10",
		"level0_file_num_compaction_trigger": "4", "level0_slowdown_writes_trigger": "20",
		"level0_stop_writes_trigger": "36", "max_bytes_for_level_base": "268435456", "max_background_jobs": "2",
	}
	for i, r := range rows {
		what := fmt.Sprintf("row %d: %q=%q", i, r.key, r.value)
		before := db.MutableOptionsState(d)
		// A bad value next to a good one: nothing may change.
		opts := map[string]string{r.key: r.value}
		if r.key != "write_buffer_size" {
			opts["write_buffer_size"] = "32768"
		}
		err := noPanic(func() error { return d.SetOptions(opts) })
		if r.ok {
			require.NoError(t, err, what)
		} else {
			require.Error(t, err, what)
			requireInvalid(t, err, strconv.Quote(r.key))
			require.Contains(t, err.Error(), strconv.Quote(r.value), what)
			require.Equal(t, before, db.MutableOptionsState(d), what)
		}
		// Back to sane values (a 4 GiB memtable must not be allocated),
		// then a write and a read.
		require.NoError(t, d.SetOptions(defaults), what)
		require.NoError(t, noPanic(func() error { return d.Put([]byte("k"), []byte(r.value), nil) }), what)
		v, err := d.Get([]byte("k"), nil)
		require.NoError(t, err, what)
		require.Equal(t, r.value, string(v), what)
	}
	require.NoError(t, d.Close())
	requireErrClosed(t, d.SetOptions(map[string]string{"write_buffer_size": "1"}))
}

func requireErrClosed(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, db.ErrClosed)
}

// TestSetOptionsAtomicOnFileError: when the OPTIONS file cannot be written
// SetOptions fails and no option changes.
func TestSetOptionsAtomicOnFileError(t *testing.T) {
	toggle := errorfs.NewToggle().PathContains("OPTIONS")
	fs := errorfs.Wrap(vfs.NewMem(), toggle)
	d, err := db.Open("/db", &db.Options{FS: fs, CreateIfMissing: true, WriteBufferSize: 64 << 10})
	require.NoError(t, err)
	before := db.MutableOptionsState(d)
	toggle.Enable()
	err = d.SetOptions(map[string]string{
		"write_buffer_size": "32768", "disable_auto_compactions": "true", "prefix_extractor": "fixed:2",
		"level0_file_num_compaction_trigger": "2", "max_bytes_for_level_multiplier": "4",
	})
	require.Error(t, err)
	require.Equal(t, before, db.MutableOptionsState(d))
	toggle.Disable()
	require.NoError(t, d.SetOptions(map[string]string{"write_buffer_size": "32768"}))
	require.NotEqual(t, before, db.MutableOptionsState(d))
	require.NoError(t, d.Close())
}

func TestWriteOptionsBounds(t *testing.T) {
	d, err := db.Open("/db", &db.Options{FS: vfs.NewMem(), CreateIfMissing: true, WriteBufferSize: 64 << 10})
	require.NoError(t, err)
	for _, wo := range []*db.WriteOptions{nil, {}, {Sync: true}, {DisableWAL: true}} {
		require.NoError(t, noPanic(func() error { return d.Put([]byte("k"), []byte("v"), wo) }), "%+v", wo)
	}
	bad := &db.WriteOptions{Sync: true, DisableWAL: true}
	b := db.NewBatch()
	b.Put([]byte("x"), []byte("y"))
	for _, err := range []error{
		d.Put([]byte("x"), []byte("y"), bad), d.Delete([]byte("k"), bad),
		d.DeleteRange([]byte("a"), []byte("z"), bad), d.Write(b, bad),
	} {
		requireInvalid(t, err, "DisableWAL")
	}
	_, err = d.Get([]byte("x"), nil)
	require.ErrorIs(t, err, db.ErrNotFound)
	v, err := d.Get([]byte("k"), nil)
	require.NoError(t, err)
	require.Equal(t, "v", string(v))

	// DeleteRange bounds: start > end is refused, start == end is a no-op,
	// an inverted range in a batch deletes nothing.
	requireInvalid(t, d.DeleteRange([]byte("z"), []byte("a"), nil), "DeleteRange")
	require.NoError(t, d.DeleteRange([]byte("k"), []byte("k"), nil))
	require.NoError(t, d.DeleteRange(nil, nil, nil))
	b.Reset()
	b.DeleteRange([]byte("z"), []byte("a"))
	require.NoError(t, d.Write(b, nil))
	_, err = d.Get([]byte("k"), nil)
	require.NoError(t, err)
	requireInvalid(t, d.Write(nil, nil), "batch")
	require.NoError(t, d.Write(db.NewBatch(), nil))
	var zero db.Batch // the zero Batch is usable, like NewBatch's
	require.NoError(t, noPanic(func() error { return d.Write(&zero, nil) }))
	zero.Put(nil, nil)
	require.NoError(t, noPanic(func() error { return d.Write(&zero, nil) }))
	// CompactRange bounds.
	requireInvalid(t, noPanic(func() error { return d.CompactRange([]byte("z"), []byte("a")) }), "CompactRange")
	require.NoError(t, noPanic(func() error { return d.CompactRange([]byte("k"), []byte("k")) }))
	require.NoError(t, noPanic(func() error { return d.CompactRange(nil, nil) }))
	require.NoError(t, d.Close())
}

func TestReadOptionsBounds(t *testing.T) {
	d, err := db.Open("/db", &db.Options{FS: vfs.NewMem(), CreateIfMissing: true, WriteBufferSize: 64 << 10})
	require.NoError(t, err)
	for _, k := range []string{"a", "b", "c"} {
		require.NoError(t, d.Put([]byte(k), []byte(k), nil))
	}
	count := func(ro *db.ReadOptions) (n int, err error) {
		err = noPanic(func() error {
			it := d.NewIterator(ro)
			for it.SeekToFirst(); it.Valid(); it.Next() {
				n++
			}
			for it.SeekToLast(); it.Valid(); it.Prev() {
				n++
			}
			it.Seek([]byte("b"))
			it.SeekForPrev([]byte("b"))
			return errors.CombineErrors(it.Err(), it.Close())
		})
		return n, err
	}
	// Inverted and empty bounds give empty iteration.
	for _, ro := range []*db.ReadOptions{
		{LowerBound: []byte("c"), UpperBound: []byte("a")},
		{LowerBound: []byte("b"), UpperBound: []byte("b")},
		{LowerBound: []byte("z")},
		{UpperBound: []byte{}},
		{UpperBound: []byte("a"), PrefixSameAsStart: true, TotalOrderSeek: true},
	} {
		n, err := count(ro)
		require.NoError(t, err, "%+v", ro)
		require.Zero(t, n, "%+v", ro)
		_, err = d.Get([]byte("b"), ro)
		require.NoError(t, err)
	}
	n, err := count(&db.ReadOptions{LowerBound: []byte{}, UpperBound: []byte("c")})
	require.NoError(t, err)
	require.Equal(t, 4, n)

	// A released snapshot, or one of another DB, is ErrClosed.
	other, err := db.Open("/other", &db.Options{FS: vfs.NewMem(), CreateIfMissing: true, WriteBufferSize: 64 << 10})
	require.NoError(t, err)
	released := d.NewSnapshot()
	released.Release()
	released.Release()
	for _, s := range []*db.Snapshot{released, other.NewSnapshot()} {
		ro := &db.ReadOptions{Snapshot: s}
		_, err := d.Get([]byte("a"), ro)
		requireErrClosed(t, err)
		_, errs := d.MultiGet([][]byte{[]byte("a")}, ro)
		requireErrClosed(t, errs[0])
		it := d.NewIterator(ro)
		requireNoPanic(t, "iterator at a bad snapshot", func() {
			it.SeekToFirst()
			require.False(t, it.Valid())
			require.Nil(t, it.Key())
		})
		requireErrClosed(t, it.Err())
		_ = it.Close()
	}
	require.NoError(t, other.Close())
	require.NoError(t, d.Close())
}

// TestIteratorOutOfOrder uses an Iterator before positioning, after
// exhaustion, after Close and after the DB's Close: nothing panics, Key
// and Value are nil whenever Valid is false, and a closed iterator's Err
// wraps ErrClosed.
func TestIteratorOutOfOrder(t *testing.T) {
	d, err := db.Open("/db", &db.Options{FS: vfs.NewMem(), CreateIfMissing: true, WriteBufferSize: 64 << 10})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
	require.NoError(t, d.Put([]byte("b"), []byte("2"), nil))

	invalid := func(it *db.Iterator, what string) {
		t.Helper()
		requireNoPanic(t, what, func() {
			require.False(t, it.Valid(), what)
			require.Nil(t, it.Key(), what)
			require.Nil(t, it.Value(), what)
		})
	}
	moves := map[string]func(it *db.Iterator){
		"Next": (*db.Iterator).Next, "Prev": (*db.Iterator).Prev,
		"SeekToFirst": (*db.Iterator).SeekToFirst, "SeekToLast": (*db.Iterator).SeekToLast,
		"Seek":        func(it *db.Iterator) { it.Seek([]byte("a")) },
		"SeekForPrev": func(it *db.Iterator) { it.SeekForPrev([]byte("b")) },
		"Seek(nil)":   func(it *db.Iterator) { it.Seek(nil) },
	}

	// Unpositioned.
	it := d.NewIterator(nil)
	invalid(it, "unpositioned")
	require.NoError(t, it.Err())
	requireNoPanic(t, "Next unpositioned", it.Next)
	invalid(it, "Next unpositioned")
	requireNoPanic(t, "Prev unpositioned", it.Prev)
	invalid(it, "Prev unpositioned")
	// Exhausted in both directions, then moved again.
	it.SeekToFirst()
	require.Equal(t, "a", string(it.Key()))
	it.Next()
	it.Next()
	invalid(it, "past the end")
	requireNoPanic(t, "Next past the end", it.Next)
	requireNoPanic(t, "Prev past the end", it.Prev)
	invalid(it, "moved past the end")
	it.SeekToLast()
	require.Equal(t, "2", string(it.Value()))
	it.Prev()
	it.Prev()
	invalid(it, "before the start")
	requireNoPanic(t, "Prev before the start", it.Prev)
	invalid(it, "Prev before the start")
	it.Seek([]byte("zz"))
	invalid(it, "Seek past the end")
	it.SeekForPrev(nil)
	invalid(it, "SeekForPrev(nil)")
	require.NoError(t, it.Err())

	// Closed, from a valid position.
	it.SeekToFirst()
	require.True(t, it.Valid())
	require.NoError(t, it.Close())
	invalid(it, "closed")
	requireErrClosed(t, it.Err())
	for name, move := range moves {
		requireNoPanic(t, name+" after Close", func() { move(it) })
		invalid(it, name+" after Close")
		requireErrClosed(t, it.Err())
	}
	requireErrClosed(t, it.Close())

	// Open across the DB's Close, then closed after it.
	it = d.NewIterator(nil)
	it.SeekToFirst()
	require.NoError(t, d.Close())
	for name, move := range moves {
		requireNoPanic(t, name+" after DB Close", func() { move(it) })
	}
	requireNoPanic(t, "Close after DB Close", func() { _ = it.Close() })
	invalid(it, "closed after DB Close")

	// Made after the DB's Close.
	it = d.NewIterator(nil)
	invalid(it, "made after DB Close")
	requireErrClosed(t, it.Err())
	for name, move := range moves {
		requireNoPanic(t, name+" on an iterator made after DB Close", func() { move(it) })
		invalid(it, name+" on an iterator made after DB Close")
		requireErrClosed(t, it.Err())
	}
	requireErrClosed(t, it.Close())
}
