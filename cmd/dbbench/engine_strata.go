package main

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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
	// fams are the handles of families [0, len) by db_bench number
	// (columnFamilyName), replaced whole when CreateFamilies adds some so
	// that readers need no lock; famMu serializes the creators.
	fams    atomic.Pointer[[]*db.ColumnFamily]
	famMu   sync.Mutex
	famOpts *db.ColumnFamilyOptions
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
		MaxSubcompactions:                c.subcompactions,
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
	o.Compression = benchCompression(c.compression)
	if c.compactionStyle == 2 {
		o.CompactionStyle = db.FIFOCompaction
	}
	o.EnableBlobFiles = c.enableBlobFiles
	o.MinBlobSize = c.minBlobSize
	o.BlobFileSize = c.blobFileSize
	o.BlobCompressionType = benchCompression(c.blobCompression)
	o.EnableBlobGarbageCollection = c.enableBlobGC
	o.BlobGarbageCollectionAgeCutoff = c.blobGCAgeCutoff
	o.BlobGarbageCollectionForceThreshold = c.blobGCForceThreshold
	if c.numColumnFamilies > 1 {
		// As db_bench's OpenDb: the first hot families, each with the
		// options of the default one.
		o.ColumnFamilies = map[string]*db.ColumnFamilyOptions{}
		for i := 1; i < c.hotFamilies(); i++ {
			o.ColumnFamilies[columnFamilyName(i)] = familyOptions(o)
		}
		o.CreateMissingColumnFamilies = !c.readOnly
	}
	return o
}

// familyOptions returns the per-family fields of o, the options every
// family gets.
func familyOptions(o *db.Options) *db.ColumnFamilyOptions {
	c := o.ColumnFamilyOptions()
	return &c
}

// benchCompression maps a -compression_type style name to Strata's.
func benchCompression(name string) db.Compression {
	switch name {
	case "snappy":
		return db.SnappyCompression
	case "zstd":
		return db.ZstdCompression
	}
	return db.NoCompression
}

func openStrata(c *config) (engine, error) {
	o := dbOptions(c)
	d, err := db.Open(c.db, o)
	if err != nil {
		return nil, err
	}
	e := &strataEngine{d: d, autoCompact: !c.disableAutoCompactions && c.compactionStyle != 2,
		famOpts: familyOptions(o)}
	if c.numColumnFamilies > 1 {
		if err := e.CreateFamilies(c.hotFamilies()); err != nil {
			d.Close()
			return nil, err
		}
	}
	return e, nil
}

// CreateFamilies finds or creates families [0, n).
func (e *strataEngine) CreateFamilies(n int) error {
	e.famMu.Lock()
	defer e.famMu.Unlock()
	var fams []*db.ColumnFamily
	if p := e.fams.Load(); p != nil {
		fams = append(fams, *p...)
	}
	for i := len(fams); i < n; i++ {
		name := columnFamilyName(i)
		cf := e.d.ColumnFamily(name)
		if cf == nil {
			var err error
			if cf, err = e.d.CreateColumnFamily(name, e.famOpts); err != nil {
				return err
			}
		}
		fams = append(fams, cf)
	}
	e.fams.Store(&fams)
	return nil
}

func (e *strataEngine) family(i int) *db.ColumnFamily { return (*e.fams.Load())[i] }

func (e *strataEngine) WriteCF(cfs []int, keys, vals [][]byte, wo writeOpts) error {
	o := &db.WriteOptions{Sync: wo.sync, DisableWAL: wo.disableWAL}
	if len(keys) == 1 {
		return e.family(cfs[0]).Put(keys[0], vals[0], o)
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
		b.PutCF(e.family(cfs[i]), k, vals[i])
	}
	return e.d.Write(b, o)
}

func (e *strataEngine) GetCF(cf int, key []byte) ([]byte, bool, error) {
	v, err := e.family(cf).Get(key, nil)
	if errors.Is(err, db.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (e *strataEngine) NewIteratorCF(cf int, ro readOpts) iter {
	return e.family(cf).NewIterator(&db.ReadOptions{PrefixSameAsStart: ro.prefixSameAsStart, TotalOrderSeek: ro.totalOrderSeek})
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

// BeginTxn starts a Strata transaction at SnapshotIsolation, RocksDB's
// transactions' only level.
func (e *strataEngine) BeginTxn(pessimistic bool, lockTimeout time.Duration, wo writeOpts) txn {
	return strataTxn{e.d.NewTransaction(&db.TransactionOptions{Pessimistic: pessimistic,
		LockTimeout: lockTimeout, Sync: wo.sync})}
}

type strataTxn struct{ t *db.Transaction }

func txnErr(err error) error {
	if errors.Is(err, db.ErrConflict) {
		return fmt.Errorf("%w: %w", errTxnConflict, err)
	}
	return err
}

func (x strataTxn) Get(key []byte, forUpdate bool) ([]byte, bool, error) {
	var v []byte
	var err error
	if forUpdate {
		v, err = x.t.GetForUpdate(key)
	} else {
		v, err = x.t.Get(key)
	}
	if errors.Is(err, db.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, txnErr(err)
}

func (x strataTxn) Put(key, val []byte) error { return txnErr(x.t.Put(key, val)) }
func (x strataTxn) Commit() error             { return txnErr(x.t.Commit()) }
func (x strataTxn) Rollback() error           { return x.t.Rollback() }
