package db

import (
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/prefix"
)

// DefaultColumnFamilyName is the name of the column family every database
// has, RocksDB's kDefaultColumnFamilyName.
const DefaultColumnFamilyName = "default"

// ColumnFamily is one named key space of a database: RocksDB's column
// family. Every family has its own memtables, tables, options and prefix
// extractor; all of them share the database's WAL, its sequence numbers
// (so a snapshot sees every family at one point in time and a Batch across
// families is atomic), its block cache and its table cache. The DB's own
// methods act on the default family, whose handle is
// [DB.DefaultColumnFamily].
//
// A handle stays valid until its family is dropped ([DB.DropColumnFamily])
// or the database closes; its methods then return errors wrapping
// ErrInvalidArgument or ErrClosed. Name and ID keep working.
type ColumnFamily struct {
	d    *DB
	id   uint32
	name string
	// opts are the family's options: its ColumnFamilyOptions over the
	// DB-wide fields of the DB's Options, so code that reads a DB-wide
	// field through a family sees the DB's value.
	opts Options
	// cmp orders the family's keys, fixed for its life: the one its
	// Version holds (resolved at Open or CreateColumnFamily).
	cmp *base.Comparer
	// blob is the blob file options in force (SetOptions replaces it).
	blob atomic.Pointer[blobSettings]
	// dropped is set (under d.mu) when DropColumnFamily recorded the drop.
	dropped atomic.Bool

	// Mutable options (SetOptions), read without locks.
	writeBufferSize atomic.Int64
	extractor       atomic.Pointer[extractorHandle]
	// comp is the family's compaction scheduling state (compaction.go).
	comp compactionState
	// seekCompactions: Gets charge wasted seeks to tables for
	// read-triggered compactions (leveled, writable, not disabled).
	seekCompactions bool

	// iterCache holds the state of the last closed iterator, for reuse by
	// the next NewIterator over the same read view (see iterState).
	iterCache atomic.Pointer[iterState]
	// readState is the family's current read view; see readState.
	rsMu      sync.RWMutex
	readState *readState

	stats cfStats

	// mu is guarded by d.mu.
	mu struct {
		// vf is the family's state in the VersionSet.
		vf *version.Family
		// mem is the mutable memtable; imm are the immutable ones waiting
		// for flush, oldest first. mem is replaced with d.commit.mu held
		// too, so its holder may read it without d.mu.
		mem *memTable
		imm []*memTable
		// memNextSize is the arena size of the next memtable the write path
		// makes (see nextMemTableSizeLocked); 0 before the first.
		memNextSize int
		// summaryPrefix is what the next memtable's skiplists strip before
		// summarizing keys (memtable.SetSummaryPrefix).
		summaryPrefix []byte
	}
}

// cfStats are the per-family counters of Metrics.
type cfStats struct {
	flushes, flushBytes atomic.Uint64
}

// ColumnFamilyOptions are the options of one column family: the per-family
// subset of Options, with the same names, types, defaults and meanings.
// The zero value of each field means its default.
type ColumnFamilyOptions struct {
	WriteBufferSize                  int
	MaxWriteBufferNumber             int
	BloomBitsPerKey                  int
	PrefixExtractor                  prefix.Extractor
	Compression                      Compression
	CompactionStyle                  CompactionStyle
	FIFOMaxTableFilesSize            int64
	FIFOAllowCompaction              bool
	DisableAutoCompactions           bool
	DisableReadTriggeredCompactions  bool
	MergeOperator                    MergeOperator
	CompactionFilter                 CompactionFilter
	Comparer                         Comparer
	TTL                              time.Duration
	BlockSize                        int
	IndexType                        IndexType
	PartitionFilters                 bool
	MetadataBlockSize                int
	Level0FileNumCompactionTrigger   int
	Level0SlowdownWritesTrigger      int
	Level0StopWritesTrigger          int
	TargetFileSizeBase               int64
	MaxBytesForLevelBase             int64
	MaxBytesForLevelMultiplier       int
	LevelCompactionDynamicLevelBytes bool
	SoftPendingCompactionBytesLimit  int64
	HardPendingCompactionBytesLimit  int64
	// The blob file options: see Options.
	EnableBlobFiles                     bool
	MinBlobSize                         uint64
	BlobFileSize                        uint64
	BlobCompressionType                 Compression
	EnableBlobGarbageCollection         bool
	BlobGarbageCollectionAgeCutoff      float64
	BlobGarbageCollectionForceThreshold float64
}

// ColumnFamilyOptions returns the per-family fields of o: what a family
// created with them gets of the options o gives the default family.
func (o *Options) ColumnFamilyOptions() ColumnFamilyOptions {
	return ColumnFamilyOptions{
		WriteBufferSize:                     o.WriteBufferSize,
		MaxWriteBufferNumber:                o.MaxWriteBufferNumber,
		BloomBitsPerKey:                     o.BloomBitsPerKey,
		PrefixExtractor:                     o.PrefixExtractor,
		Compression:                         o.Compression,
		CompactionStyle:                     o.CompactionStyle,
		FIFOMaxTableFilesSize:               o.FIFOMaxTableFilesSize,
		FIFOAllowCompaction:                 o.FIFOAllowCompaction,
		DisableAutoCompactions:              o.DisableAutoCompactions,
		DisableReadTriggeredCompactions:     o.DisableReadTriggeredCompactions,
		MergeOperator:                       o.MergeOperator,
		CompactionFilter:                    o.CompactionFilter,
		Comparer:                            o.Comparer,
		TTL:                                 o.TTL,
		BlockSize:                           o.BlockSize,
		IndexType:                           o.IndexType,
		PartitionFilters:                    o.PartitionFilters,
		MetadataBlockSize:                   o.MetadataBlockSize,
		Level0FileNumCompactionTrigger:      o.Level0FileNumCompactionTrigger,
		Level0SlowdownWritesTrigger:         o.Level0SlowdownWritesTrigger,
		Level0StopWritesTrigger:             o.Level0StopWritesTrigger,
		TargetFileSizeBase:                  o.TargetFileSizeBase,
		MaxBytesForLevelBase:                o.MaxBytesForLevelBase,
		MaxBytesForLevelMultiplier:          o.MaxBytesForLevelMultiplier,
		LevelCompactionDynamicLevelBytes:    o.LevelCompactionDynamicLevelBytes,
		SoftPendingCompactionBytesLimit:     o.SoftPendingCompactionBytesLimit,
		HardPendingCompactionBytesLimit:     o.HardPendingCompactionBytesLimit,
		EnableBlobFiles:                     o.EnableBlobFiles,
		MinBlobSize:                         o.MinBlobSize,
		BlobFileSize:                        o.BlobFileSize,
		BlobCompressionType:                 o.BlobCompressionType,
		EnableBlobGarbageCollection:         o.EnableBlobGarbageCollection,
		BlobGarbageCollectionAgeCutoff:      o.BlobGarbageCollectionAgeCutoff,
		BlobGarbageCollectionForceThreshold: o.BlobGarbageCollectionForceThreshold,
	}
}

// withFamily returns o with its per-family fields replaced by c's (nil:
// all defaults), the defaults applied and the result validated.
func (o Options) withFamily(c *ColumnFamilyOptions) (Options, error) {
	if c == nil {
		// nil means RocksDB's default ColumnFamilyOptions, not the default
		// family's: Options' per-family fields are that family's own.
		c = &ColumnFamilyOptions{}
	}
	{
		o.WriteBufferSize = c.WriteBufferSize
		o.MaxWriteBufferNumber = c.MaxWriteBufferNumber
		o.BloomBitsPerKey = c.BloomBitsPerKey
		o.PrefixExtractor = c.PrefixExtractor
		o.Compression = c.Compression
		o.CompactionStyle = c.CompactionStyle
		o.FIFOMaxTableFilesSize = c.FIFOMaxTableFilesSize
		o.FIFOAllowCompaction = c.FIFOAllowCompaction
		o.DisableAutoCompactions = c.DisableAutoCompactions
		o.DisableReadTriggeredCompactions = c.DisableReadTriggeredCompactions
		o.MergeOperator = c.MergeOperator
		o.CompactionFilter = c.CompactionFilter
		o.Comparer = c.Comparer
		o.TTL = c.TTL
		o.BlockSize = c.BlockSize
		o.IndexType = c.IndexType
		o.PartitionFilters = c.PartitionFilters
		o.MetadataBlockSize = c.MetadataBlockSize
		o.Level0FileNumCompactionTrigger = c.Level0FileNumCompactionTrigger
		o.Level0SlowdownWritesTrigger = c.Level0SlowdownWritesTrigger
		o.Level0StopWritesTrigger = c.Level0StopWritesTrigger
		o.TargetFileSizeBase = c.TargetFileSizeBase
		o.MaxBytesForLevelBase = c.MaxBytesForLevelBase
		o.MaxBytesForLevelMultiplier = c.MaxBytesForLevelMultiplier
		o.LevelCompactionDynamicLevelBytes = c.LevelCompactionDynamicLevelBytes
		o.SoftPendingCompactionBytesLimit = c.SoftPendingCompactionBytesLimit
		o.HardPendingCompactionBytesLimit = c.HardPendingCompactionBytesLimit
		o.EnableBlobFiles = c.EnableBlobFiles
		o.MinBlobSize = c.MinBlobSize
		o.BlobFileSize = c.BlobFileSize
		o.BlobCompressionType = c.BlobCompressionType
		o.EnableBlobGarbageCollection = c.EnableBlobGarbageCollection
		o.BlobGarbageCollectionAgeCutoff = c.BlobGarbageCollectionAgeCutoff
		o.BlobGarbageCollectionForceThreshold = c.BlobGarbageCollectionForceThreshold
	}
	r := o.withDefaults()
	return r, r.validate()
}

// newColumnFamily makes the handle of family vf with options o (already
// validated). d.mu must be held, or the DB not yet shared.
func (d *DB) newColumnFamily(vf *version.Family, o Options) *ColumnFamily {
	cf := &ColumnFamily{d: d, id: vf.ID(), name: vf.Name(), opts: o}
	cf.mu.vf = vf
	cf.cmp = vf.Current().Comparer()
	d.cmps.Store(cf.id, cf.cmp)
	d.cmpNames.LoadOrStore(cf.cmp.Name, cf.cmp)
	cf.writeBufferSize.Store(int64(o.WriteBufferSize))
	cf.comp.disableAuto.Store(o.DisableAutoCompactions)
	cf.seekCompactions = !o.DisableReadTriggeredCompactions && !o.ReadOnly &&
		o.CompactionStyle == LevelCompaction
	cf.extractor.Store(newExtractorHandle(o.PrefixExtractor))
	cf.blob.Store(blobSettingsOf(&o))
	return cf
}

// Name returns the family's name.
func (cf *ColumnFamily) Name() string { return cf.name }

// ID returns the family's RocksDB id: 0 for the default family; ids are
// never reused, even after a drop.
func (cf *ColumnFamily) ID() uint32 { return cf.id }

// check returns ErrClosed after Close, and an ErrInvalidArgument error for
// a dropped family or a handle of another database.
func (cf *ColumnFamily) check(d *DB) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if cf == nil {
		return errors.Wrap(ErrInvalidArgument, "strata: nil column family")
	}
	if cf.d != d {
		return errors.Wrapf(ErrInvalidArgument, "strata: column family %q belongs to another database", cf.name)
	}
	if cf.dropped.Load() {
		return errors.Wrapf(ErrInvalidArgument, "strata: column family %q (id %d) was dropped", cf.name, cf.id)
	}
	return nil
}

// DefaultColumnFamily returns the handle of the default family, the one the
// DB's own methods act on.
func (d *DB) DefaultColumnFamily() *ColumnFamily { return d.def }

// ColumnFamily returns the handle of the live family named name, or nil.
func (d *DB) ColumnFamily(name string) *ColumnFamily {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, cf := range d.mu.fams {
		if cf.name == name {
			return cf
		}
	}
	return nil
}

// ColumnFamilies returns the handles of the live families, the default
// first, then by ID.
func (d *DB) ColumnFamilies() []*ColumnFamily {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*ColumnFamily(nil), d.mu.fams...)
}

// comparerOf returns the order of the family with id (bytewise for an id
// no family had). It takes no lock.
func (d *DB) comparerOf(id uint32) *base.Comparer {
	if c, ok := d.cmps.Load(id); ok {
		return c.(*base.Comparer)
	}
	return base.DefaultComparer
}

// comparerNamed returns the comparer of an open family named name, or a
// built-in one, or nil. It takes no lock.
func (d *DB) comparerNamed(name string) *base.Comparer {
	if c, ok := d.cmpNames.Load(name); ok {
		return c.(*base.Comparer)
	}
	return base.BuiltinComparer(name)
}

// familyLocked returns the live family with id, or nil. d.mu must be held.
func (d *DB) familyLocked(id uint32) *ColumnFamily {
	i := sort.Search(len(d.mu.fams), func(i int) bool { return d.mu.fams[i].id >= id })
	if i < len(d.mu.fams) && d.mu.fams[i].id == id {
		return d.mu.fams[i]
	}
	return nil
}

// CreateColumnFamily creates the family name with opts (nil: defaults) and
// returns its handle. The creation is durable when it returns: the MANIFEST
// records it and the OPTIONS file lists the family. A name that exists is
// an error wrapping ErrInvalidArgument.
func (d *DB) CreateColumnFamily(name string, opts *ColumnFamilyOptions) (*ColumnFamily, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	if d.opts.ReadOnly {
		return nil, errors.Wrap(ErrReadOnly, "strata: CreateColumnFamily on a read-only database")
	}
	if name == "" {
		return nil, errors.Wrap(ErrInvalidArgument, "strata: CreateColumnFamily: empty name")
	}
	if _, err := d.opts.withFamily(opts); err != nil {
		return nil, errors.Wrapf(err, "strata: column family %q", name)
	}
	if err := d.beginOp("CreateColumnFamily"); err != nil {
		return nil, err
	}
	defer d.endOp()
	var cf *ColumnFamily
	var err error
	// Families are added with the commit pipeline drained: a batch can
	// name the family only once its handle exists, and its MANIFEST
	// record is durable before any record of the family reaches the WAL.
	err = d.exclusive(func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.mu.bgErr != nil {
			return d.mu.bgErr
		}
		var err error
		cf, err = d.createFamilyLocked(name, opts, true)
		return err
	})
	if err != nil {
		return nil, err
	}
	return cf, nil
}

// createFamilyLocked records the new family name in the MANIFEST, makes
// its handle and memtable and, with writeOptions, rewrites the OPTIONS
// file. d.mu must be held and the commit pipeline drained (or the DB not
// yet shared).
func (d *DB) createFamilyLocked(name string, opts *ColumnFamilyOptions, writeOptions bool) (*ColumnFamily, error) {
	o, err := d.opts.withFamily(opts)
	if err != nil {
		return nil, errors.Wrapf(err, "strata: column family %q", name)
	}
	vs := d.mu.versions
	vs.WaitForWriter()
	if vs.FamilyByName(name) != nil {
		return nil, errors.Wrapf(ErrInvalidArgument, "strata: column family %q already exists", name)
	}
	id := vs.MaxColumnFamily() + 1
	// The family's log number is the current WAL: nothing older holds a
	// record of it.
	ve := &version.Edit{ColumnFamily: id, ColumnFamilyAdd: name, HasColumnFamilyAdd: true,
		LogNumber: d.mu.log.num, HasLogNumber: true, Comparer: internalComparer(o.Comparer)}
	if err := vs.LogAndApply(ve); err != nil {
		err = errors.Wrapf(err, "strata: creating column family %q", name)
		d.setBgErrLocked(err)
		return nil, err
	}
	cf := d.newColumnFamily(vs.Family(id), o)
	mem, err := d.newMemTable(cf, d.mu.log.num, 0, 0)
	if err != nil {
		return nil, err
	}
	cf.mu.mem = mem
	d.mu.fams = append(d.mu.fams, cf)
	d.updateReadStateLocked(cf)
	d.logf(slog.LevelInfo, "created column family", "name", name, "id", cf.id)
	if writeOptions {
		if err := d.writeOptionsFileLocked(); err != nil {
			return cf, errors.Wrapf(err, "strata: column family %q created, but the OPTIONS file was not rewritten", name)
		}
	}
	return cf, nil
}

// DropColumnFamily drops cf: the MANIFEST records the drop before it
// returns, the handle stops working (ErrInvalidArgument), and the family's
// files are deleted once no iterator or snapshot reads them. Iterators
// opened before the drop keep reading. The default family cannot be
// dropped.
func (d *DB) DropColumnFamily(cf *ColumnFamily) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if d.opts.ReadOnly {
		return errors.Wrap(ErrReadOnly, "strata: DropColumnFamily on a read-only database")
	}
	if err := cf.check(d); err != nil {
		return err
	}
	if cf.id == 0 {
		return errors.Wrap(ErrInvalidArgument, "strata: the default column family cannot be dropped")
	}
	if err := d.beginOp("DropColumnFamily"); err != nil {
		return err
	}
	defer d.endOp()
	return d.exclusive(func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if cf.dropped.Load() {
			return errors.Wrapf(ErrInvalidArgument, "strata: column family %q (id %d) was dropped", cf.name, cf.id)
		}
		if d.mu.bgErr != nil {
			return d.mu.bgErr
		}
		// A flush or compaction of the family may be writing: it finds
		// the family dropped when it is done and discards its output.
		vs := d.mu.versions
		vs.WaitForWriter()
		// Every file the family has becomes obsolete once no view reads
		// it.
		var files []uint64
		for _, lf := range cf.mu.vf.Current().Levels {
			for _, f := range lf {
				files = append(files, f.FileNum)
			}
		}
		ve := &version.Edit{ColumnFamily: cf.id, ColumnFamilyDrop: true}
		// The WALs only the dropped family needed are deleted below: the
		// oldest one the others need is recorded first (see checkLogNumber).
		ve.MinLogNumberToKeep, ve.HasMinLogNumberToKeep = d.minLogToKeepAfterLocked(cf, 1<<64-1), true
		if err := vs.LogAndApply(ve); err != nil {
			err = errors.Wrapf(err, "strata: dropping column family %q", cf.name)
			d.setBgErrLocked(err)
			return err
		}
		cf.dropped.Store(true)
		for i, x := range d.mu.fams {
			if x == cf {
				d.mu.fams = append(d.mu.fams[:i:i], d.mu.fams[i+1:]...)
				break
			}
		}
		d.mu.obsoleteTables = append(d.mu.obsoleteTables, files...)
		// The family's memtables leave the DB: readers still holding one
		// of its views (iterators opened before the drop) keep what it
		// lists alive through their references.
		d.releaseMemtablesLocked(cf)
		if err := d.writeOptionsFileLocked(); err != nil {
			return errors.Wrapf(err, "strata: column family %q dropped, but the OPTIONS file was not rewritten", cf.name)
		}
		d.deleteObsoleteFilesLocked()
		d.mu.cond.Broadcast()
		return nil
	})
}

// ListColumnFamilies returns the names of the live column families of the
// database in dir, "default" first, then by ID, as RocksDB's
// DB::ListColumnFamilies. It only reads CURRENT and the MANIFEST it names,
// so it may be called while the database is open (by this process or
// another); it then sees the families as of the last MANIFEST write.
func ListColumnFamilies(dir string) ([]string, error) {
	return listColumnFamilies(vfs.Default, dir)
}

func listColumnFamilies(fs vfs.FS, dir string) ([]string, error) {
	vs, err := version.Load(fs, dir, version.Options{Comparer: namesOnlyComparer})
	if err != nil {
		return nil, errors.Wrapf(err, "strata: listing the column families of %s", dir)
	}
	defer vs.Close()
	var names []string
	for _, f := range vs.Families() {
		names = append(names, f.Name())
	}
	return names, nil
}
