package main

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/prefix"
)

func init() { openFunc = openStrata }

// strataEngine adapts *db.DB to the engine interface.
type strataEngine struct {
	d           *db.DB
	batches     sync.Pool // *db.Batch, reused across Write calls
	autoCompact bool      // compactions run by themselves
}

// dbOptions maps the db_bench flags onto Strata's options. A zero Options
// field means the engine default, so flags that ask for "default" (-1, 0)
// leave it zero.
func dbOptions(c *config) *db.Options {
	o := &db.Options{
		CreateIfMissing:                 !c.useExistingDB,
		ReadOnly:                        c.readOnly,
		WriteBufferSize:                 int(c.writeBufferSize),
		MaxWriteBufferNumber:            c.maxWriteBufferNumber,
		BloomBitsPerKey:                 max(c.bloomBits, 0),
		DisableAutoCompactions:          c.disableAutoCompactions,
		DisableReadTriggeredCompactions: c.noReadCompactions,
		DisableConcurrentMemtableWrites: !c.concurrentMemWrite,
		AllowMmapReads:                  c.mmapRead,
		BlockCacheSize:                  max(c.cacheSize, 0),
		CacheIndexAndFilterBlocks:       c.cacheIndexAndFilter,
		// As db_bench: a ratio > 0 also turns on
		// cache_index_and_filter_blocks_with_high_priority.
		DisableCacheIndexAndFilterBlocksWithHighPriority: c.cacheHighPriRatio <= 0,
		HighPriPoolRatio:                 c.cacheHighPriRatio,
		MaxOpenFiles:                     max(c.openFiles, 0),
		BlockSize:                        c.blockSize,
		Level0FileNumCompactionTrigger:   c.l0CompactionTrigger,
		Level0SlowdownWritesTrigger:      c.l0SlowdownTrigger,
		Level0StopWritesTrigger:          c.l0StopTrigger,
		TargetFileSizeBase:               c.targetFileSizeBase,
		MaxBytesForLevelBase:             c.maxBytesForLevelBase,
		MaxBytesForLevelMultiplier:       int(c.maxBytesForLevelMult),
		LevelCompactionDynamicLevelBytes: c.dynamicLevelBytes,
		MaxBackgroundJobs:                c.maxBackgroundJobs,
		FIFOMaxTableFilesSize:            int64(c.fifoMaxTableFilesMB) << 20,
		FIFOAllowCompaction:              c.fifoAllowCompaction,
		WALWriteSyscalls:                 c.walWriteSyscalls,
	}
	if c.partitionIndexFilter || c.partitionIndex {
		// As db_bench: either flag selects the two-level index.
		o.IndexType = db.IndexTwoLevelSearch
		o.PartitionFilters = c.partitionIndexFilter
		o.MetadataBlockSize = max(c.metadataBlockSize, 0)
	}
	if c.prefixSize > 0 {
		o.PrefixExtractor = prefix.Fixed(c.prefixSize)
	}
	if c.mergeOperator != "" {
		o.MergeOperator = db.MergeOperatorByName(c.mergeOperator)
	}
	switch c.compression {
	case "snappy":
		o.Compression = db.SnappyCompression
	case "zstd":
		o.Compression = db.ZstdCompression
	default:
		o.Compression = db.NoCompression
	}
	if c.compactionStyle == 2 {
		o.CompactionStyle = db.FIFOCompaction
	}
	return o
}

func openStrata(c *config) (engine, error) {
	d, err := db.Open(c.db, dbOptions(c))
	if err != nil {
		return nil, err
	}
	return &strataEngine{d: d, autoCompact: !c.disableAutoCompactions && c.compactionStyle != 2}, nil
}

func (e *strataEngine) Write(keys, vals [][]byte, wo writeOpts) error {
	o := &db.WriteOptions{Sync: wo.sync, DisableWAL: wo.disableWAL}
	if len(keys) == 1 {
		if vals == nil {
			return e.d.Delete(keys[0], o)
		}
		return e.d.Put(keys[0], vals[0], o)
	}
	b, _ := e.batches.Get().(*db.Batch)
	if b == nil {
		b = db.NewBatch()
	}
	defer func() {
		b.Reset()
		e.batches.Put(b)
	}()
	for i, k := range keys {
		if vals == nil {
			b.Delete(k)
		} else {
			b.Put(k, vals[i])
		}
	}
	return e.d.Write(b, o)
}

func (e *strataEngine) Merge(key, val []byte, wo writeOpts) error {
	return e.d.Merge(key, val, &db.WriteOptions{Sync: wo.sync, DisableWAL: wo.disableWAL})
}

func (e *strataEngine) Get(key []byte) ([]byte, bool, error) {
	v, err := e.d.Get(key, nil)
	if errors.Is(err, db.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (e *strataEngine) MultiGet(keys [][]byte) ([][]byte, []bool, error) {
	vals, errs := e.d.MultiGet(keys, nil)
	found := make([]bool, len(keys))
	for i, err := range errs {
		switch {
		case err == nil:
			found[i] = true
		case !errors.Is(err, db.ErrNotFound):
			return nil, nil, err
		}
	}
	return vals, found, nil
}

func (e *strataEngine) NewIterator(ro readOpts) iter {
	return e.d.NewIterator(&db.ReadOptions{PrefixSameAsStart: ro.prefixSameAsStart, TotalOrderSeek: ro.totalOrderSeek})
}

func (e *strataEngine) Flush() error                        { return e.d.Flush() }
func (e *strataEngine) CompactRange() error                 { return e.d.CompactRange(nil, nil) }
func (e *strataEngine) Property(name string) (string, bool) { return e.d.GetProperty(name) }

// Close persists every write, -disable_wal ones included (API contract),
// so a later -use_existing_db run sees them.
func (e *strataEngine) Close() error { return e.d.Close() }

// WriteCounts reads the write counters of db.Metrics.
func (e *strataEngine) WriteCounts() writeCounts {
	m := e.d.Metrics()
	return writeCounts{user: m.Writes.Bytes, wal: m.WAL.Bytes, flush: m.Flush.Bytes, compact: m.Compact.WrittenBytes}
}

// Polling of WaitForCompactions: the database must look settled at
// settledPolls polls in a row, pollInterval apart.
const (
	pollInterval = 50 * time.Millisecond
	settledPolls = 3
	// idleGiveUp: nothing running and nothing flushing, yet a level still
	// over its target, for this long: the picker will not get to it (it
	// reschedules as soon as a compaction ends), so stop waiting.
	idleGiveUp = 10 * time.Second
)

// WaitForCompactions returns once no flush is pending and no compaction
// is running or due (every level's score under 1, no pending compaction
// bytes), as db_bench's waitforcompaction. With automatic compactions off
// it waits for the flushes only. A background error ends the wait with
// that error.
func (e *strataEngine) WaitForCompactions() error {
	settled, idleSince := 0, time.Time{}
	for settled < settledPolls {
		if v, _ := e.d.GetProperty(db.PropBackgroundError); v != "" {
			return fmt.Errorf("background error: %s", v)
		}
		m := e.d.Metrics()
		idle := m.Compact.InProgress == 0 && m.MemTables.Count <= 1
		due := m.Compact.PendingBytes > 0
		for _, l := range m.Levels {
			due = due || l.Score >= 1
		}
		switch {
		case idle && (!due || !e.autoCompact):
			settled++
		case idle && !idleSince.IsZero() && time.Since(idleSince) > idleGiveUp:
			return nil
		default:
			settled = 0
			if idle && idleSince.IsZero() {
				idleSince = time.Now()
			} else if !idle {
				idleSince = time.Time{}
			}
		}
		time.Sleep(pollInterval)
	}
	return nil
}
