package db

import (
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/table"
)

// tableCache keeps table readers open, up to a bound, keyed by file number.
//
// A tableEntry is referenced by the cache while it is cached and by every
// reader using it; the file is closed when the last reference goes. Errors
// opening a table are not cached: the next read retries (a transient I/O
// error must not make a file unreadable until restart).
type tableCache struct {
	fs      vfs.FS
	dirname string
	bcache  *cache.Cache
	db      *DB
	max     int

	// mu guards entries and clock. Hits take it shared: readers of
	// different tables do not serialize. An entry's reference taken under
	// the shared lock is safe because eviction (exclusive) cannot drop the
	// cache's own reference meanwhile.
	mu      sync.RWMutex
	entries map[uint64]*tableEntry
	// clock is the eviction order; hand is the CLOCK hand.
	clock []*tableEntry
	hand  int
	// closed is set by close: no entry is added afterwards, so a read
	// still running (or an iterator left open) across Close cannot leave a
	// reader that nothing would close. Entries referenced at close are
	// closed by their last release.
	closed bool
}

// tableEntry is one open table reader. knownGood is the prefix extractor
// handle proven compatible with the table's recorded extractor Name: equal
// to the current handle means the prefix filter is usable, with no string
// comparison.
type tableEntry struct {
	fileNum   uint64
	refs      atomic.Int32
	touched   atomic.Bool
	once      sync.Once
	reader    *table.Reader
	err       error
	knownGood atomic.Pointer[extractorHandle]
	// prefixName is the table's rocksdb.prefix.extractor.name.
	prefixName string
	// pinned is the metadata the open reader pins (its share of
	// stats.tableReadersMem), for the per-family property.
	pinned atomic.Int64
}

func newTableCache(d *DB, max int) *tableCache {
	return &tableCache{fs: d.fs, dirname: d.dirname, bcache: d.cache, db: d, max: max, entries: make(map[uint64]*tableEntry)}
}

// acquire returns the open reader of table f, referenced; release it after
// use. The reader of an ingested table reads its entries at f's largest
// sequence number (see table.ReaderOptions.LargestSeqNum).
func (tc *tableCache) acquire(f *version.FileMetadata) (*tableEntry, error) {
	fileNum := f.FileNum
	tc.mu.RLock()
	e, closed := tc.entries[fileNum], tc.closed
	if e != nil {
		e.refs.Add(1)
	}
	tc.mu.RUnlock()
	if closed {
		return nil, errTableCacheClosed(fileNum)
	}
	if e == nil {
		tc.db.stats.tableCacheMisses.Add(1)
		if e = tc.insert(fileNum); e == nil {
			return nil, errTableCacheClosed(fileNum)
		}
	} else {
		tc.db.stats.tableCacheHits.Add(1)
	}
	// Write the CLOCK bit only when it is clear: a store on every hit
	// would move the entry's line between the cores reading the table.
	if !e.touched.Load() {
		e.touched.Store(true)
	}
	e.once.Do(func() { tc.open(e, uint64(f.LargestSeq)) })
	if e.err != nil {
		err := e.err
		tc.forget(e)
		tc.release(e)
		return nil, err
	}
	return e, nil
}

func errTableCacheClosed(fileNum uint64) error {
	return errors.Wrapf(ErrClosed, "strata: table %s: database closed",
		base.MakeFilename(base.FileKindTable, fileNum))
}

// insert adds an entry for fileNum (unless another goroutine just did) and
// returns it referenced, or nil once the cache is closed.
func (tc *tableCache) insert(fileNum uint64) *tableEntry {
	var evicted []*tableEntry
	tc.mu.Lock()
	if tc.closed {
		tc.mu.Unlock()
		return nil
	}
	e := tc.entries[fileNum]
	if e == nil {
		e = &tableEntry{fileNum: fileNum}
		e.refs.Store(1) // the cache's reference
		tc.entries[fileNum] = e
		tc.clock = append(tc.clock, e)
		evicted = tc.evictLocked(e)
	}
	e.refs.Add(1)
	tc.mu.Unlock()
	// Closing a reader (a file close) is done outside tc.mu.
	for _, x := range evicted {
		tc.release(x)
	}
	return e
}

func (tc *tableCache) open(e *tableEntry, largestSeq uint64) {
	name := tc.dirname + "/" + base.MakeFilename(base.FileKindTable, e.fileNum)
	f, err := tc.fs.Open(name)
	if err != nil {
		e.err = errors.Wrapf(err, "strata: opening table %s", name)
		return
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		e.err = errors.Wrapf(err, "strata: stat of table %s", name)
		return
	}
	var rf table.ReadableFile = f
	if tc.db.opts.AllowMmapReads {
		if m, ok := vfs.MapForReading(f, st.Size()); ok {
			rf = m // closing it closes f
		}
	}
	r, err := table.Open(rf, st.Size(), table.ReaderOptions{Cache: tc.bcache, FileName: name, FileNum: e.fileNum,
		ComparerByName: tc.db.comparerNamed,
		LargestSeqNum:  largestSeq, CacheIndexAndFilterBlocks: tc.db.opts.CacheIndexAndFilterBlocks,
		CacheIndexAndFilterBlocksWithHighPriority: !tc.db.opts.DisableCacheIndexAndFilterBlocksWithHighPriority})
	if err != nil {
		f.Close()
		e.err = err
		return
	}
	e.reader = r
	n, _ := r.PinnedBytes()
	tc.db.stats.tableReadersMem.Add(int64(n))
	e.pinned.Store(int64(n))
	e.prefixName = r.Properties().PrefixExtractorName
	// Record the default family's extractor as known good if it is the
	// one the table was built with. (The tables of other families learn
	// their family's handle at their first prefix check: the cache does
	// not know which family a file number belongs to.)
	if h := tc.db.def.extractor.Load(); h != nil && h.name == e.prefixName {
		e.knownGood.Store(h)
	}
	tc.db.stats.tablesOpened.Add(1)
}

// readersMem sums the metadata the open readers of v's tables pin
// (RocksDB's estimate-table-readers-mem of a family). A table whose reader
// is not open counts nothing, and none is opened to answer: an entry in the
// map holds the cache's reference, so its reader is open once pinned is set.
func (tc *tableCache) readersMem(v *version.Version) int64 {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	var n int64
	for _, files := range v.Levels {
		for _, f := range files {
			if e := tc.entries[f.FileNum]; e != nil {
				n += e.pinned.Load()
			}
		}
	}
	return n
}

// release drops a reference taken by acquire.
func (tc *tableCache) release(e *tableEntry) {
	if e.refs.Add(-1) == 0 && e.reader != nil {
		n, _ := e.reader.PinnedBytes()
		tc.db.stats.tableReadersMem.Add(-int64(n))
		e.reader.Close()
	}
}

// forget removes e from the cache (after an open error or when its file is
// deleted) and drops the cache's reference.
func (tc *tableCache) forget(e *tableEntry) {
	tc.mu.Lock()
	if tc.entries[e.fileNum] != e {
		tc.mu.Unlock()
		return
	}
	delete(tc.entries, e.fileNum)
	for i, x := range tc.clock {
		if x == e {
			tc.clock = append(tc.clock[:i], tc.clock[i+1:]...)
			if tc.hand > i {
				tc.hand--
			}
			break
		}
	}
	tc.mu.Unlock()
	tc.release(e)
}

// evict drops fileNum's reader, if cached (its file is being deleted).
func (tc *tableCache) evict(fileNum uint64) {
	tc.mu.Lock()
	e := tc.entries[fileNum]
	tc.mu.Unlock()
	if e != nil {
		tc.forget(e)
	}
}

// evictLocked keeps at most max entries with the CLOCK policy and returns
// the entries it dropped, whose cache reference the caller releases after
// unlocking. keep, the entry being inserted, is never dropped: it is not
// touched yet (its reader is not even open), so the CLOCK would otherwise
// pick it first whenever the hand passes it, and an insert would evict
// itself and leave the cache holding the older entries. Since max >= 1,
// another entry is always there to drop. tc.mu must be held.
func (tc *tableCache) evictLocked(keep *tableEntry) (evicted []*tableEntry) {
	for len(tc.clock) > tc.max {
		if tc.hand >= len(tc.clock) {
			tc.hand = 0
		}
		e := tc.clock[tc.hand]
		if e == keep || e.touched.Swap(false) {
			tc.hand++
			continue
		}
		tc.clock = append(tc.clock[:tc.hand], tc.clock[tc.hand+1:]...)
		delete(tc.entries, e.fileNum)
		evicted = append(evicted, e)
	}
	return evicted
}

// close drops the cache's references and refuses new entries: a reader
// still in use is closed by its last release.
func (tc *tableCache) close() {
	tc.mu.Lock()
	tc.closed = true
	entries := tc.clock
	tc.clock = nil
	tc.entries = map[uint64]*tableEntry{}
	tc.mu.Unlock()
	for _, e := range entries {
		tc.release(e)
	}
}
