package db

import (
	"fmt"
	"strings"
	"time"

	"github.com/stratadb/strata/internal/version"
)

// NumLevels is the number of levels of the LSM tree.
const NumLevels = version.NumLevels

// Metrics is a snapshot of the database's state and counters, returned by
// DB.Metrics. Counters count from Open. GetProperty reads the same
// counters. String renders the snapshot as a table.
type Metrics struct {
	// Levels are the totals over every column family: file counts and
	// sizes add up, a level's score is the highest any family has.
	Levels [NumLevels]LevelMetrics
	// Families has one entry per live column family, the default first,
	// then by ID.
	Families []FamilyMetrics

	// Flush: memtables flushed to L0.
	Flush struct {
		Count    uint64
		Bytes    uint64 // table bytes written
		Duration time.Duration
	}
	// Compact: compactions (trivial moves included in Count).
	Compact struct {
		Count        uint64
		ReadBytes    uint64
		WrittenBytes uint64
		MovedBytes   uint64
		Duration     time.Duration
		InProgress   int
		// PendingBytes estimates what compaction must rewrite to bring
		// every level under its target (RocksDB's
		// estimate-pending-compaction-bytes).
		PendingBytes uint64
		// ReadTriggered counts the read-triggered (seek) compactions
		// picked since Open (see Options.DisableReadTriggeredCompactions);
		// they are in Count too once they finish.
		ReadTriggered uint64
	}
	// Ingest: DB.Ingest calls and the bytes of their tables.
	Ingest struct {
		Count uint64
		Bytes uint64
	}
	// WriteStall: the times writes waited for background work, and for
	// how long (the one-millisecond slowdowns included in Duration).
	WriteStall struct {
		Count    uint64
		Duration time.Duration
	}
	// BlockCache: the data-block cache.
	BlockCache CacheMetrics
	// BlockCacheHighPri: the block cache's high-priority pool, which holds
	// the index and filter blocks read through the cache under
	// CacheIndexAndFilterBlocks (unless
	// DisableCacheIndexAndFilterBlocksWithHighPriority): Inserts counts
	// those blocks read from the files into the pool (its misses), Size the
	// bytes the pool holds, Capacity its bound (HighPriPoolRatio of the
	// cache). Index and filter blocks the pool overflowed are counted in
	// BlockCache.Size but not here.
	BlockCacheHighPri struct {
		Inserts        uint64
		Size, Capacity int64
	}
	// TableCache: open table readers (Size is the number open).
	TableCache CacheMetrics
	// TableReadersMem is the bytes of metadata (index and filter blocks,
	// index prefix arrays) the open table readers pin outside the block
	// cache: with CacheIndexAndFilterBlocks, filters are not counted here
	// but in BlockCache.Size while cached.
	TableReadersMem int64
	// Filter: filter probes of point reads and prefix seeks, and those that
	// spared a read (RocksDB's bloom.filter.useful).
	Filter struct {
		Checks, Useful uint64
	}
	// Prefix: seeks that used the prefix filters, seeks that could not,
	// and tables whose prefix extractor differs from the current one.
	Prefix struct {
		FastPath, SlowPath, Incompatible uint64
	}
	// WAL: live WAL files, bytes of records written and syncs.
	WAL struct {
		Files int
		Bytes uint64
		Syncs uint64
	}
	// MemTables: the mutable memtable and those waiting for flush, and
	// the arena bytes they use.
	MemTables struct {
		Count int
		Size  uint64
	}
	// Writes: user writes (batches, keys, batch bytes).
	Writes struct {
		Batches, Keys, Bytes uint64
	}
}

// LevelMetrics describes one level.
type LevelMetrics struct {
	NumFiles int
	Size     uint64
	// Score is the compaction picker's score: L0's file count over its
	// trigger, a level's size over its target; compaction is due at 1.
	Score float64
	// BytesIn is what compactions read from the level above into this one
	// (RocksDB's Rn(GB)); BytesRead all they read; BytesWritten what
	// flushes, compactions and ingestions wrote into it; BytesMoved what
	// trivial moves brought in.
	BytesIn, BytesRead, BytesWritten, BytesMoved uint64
	// Compactions into this level.
	Compactions uint64
	// ReadAmp: tables a point read may probe in the level (every L0
	// file, one table of a deeper non-empty level).
	ReadAmp int
	// WriteAmp: BytesWritten over BytesIn (0 when nothing came in).
	WriteAmp float64
}

// CacheMetrics describes a cache.
type CacheMetrics struct {
	Hits, Misses uint64
	Size         int64 // bytes for the block cache, readers for the table cache
	Capacity     int64
}

// HitRate is Hits over lookups, 0 with none.
func (c CacheMetrics) HitRate() float64 {
	if n := c.Hits + c.Misses; n > 0 {
		return float64(c.Hits) / float64(n)
	}
	return 0
}

// ReadAmp is the sum of the levels' read amplification.
func (m *Metrics) ReadAmp() int {
	n := 0
	for _, l := range m.Levels {
		n += l.ReadAmp
	}
	return n
}

// WriteAmp is the bytes written to tables (flushes, compactions,
// ingestions) over the bytes of user writes; 0 before any write.
func (m *Metrics) WriteAmp() float64 {
	if m.Writes.Bytes == 0 {
		return 0
	}
	var w uint64
	for _, l := range m.Levels {
		w += l.BytesWritten
	}
	return float64(w) / float64(m.Writes.Bytes)
}

// FamilyMetrics are the metrics of one column family.
type FamilyMetrics struct {
	Name string
	ID   uint32
	// Files and Size per level.
	Files [NumLevels]int
	Size  [NumLevels]uint64
	// MemTables counts the family's memtables (the mutable one and those
	// waiting for flush) and their bytes.
	MemTables struct {
		Count int
		Size  uint64
	}
	Flush struct {
		Count uint64
		Bytes uint64
	}
	// PendingCompactionBytes estimates the bytes the family's compaction
	// is behind by.
	PendingCompactionBytes uint64
}

// Metrics returns a snapshot of the database's metrics. It takes the DB's
// mutex briefly; it is meant for monitoring, not for hot paths.
func (d *DB) Metrics() *Metrics {
	m := &Metrics{}
	if d.checkOpen() != nil {
		return m
	}
	s := &d.stats
	for _, cf := range d.ColumnFamilies() {
		rs := cf.loadReadState()
		v := rs.version
		// The scores read the files' compacting marks, which compactions
		// set and clear under the DB's mutex.
		d.mu.Lock()
		scores := v.Scores(cf.pickerOptions())
		d.mu.Unlock()
		fm := FamilyMetrics{Name: cf.name, ID: cf.id}
		for level := range m.Levels {
			l := &m.Levels[level]
			fm.Files[level], fm.Size[level] = len(v.Levels[level]), v.LevelSize(level)
			l.NumFiles += fm.Files[level]
			l.Size += fm.Size[level]
			l.Score = max(l.Score, scores[level])
		}
		rs.unref()
		fm.Flush.Count, fm.Flush.Bytes = cf.stats.flushes.Load(), cf.stats.flushBytes.Load()
		m.Families = append(m.Families, fm)
	}
	for level := range m.Levels {
		l := &m.Levels[level]
		ls := &s.level[level]
		l.BytesIn, l.BytesRead = ls.bytesReadStart.Load(), ls.bytesRead.Load()
		l.BytesWritten, l.BytesMoved = ls.bytesWritten.Load(), ls.bytesMoved.Load()
		l.Compactions = ls.compactions.Load()
		if level == 0 {
			l.ReadAmp = l.NumFiles
		} else if l.NumFiles > 0 {
			l.ReadAmp = 1
		}
		if l.BytesIn > 0 {
			l.WriteAmp = float64(l.BytesWritten) / float64(l.BytesIn)
		}
		m.Compact.ReadBytes += l.BytesRead
		m.Compact.MovedBytes += l.BytesMoved
	}
	// Every table byte written came from a flush, an ingestion or a
	// compaction.
	var written uint64
	for _, l := range m.Levels {
		written += l.BytesWritten
	}
	other := s.flushBytes.Load() + s.ingestedBytes.Load()
	m.Compact.WrittenBytes = written - min(written, other)
	m.Flush.Count, m.Flush.Bytes = s.flushes.Load(), s.flushBytes.Load()
	m.Flush.Duration = time.Duration(s.flushMicros.Load()) * time.Microsecond
	m.Compact.Count = s.compactions.Load()
	m.Compact.Duration = time.Duration(s.compactionMicros.Load()) * time.Microsecond
	m.Ingest.Count, m.Ingest.Bytes = s.ingestions.Load(), s.ingestedBytes.Load()
	m.WriteStall.Count = s.stalls.Load()
	m.WriteStall.Duration = time.Duration(s.stallMicros.Load()) * time.Microsecond
	cs := d.cache.Stats()
	m.BlockCache = CacheMetrics{Hits: cs.Hits, Misses: cs.Misses, Size: cs.Used, Capacity: cs.Capacity}
	m.BlockCacheHighPri.Inserts = cs.HighPriInserts
	m.BlockCacheHighPri.Size, m.BlockCacheHighPri.Capacity = cs.HighPriUsed, cs.HighPriCapacity
	d.tables.mu.RLock()
	open := len(d.tables.entries)
	d.tables.mu.RUnlock()
	m.TableCache = CacheMetrics{Hits: s.tableCacheHits.Load(), Misses: s.tableCacheMisses.Load(),
		Size: int64(open), Capacity: int64(d.tables.max)}
	m.TableReadersMem = s.tableReadersMem.Load()
	m.Filter.Checks, m.Filter.Useful = s.filterChecks.Load(), s.filterUseful.Load()
	m.Prefix.FastPath, m.Prefix.SlowPath = s.prefixFastPath.Load(), s.prefixSlowPath.Load()
	m.Prefix.Incompatible = s.prefixIncompatible.Load()
	m.WAL.Bytes, m.WAL.Syncs = s.walBytes.Load(), s.walSyncs.Load()
	m.Writes.Batches, m.Writes.Keys, m.Writes.Bytes = s.writes.Load(), s.keysWritten.Load(), s.bytesWritten.Load()

	d.mu.Lock()
	m.WAL.Files = len(d.mu.wals)
	for _, cf := range d.mu.fams {
		m.Compact.InProgress += len(cf.comp.inflight)
		m.Compact.ReadTriggered += uint64(cf.comp.seekPicks.Load())
		pending := cf.pendingCompactionBytesLocked()
		m.Compact.PendingBytes += pending
		var fm *FamilyMetrics
		for i := range m.Families {
			if m.Families[i].ID == cf.id {
				fm = &m.Families[i]
			}
		}
		if cf.mu.mem == nil {
			continue
		}
		count := 1 + len(cf.mu.imm)
		size := uint64(cf.mu.mem.ApproximateMemoryUsage())
		for _, x := range cf.mu.imm {
			size += uint64(x.ApproximateMemoryUsage())
		}
		m.MemTables.Count += count
		m.MemTables.Size += size
		if fm != nil {
			fm.MemTables.Count, fm.MemTables.Size = count, size
			fm.PendingCompactionBytes = pending
		}
	}
	d.mu.Unlock()
	return m
}

// String renders the metrics as a table per level followed by one line per
// subsystem, in the spirit of Pebble's metrics and RocksDB's
// "rocksdb.stats".
func (m *Metrics) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "level | files      size  score  r-amp |       in     read  written    moved  comps  w-amp\n")
	fmt.Fprintf(&b, "------+------------------------------+-----------------------------------------------\n")
	var t LevelMetrics
	for level, l := range m.Levels {
		fmt.Fprintf(&b, "  L%d  | %5d %9s %6.2f %6d | %8s %8s %8s %8s %6d %6.1f\n", level, l.NumFiles, humanBytes(l.Size),
			l.Score, l.ReadAmp, humanBytes(l.BytesIn), humanBytes(l.BytesRead), humanBytes(l.BytesWritten),
			humanBytes(l.BytesMoved), l.Compactions, l.WriteAmp)
		t.NumFiles += l.NumFiles
		t.Size += l.Size
		t.BytesIn += l.BytesIn
		t.BytesRead += l.BytesRead
		t.BytesWritten += l.BytesWritten
		t.BytesMoved += l.BytesMoved
		t.Compactions += l.Compactions
	}
	fmt.Fprintf(&b, "total | %5d %9s %6s %6d | %8s %8s %8s %8s %6d %6.1f\n", t.NumFiles, humanBytes(t.Size), "",
		m.ReadAmp(), humanBytes(t.BytesIn), humanBytes(t.BytesRead), humanBytes(t.BytesWritten),
		humanBytes(t.BytesMoved), t.Compactions, m.WriteAmp())
	fmt.Fprintf(&b, "writes: %d batches, %d keys, %s\n", m.Writes.Batches, m.Writes.Keys, humanBytes(m.Writes.Bytes))
	fmt.Fprintf(&b, "flush: %d, %s written, %s\n", m.Flush.Count, humanBytes(m.Flush.Bytes), m.Flush.Duration)
	fmt.Fprintf(&b, "compact: %d, %s read, %s written, %s moved, %s; %d running, %s pending, %d read-triggered\n", m.Compact.Count,
		humanBytes(m.Compact.ReadBytes), humanBytes(m.Compact.WrittenBytes), humanBytes(m.Compact.MovedBytes),
		m.Compact.Duration, m.Compact.InProgress, humanBytes(m.Compact.PendingBytes), m.Compact.ReadTriggered)
	fmt.Fprintf(&b, "ingest: %d, %s\n", m.Ingest.Count, humanBytes(m.Ingest.Bytes))
	fmt.Fprintf(&b, "stalls: %d, %s\n", m.WriteStall.Count, m.WriteStall.Duration)
	fmt.Fprintf(&b, "memtables: %d, %s\n", m.MemTables.Count, humanBytes(m.MemTables.Size))
	fmt.Fprintf(&b, "WAL: %d files, %s written, %d syncs\n", m.WAL.Files, humanBytes(m.WAL.Bytes), m.WAL.Syncs)
	fmt.Fprintf(&b, "block cache: %s / %s, %d hits, %d misses (%.1f%% hit)\n", humanBytes(uint64(m.BlockCache.Size)),
		humanBytes(uint64(m.BlockCache.Capacity)), m.BlockCache.Hits, m.BlockCache.Misses, 100*m.BlockCache.HitRate())
	fmt.Fprintf(&b, "block cache high-pri pool: %s / %s, %d inserts\n", humanBytes(uint64(m.BlockCacheHighPri.Size)),
		humanBytes(uint64(m.BlockCacheHighPri.Capacity)), m.BlockCacheHighPri.Inserts)
	fmt.Fprintf(&b, "table cache: %d / %d open, %d hits, %d misses (%.1f%% hit)\n", m.TableCache.Size,
		m.TableCache.Capacity, m.TableCache.Hits, m.TableCache.Misses, 100*m.TableCache.HitRate())
	fmt.Fprintf(&b, "table readers pin: %s\n", humanBytes(uint64(max(m.TableReadersMem, 0))))
	fmt.Fprintf(&b, "filters: %d checks, %d useful\n", m.Filter.Checks, m.Filter.Useful)
	fmt.Fprintf(&b, "prefix: %d fast path, %d slow path, %d incompatible tables\n",
		m.Prefix.FastPath, m.Prefix.SlowPath, m.Prefix.Incompatible)
	return b.String()
}

// humanBytes renders n with a binary unit.
func humanBytes(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%dB", n)
	}
	f := float64(n)
	i := -1
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.1f%ciB", f, units[i])
}
