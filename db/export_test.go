package db

import (
	"bytes"
	"testing"
	"time"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/prefix"
	"github.com/stratadb/strata/table"
	"github.com/stretchr/testify/require"
)

// Test-only access to internals, for the db_test package.

// SetBetweenViewAndSeqHook makes every read (Get, MultiGet, NewIterator)
// call f after loading its read view and before loading its sequence
// number. Set it before the DB is used concurrently.
func SetBetweenViewAndSeqHook(d *DB, f func()) { d.testingBetweenViewAndSeq = f }

// PrefixCheckSkipped reports a build tagged strata_noprefixcheck, in which
// prefix-filter checks always answer "usable" (benchmark floor only).
const PrefixCheckSkipped = skipPrefixCheck

// NewPrefixHandleRotator returns a function that installs, alternately, one
// of two handles wrapping d's current extractor (same Name, distinct
// identity). Called before every NewIterator, it makes every prefix-filter
// check miss the known-good pointer and compare Names: the per-call
// comparison RocksDB PR 9407 removed, reproduced with no knob in d.
func NewPrefixHandleRotator(d *DB) func() {
	ext := d.def.extractor.Load().ext
	hs := [2]*extractorHandle{newExtractorHandle(ext), newExtractorHandle(ext)}
	i := 0
	return func() {
		i ^= 1
		d.def.extractor.Store(hs[i])
	}
}

// SwapPrefixExtractor installs e as the current extractor in a new handle,
// even when its Name is the one in force (SetOptions would keep the current
// handle then): a compatible extractor in a new instance. nil removes it.
func SwapPrefixExtractor(d *DB, e prefix.Extractor) {
	d.setOptionsMu.Lock()
	d.def.extractor.Store(newExtractorHandle(e))
	d.setOptionsMu.Unlock()
}

// NewPrefixOnlyTableProbe builds an in-memory table of keys with a filter
// of ext's prefixes and no whole-key entries (RocksDB's
// whole_key_filtering=false), opens it as the table cache would, and
// returns a function reporting what Get concludes from its filter for a
// key under d's current extractor.
func NewPrefixOnlyTableProbe(t testing.TB, d *DB, ext prefix.Extractor, keys [][]byte) func(key []byte) bool {
	var buf bytes.Buffer
	w := table.NewWriter(&buf, table.WriterOptions{BloomBitsPerKey: 16, PrefixExtractor: ext})
	for i, k := range keys {
		require.NoError(t, w.Add(base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), []byte("v")))
	}
	_, err := w.Finish()
	require.NoError(t, err)
	r, err := table.Open(nopCloser{bytes.NewReader(buf.Bytes())}, int64(buf.Len()), table.ReaderOptions{FileName: "probe.sst"})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	e := &tableEntry{reader: r, prefixName: r.Properties().PrefixExtractorName}
	if h := d.def.extractor.Load(); h != nil && h.name == e.prefixName {
		e.knownGood.Store(h)
	}
	return func(key []byte) bool {
		may, err := d.tableMayContain(e, key, d.def.extractor.Load(), &getResult{})
		return may || err != nil
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// NewPrefixCheck returns one check of prefixFilterUsable against a table
// entry built with d's current extractor, opened (known good) under it.
func NewPrefixCheck(d *DB) func() bool {
	h := d.def.extractor.Load()
	e := &tableEntry{prefixName: h.name}
	e.knownGood.Store(h)
	return func() bool { return d.prefixFilterUsable(e, d.def.extractor.Load()) }
}

// NewPrefixCheckAlternating is NewPrefixCheck with the current extractor
// wrapped in two handles passed alternately, so that every check misses the
// known-good pointer and compares Names (the regression of RocksDB PR 9407).
func NewPrefixCheckAlternating(d *DB) func() bool {
	ext := d.def.extractor.Load().ext
	hs := [2]*extractorHandle{newExtractorHandle(ext), newExtractorHandle(ext)}
	e := &tableEntry{prefixName: hs[0].name}
	e.knownGood.Store(hs[0])
	i := 0
	return func() bool {
		i ^= 1
		return d.prefixFilterUsable(e, hs[i])
	}
}

// IsClosing reports whether Close has begun refusing new work (d.mu.closing).
func IsClosing(d *DB) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.closing
}

// ListColumnFamiliesFS is ListColumnFamilies on fs.
func ListColumnFamiliesFS(fs vfs.FS, dir string) ([]string, error) {
	return listColumnFamilies(fs, dir)
}

// TestingLockWaiting reports whether t is waiting for a lock.
func (t *Transaction) TestingLockWaiting() bool {
	m := t.d.lockManager()
	m.waitMu.Lock()
	defer m.waitMu.Unlock()
	_, ok := m.waitFor[t]
	return ok
}

// SetClockForTesting replaces the DB's clock (Options.Clock) while it is
// open; nil restores time.Now.
func SetClockForTesting(d *DB, now func() time.Time) {
	if now == nil {
		d.clock.Store(nil)
		return
	}
	d.clock.Store(&now)
}

// Subcompactions returns the number of key ranges split compactions of d
// ran (tests check that a workload exercised subcompactions).
func Subcompactions(d *DB) uint64 { return d.stats.subcompactions.Load() }
