package db

import (
	"os"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/iterator"
	"github.com/stratadb/strata/internal/killpoint"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/table"
)

// tableWriterOptions builds the table package's options for a new file.
func (cf *ColumnFamily) tableWriterOptions(fileNum uint64) table.WriterOptions {
	o := table.WriterOptions{
		Comparer:          cf.cmp,
		BlockSize:         cf.opts.BlockSize,
		BloomBitsPerKey:   cf.opts.BloomBitsPerKey,
		WholeKeyFiltering: true,
		ColumnFamilyName:  cf.name,
		ColumnFamilyID:    cf.id,
		CreationTime:      cf.d.nowUnix(),
		FileNumber:        fileNum,
		DBIdentity:        cf.d.identity,
		TwoLevelIndex:     cf.opts.IndexType == IndexTwoLevelSearch,
		PartitionFilters:  cf.opts.PartitionFilters,
		MetadataBlockSize: cf.opts.MetadataBlockSize,
	}
	switch cf.opts.Compression {
	case SnappyCompression:
		o.Compression = table.SnappyCompression
	case ZstdCompression:
		o.Compression = table.ZSTDCompression
	default:
		o.Compression = table.NoCompression
	}
	if h := cf.extractor.Load(); h != nil {
		o.PrefixExtractor = h.ext
	}
	if cf.opts.MergeOperator != nil {
		o.MergeOperatorName = cf.opts.MergeOperator.Name()
	}
	return o
}

// writeTable writes every entry of it and the tombstones into table file
// fileNum, syncs it and returns its metadata. It closes it. It returns nil
// metadata when there was nothing to write.
//
// With bw, values of at least min_blob_size go to its blob files and the
// table holds their blob indexes.
func (cf *ColumnFamily) writeTable(fileNum uint64, it iterator.Iterator, tombs []base.Tombstone, level int, bw *blobWriter) (meta *version.FileMetadata, err error) {
	d := cf.d
	name := d.path(base.MakeFilename(base.FileKindTable, fileNum))
	vf, err := d.fs.Create(name)
	if err != nil {
		it.Close()
		return nil, errors.Wrapf(err, "strata: creating table %s", name)
	}
	f := newBufferedTableFile(vf)
	defer func() {
		if err != nil {
			f.Close()
			d.fs.Remove(name)
		}
	}()
	w := table.NewWriter(f, cf.tableWriterOptions(fileNum))
	var oldestBlob uint64
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		if k.Kind() == base.KindSet && bw.wants(v) {
			idx, num, err := bw.add(k.UserKey, v)
			if err != nil {
				it.Close()
				return nil, err
			}
			if oldestBlob == 0 {
				oldestBlob = num // numbers only grow within a job
			}
			k = base.MakeInternalKey(k.UserKey, k.SeqNum(), base.KindBlobIndex)
			v = idx
		} else if k.Kind() == base.KindBlobIndex && oldestBlob == 0 {
			// A blob index replayed from a WAL (RocksDB's stacked
			// BlobDB writes them) names a file of its own.
			if x, named, err := blobIndexOf(k.UserKey, v); err != nil {
				it.Close()
				return nil, err
			} else if named {
				oldestBlob = x.FileNum
			}
		}
		if err := w.Add(k, v); err != nil {
			it.Close()
			return nil, errors.Wrapf(err, "strata: writing table %s", name)
		}
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	for _, t := range tombs {
		if err := w.AddTombstone(t); err != nil {
			return nil, errors.Wrapf(err, "strata: writing table %s", name)
		}
	}
	wm, err := w.Finish()
	if err != nil {
		return nil, errors.Wrapf(err, "strata: finishing table %s", name)
	}
	killpoint.Maybe("table.before_sync")
	if err := f.Sync(); err != nil {
		return nil, errors.Wrapf(err, "strata: syncing table %s", name)
	}
	killpoint.Maybe("table.after_sync")
	if err := f.Close(); err != nil {
		return nil, errors.Wrapf(err, "strata: closing table %s", name)
	}
	if err := d.syncDir(); err != nil {
		return nil, err
	}
	now := cf.d.nowUnix()
	return &version.FileMetadata{
		FileNum:            fileNum,
		Size:               wm.Size,
		Smallest:           wm.Smallest.Clone(),
		Largest:            wm.Largest.Clone(),
		SmallestSeq:        wm.SmallestSeq,
		LargestSeq:         wm.LargestSeq,
		CreationTime:       now,
		OldestAncesterTime: now,
		NumRangeDeletions:  wm.NumRangeDeletions,
		RangeDelsKnown:     true,
		OldestBlobFile:     oldestBlob,
	}, nil
}

// syncDir makes the directory entries durable.
func (d *DB) syncDir() error { return syncDirPath(d.fs, d.dirname) }

// syncDirPath makes the entries of dir durable.
func syncDirPath(fs vfs.FS, dir string) error {
	if err := vfs.SyncDir(fs, dir); err != nil {
		return errors.Wrapf(err, "strata: syncing directory %s", dir)
	}
	return nil
}

func (d *DB) path(name string) string { return d.dirname + string(os.PathSeparator) + name }
