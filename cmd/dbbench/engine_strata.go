package main

import (
	"errors"
	"sync"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/prefix"
)

func init() { openFunc = openStrata }

// strataEngine adapts *db.DB to the engine interface.
type strataEngine struct {
	d       *db.DB
	batches sync.Pool // *db.Batch, reused across Write calls
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
		BlockCacheSize:                  max(c.cacheSize, 0),
		MaxOpenFiles:                    max(c.openFiles, 0),
		BlockSize:                       c.blockSize,
		Level0FileNumCompactionTrigger:  c.l0CompactionTrigger,
		Level0SlowdownWritesTrigger:     c.l0SlowdownTrigger,
		Level0StopWritesTrigger:         c.l0StopTrigger,
		TargetFileSizeBase:              c.targetFileSizeBase,
		MaxBytesForLevelBase:            c.maxBytesForLevelBase,
		MaxBytesForLevelMultiplier:      int(c.maxBytesForLevelMult),
		MaxBackgroundJobs:               c.maxBackgroundJobs,
		FIFOMaxTableFilesSize:           int64(c.fifoMaxTableFilesMB) << 20,
		FIFOAllowCompaction:             c.fifoAllowCompaction,
		WALWriteSyscalls:                c.walWriteSyscalls,
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
	return &strataEngine{d: d}, nil
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
