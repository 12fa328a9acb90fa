package db

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stratadb/strata/internal/version"
)

// Property names understood by GetProperty. The "rocksdb." ones mean what
// they mean in RocksDB.
const (
	PropStats                 = "strata.stats"
	PropLevels                = "strata.levels"
	PropNumFilesAtLevelPrefix = "rocksdb.num-files-at-level" // + level number
	PropTotalSSTFilesSize     = "rocksdb.total-sst-files-size"
	PropNumSnapshots          = "rocksdb.num-snapshots"
	PropNumImmutableMemTable  = "rocksdb.num-immutable-mem-table"
	PropCurSizeActiveMemTable = "rocksdb.cur-size-active-mem-table"
	PropBlockCacheHits        = "strata.block-cache.hits"
	PropBlockCacheMisses      = "strata.block-cache.misses"
	PropBlockCacheUsage       = "rocksdb.block-cache-usage"
	PropBlockCacheCapacity    = "rocksdb.block-cache-capacity"
	PropFilterChecks          = "strata.filter.checks"
	PropFilterUseful          = "strata.filter.useful"
	PropPrefixFastPath        = "strata.prefix.fast-path"
	PropPrefixSlowPath        = "strata.prefix.slow-path"
	PropPrefixIncompatible    = "strata.prefix.incompatible"
	PropTablesOpened          = "strata.tables-opened"
	// PropTableReadersMem is the bytes of index and filter blocks (and
	// index prefix arrays) the open readers of the family's tables pin
	// outside the block cache (Metrics.TableReadersMem: of all open readers).
	PropTableReadersMem = "rocksdb.estimate-table-readers-mem"
	PropStallMicros     = "strata.stall-micros"
	PropBackgroundError = "strata.background-error"
	PropPrefixExtractor = "strata.prefix-extractor"
)

// propBlockCachePinnedUsage is the bytes of blocks evicted from the block
// cache that an iterator still holds (cache.Stats.Pinned): memory beyond
// rocksdb.block-cache-usage until those iterators move on. RocksDB's
// property of that name counts the held blocks still cached too.
const propBlockCachePinnedUsage = "rocksdb.block-cache-pinned-usage"

// GetProperty returns the value of a named property of the default family
// (or of the database); unknown names give ("", false).
func (d *DB) GetProperty(name string) (string, bool) { return d.def.GetProperty(name) }

// GetProperty returns the value of a named property of the family, under
// RocksDB's per-family property names, or of the database for properties
// that are not a family's (the block cache, the WAL); unknown names, and
// any name on a dropped family, give ("", false).
func (cf *ColumnFamily) GetProperty(name string) (string, bool) {
	d := cf.d
	if cf.check(d) != nil {
		return "", false
	}
	u := func(v uint64) (string, bool) { return strconv.FormatUint(v, 10), true }
	switch name {
	case PropStats:
		return cf.statsString(), true
	case PropLevels:
		return cf.levelsString(), true
	case PropTotalSSTFilesSize:
		rs := cf.loadReadState()
		defer rs.unref()
		var n uint64
		for level := range rs.version.Levels {
			n += rs.version.LevelSize(level)
		}
		return u(n)
	case PropNumSnapshots:
		d.mu.Lock()
		defer d.mu.Unlock()
		return strconv.Itoa(d.mu.snapshots.count), true
	case PropNumImmutableMemTable:
		d.mu.Lock()
		defer d.mu.Unlock()
		return strconv.Itoa(len(cf.mu.imm)), true
	case PropCurSizeActiveMemTable:
		rs := cf.loadReadState()
		defer rs.unref()
		return strconv.Itoa(rs.mems[0].ApproximateMemoryUsage()), true
	case PropBlockCacheHits:
		return u(d.cache.Stats().Hits)
	case PropBlockCacheMisses:
		return u(d.cache.Stats().Misses)
	case PropBlockCacheUsage:
		return strconv.FormatInt(d.cache.Stats().Used, 10), true
	case PropBlockCacheCapacity:
		return strconv.FormatInt(d.cache.Stats().Capacity, 10), true
	case propBlockCachePinnedUsage:
		return strconv.FormatInt(d.cache.Stats().Pinned, 10), true
	case PropFilterChecks:
		return u(d.stats.filterChecks.Load())
	case PropFilterUseful:
		return u(d.stats.filterUseful.Load())
	case PropPrefixFastPath:
		return u(d.stats.prefixFastPath.Load())
	case PropPrefixSlowPath:
		return u(d.stats.prefixSlowPath.Load())
	case PropPrefixIncompatible:
		return u(d.stats.prefixIncompatible.Load())
	case PropTablesOpened:
		return u(d.stats.tablesOpened.Load())
	case PropTableReadersMem:
		rs := cf.loadReadState()
		defer rs.unref()
		return strconv.FormatInt(d.tables.readersMem(rs.version), 10), true
	case PropStallMicros:
		return u(d.stats.stallMicros.Load())
	case PropBackgroundError:
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.mu.bgErr == nil {
			return "", true
		}
		return d.mu.bgErr.Error(), true
	case PropOptionsFileReport:
		return d.optionsFileReport(), true
	case PropEstimateNumKeys:
		return cf.estimateNumKeys()
	case PropPrefixExtractor:
		if h := cf.extractor.Load(); h != nil {
			return h.name, true
		}
		return "nullptr", true
	}
	if rest, ok := strings.CutPrefix(name, PropNumFilesAtLevelPrefix); ok {
		level, err := strconv.Atoi(rest)
		if err != nil || level < 0 || level >= version.NumLevels {
			return "", false
		}
		rs := cf.loadReadState()
		defer rs.unref()
		return strconv.Itoa(len(rs.version.Levels[level])), true
	}
	return "", false
}

// levelsString lists each level's file count and size.
func (cf *ColumnFamily) levelsString() string {
	rs := cf.loadReadState()
	defer rs.unref()
	var b strings.Builder
	for level, files := range rs.version.Levels {
		fmt.Fprintf(&b, "L%d: %d files, %d bytes\n", level, len(files), rs.version.LevelSize(level))
	}
	return b.String()
}

// statsString renders compaction statistics in the spirit of RocksDB's
// "Compaction Stats" table.
func (cf *ColumnFamily) statsString() string {
	d := cf.d
	rs := cf.loadReadState()
	defer rs.unref()
	var b strings.Builder
	s := &d.stats
	fmt.Fprintf(&b, "** Compaction Stats **\n")
	fmt.Fprintf(&b, "Level  Files   Size(MB)  Read(MB)  Write(MB)  Moved(MB)  Comp(cnt)  W-Amp\n")
	userBytes := s.bytesWritten.Load()
	var totalWrite, totalRead uint64
	for level, files := range rs.version.Levels {
		ls := &s.level[level]
		rd, wr := ls.bytesRead.Load(), ls.bytesWritten.Load()
		totalWrite += wr
		totalRead += rd
		wamp := 0.0
		if rn := ls.bytesReadStart.Load(); level > 0 && rn > 0 {
			// RocksDB's W-Amp: bytes written over bytes read from the
			// level above.
			wamp = float64(wr) / float64(rn)
		}
		fmt.Fprintf(&b, "  L%d  %5d  %9.1f %9.1f %10.1f %10.1f %10d %6.1f\n", level, len(files),
			mb(rs.version.LevelSize(level)), mb(rd), mb(wr), mb(ls.bytesMoved.Load()), ls.compactions.Load(), wamp)
	}
	wamp := 0.0
	if userBytes > 0 {
		wamp = float64(totalWrite) / float64(userBytes)
	}
	fmt.Fprintf(&b, "  Sum  %5s  %9s %9.1f %10.1f %10s %10d %6.1f\n", "", "", mb(totalRead), mb(totalWrite), "",
		s.compactions.Load(), wamp)
	fmt.Fprintf(&b, "User writes: %d batches, %d keys, %.1f MB; write amplification %.2f\n",
		s.writes.Load(), s.keysWritten.Load(), mb(userBytes), wamp)
	fmt.Fprintf(&b, "Flushes: %d (%.3f s); compactions: %d (%.3f s)\n", s.flushes.Load(),
		float64(s.flushMicros.Load())/1e6, s.compactions.Load(), float64(s.compactionMicros.Load())/1e6)
	fmt.Fprintf(&b, "Write stalls: %d waits, %.3f s stalled\n", s.stalls.Load(), float64(s.stallMicros.Load())/1e6)
	d.mu.Lock()
	fmt.Fprintf(&b, "Pending compaction: %.1f MB; compactions running: %d\n",
		mb(cf.pendingCompactionBytesLocked()), len(cf.comp.inflight))
	d.mu.Unlock()
	cs := d.cache.Stats()
	fmt.Fprintf(&b, "Block cache: %d hits, %d misses, %d / %d bytes\n", cs.Hits, cs.Misses, cs.Used, cs.Capacity)
	fmt.Fprintf(&b, "Block cache high-pri pool: %d inserts, %d / %d bytes\n", cs.HighPriInserts, cs.HighPriUsed, cs.HighPriCapacity)
	fmt.Fprintf(&b, "Filters: %d checks, %d useful; prefix fast path %d, slow path %d, incompatible %d\n",
		s.filterChecks.Load(), s.filterUseful.Load(), s.prefixFastPath.Load(), s.prefixSlowPath.Load(), s.prefixIncompatible.Load())
	return b.String()
}

func mb(n uint64) float64 { return float64(n) / (1 << 20) }
