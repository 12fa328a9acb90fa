package db

import (
	"bytes"
	"strconv"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/memtable"
	"github.com/stratadb/strata/internal/version"
)

// PropEstimateNumKeys is RocksDB's "rocksdb.estimate-num-keys": an estimate
// of the number of live keys, computed as RocksDB computes it (see
// estimateNumKeys).
const PropEstimateNumKeys = "rocksdb.estimate-num-keys"

// ApproximateSizeOptions selects what ApproximateSize counts, as RocksDB's
// SizeApproximationOptions does. nil means table files only (RocksDB's
// defaults: include_files true, include_memtables false).
type ApproximateSizeOptions struct {
	// IncludeMemtables adds the encoded size of the memtable entries in the
	// range (key, 8-byte trailer and value of every version).
	IncludeMemtables bool
	// ExcludeFiles leaves table files out. Excluding files without
	// including memtables is ErrInvalidArgument.
	ExcludeFiles bool
}

// ApproximateSize estimates the bytes the default family holds in [start,
// end) (see ColumnFamily.ApproximateSize).
func (d *DB) ApproximateSize(start, end []byte, opts *ApproximateSizeOptions) (uint64, error) {
	return d.def.ApproximateSize(start, end, opts)
}

// ApproximateSize estimates the bytes the keys in [start, end) occupy: on
// disk, in the table files of the current version, and with
// IncludeMemtables in the memtables too. nil start means the smallest key,
// nil end no upper bound; start == end gives 0, start > end is
// ErrInvalidArgument.
//
// For a table that lies wholly inside the range it counts the file size;
// for one that straddles a bound it counts the distance between the data
// blocks the table's index gives for the bounds (RocksDB's
// ApproximateOffsetOf), reading only index blocks. The estimate is
// therefore exact to within one data block per straddling table, and
// counts every version of a key and every tombstone still on disk, not
// only live data. Memtables are walked entry by entry over the range.
func (cf *ColumnFamily) ApproximateSize(start, end []byte, opts *ApproximateSizeOptions) (uint64, error) {
	d := cf.d
	if err := cf.check(d); err != nil {
		return 0, err
	}
	var o ApproximateSizeOptions
	if opts != nil {
		o = *opts
	}
	if o.ExcludeFiles && !o.IncludeMemtables {
		return 0, errors.Wrap(ErrInvalidArgument, "strata: ApproximateSize: neither files nor memtables included")
	}
	if start != nil && end != nil && cf.cmp.CompareUser(start, end) > 0 {
		return 0, errors.Wrapf(ErrInvalidArgument, "strata: ApproximateSize: start %q > end %q", start, end)
	}
	if end != nil && bytes.Equal(start, end) {
		return 0, nil
	}
	rs := cf.loadReadState()
	defer rs.unref()
	var total uint64
	if !o.ExcludeFiles {
		for _, files := range rs.version.Levels {
			for _, f := range files {
				n, err := d.approximateTableSize(cf.cmp, f, start, end)
				if err != nil {
					return 0, err
				}
				total += n
			}
		}
	}
	if o.IncludeMemtables {
		for _, m := range rs.mems {
			total += memtableRangeBytes(m.MemTable, start, end)
		}
	}
	return total, nil
}

// approximateTableSize is the part of f's bytes holding keys in [start,
// end) (end nil: unbounded).
func (d *DB) approximateTableSize(cmp *base.Comparer, f *version.FileMetadata, start, end []byte) (uint64, error) {
	smallest, largest := f.Smallest.UserKey, f.Largest.UserKey
	if end != nil && cmp.CompareUser(end, smallest) <= 0 {
		return 0, nil
	}
	// nil start is the smallest key: under orders other than bytewise the
	// empty key is not.
	if start != nil && cmp.CompareUser(start, largest) > 0 {
		return 0, nil
	}
	startWhole := start == nil || cmp.CompareUser(start, smallest) <= 0
	endWhole := end == nil || cmp.CompareUser(end, largest) > 0
	if startWhole && endWhole {
		return f.Size, nil
	}
	e, err := d.tables.acquire(f)
	if err != nil {
		return 0, err
	}
	defer d.tables.release(e)
	offset := func(k []byte) (uint64, error) {
		off, past, err := e.reader.ApproximateOffsetOf(k)
		if past || off > f.Size {
			off = f.Size
		}
		return off, err
	}
	var lo, hi uint64 = 0, f.Size
	if !startWhole {
		if lo, err = offset(start); err != nil {
			return 0, err
		}
	}
	if !endWhole {
		if hi, err = offset(end); err != nil {
			return 0, err
		}
	}
	if hi < lo {
		return 0, nil
	}
	return hi - lo, nil
}

// memtableRangeBytes sums the encoded sizes of m's point entries in [start,
// end).
func memtableRangeBytes(m *memtable.MemTable, start, end []byte) uint64 {
	var it memtable.Iter
	it.Init(m)
	var n uint64
	ok := it.First()
	if start != nil {
		ok = it.SeekGE(start)
	}
	for ; ok; ok = it.Next() {
		k := it.Key()
		if end != nil && m.Comparer().CompareUser(k.UserKey, end) >= 0 {
			break
		}
		n += uint64(len(k.UserKey)) + 8 + uint64(len(it.Value()))
	}
	return n
}

// estimateNumKeys is RocksDB's estimate of live keys (InternalStats'
// HandleEstimateNumKeys): the memtables' entries less their deletions, plus,
// over the table files, the non-deletion entries less the deletions
// (entries − 2 × deletions, floored at 0), from each table's properties.
// Overwrites not yet compacted away count once per version, and a deletion
// in a memtable is not subtracted from the key it deletes; after a full
// compaction without snapshots the estimate is exact.
func (cf *ColumnFamily) estimateNumKeys() (string, bool) {
	d := cf.d
	rs := cf.loadReadState()
	defer rs.unref()
	var mem, memDel uint64
	for _, m := range rs.mems {
		mem += m.NumEntries()
		memDel += m.NumDeletes()
	}
	var entries, deletions uint64
	for _, files := range rs.version.Levels {
		for _, f := range files {
			e, err := d.tables.acquire(f)
			if err != nil {
				// A table that cannot be opened counts as empty: the
				// estimate is best effort, and reads report the error.
				continue
			}
			p := e.reader.Properties()
			entries += p.NumEntries
			deletions += p.NumDeletions
			d.tables.release(e)
		}
	}
	var files uint64
	if nonDel := entries - min(entries, deletions); nonDel > deletions {
		files = nonDel - deletions
	}
	est := files + mem - min(mem, memDel)
	return strconv.FormatUint(est, 10), true
}
