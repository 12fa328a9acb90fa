package db

import (
	"encoding/binary"

	"github.com/stratadb/strata/internal/base"
)

// FilterDecision is what a CompactionFilter decides for one entry.
type FilterDecision int

const (
	// FilterKeep keeps the entry as it is.
	FilterKeep FilterDecision = iota
	// FilterRemove removes the value: it is replaced by a deletion at the
	// same sequence number (dropped in turn where no older version can
	// lie below), so that an older version of the key never comes back.
	FilterRemove
	// FilterChangeValue replaces the value with newValue.
	FilterChangeValue
	// FilterRemoveAndSkipUntil removes the entry and every entry of a key
	// below newValue (exclusive, in the family's key order) that no
	// snapshot sees, without calling the filter on them and without leaving
	// deletions: older versions of those keys in other stripes or lower
	// levels may show again (RocksDB's kRemoveAndSkipUntil caveat). A
	// newValue <= the key is FilterKeep.
	FilterRemoveAndSkipUntil
)

// String names the decision.
func (d FilterDecision) String() string {
	switch d {
	case FilterKeep:
		return "FilterKeep"
	case FilterRemove:
		return "FilterRemove"
	case FilterChangeValue:
		return "FilterChangeValue"
	case FilterRemoveAndSkipUntil:
		return "FilterRemoveAndSkipUntil"
	}
	return "FilterDecision(?)"
}

// CompactionFilter decides, in every compaction, what becomes of the
// values it rewrites: RocksDB's CompactionFilter (its FilterV2 decisions).
// Set it in Options.CompactionFilter or ColumnFamilyOptions; its Name is
// recorded in the OPTIONS file as compaction_filter.
//
// Filter is called with the compaction's start level, the user key and the
// value of the newest version of a key, and only when no live snapshot can
// see that version (its sequence number is above every snapshot's): a
// snapshot always reads what was written before it, filters or not. A
// value stored in a blob file is read from it and passed as the value. Older
// versions, deletions and single deletions are never passed (RocksDB's
// kValue entries only). With Options.TTL set, the value is passed without
// its timestamp and expired values are removed before the filter is asked.
//
// Two optional methods refine it, found by type assertion:
//
//   - FilterOnFlush() bool: true applies the filter in flushes too (level
//     0), as RocksDB's CompactionFilterFactory::ShouldFilterTableFileCreation
//     for kFlush; without it flushes write values unfiltered.
//   - FilterMergeOperand(level int, key, operand []byte) bool: RocksDB's
//     FilterMergeOperand, asked in compactions for each merge operand no
//     snapshot sees; true drops the operand (what lies under it then
//     shows through, or the value below if it was the last one). Without
//     it operands are kept.
//   - FilterBlobByKey(level int, key []byte) (d FilterDecision, newValue
//     []byte, decided bool): RocksDB's FilterBlobByKey, asked first for a
//     value stored in a blob file, so that a filter deciding by key alone
//     spares the compaction the blob read. decided false is RocksDB's
//     kUndetermined: the value is read and Filter asked as for any value.
//     Not asked with Options.TTL set (the TTL filter needs the value, and
//     RocksDB's TtlCompactionFilter leaves the decision undetermined too).
//
// The engine calls the methods from background goroutines, possibly
// concurrently; the slices passed are valid only during the call and must
// not be modified. newValue (ChangeValue, RemoveAndSkipUntil) is copied.
type CompactionFilter interface {
	// Name identifies the filter in the OPTIONS file (compaction_filter).
	Name() string
	// Filter decides the fate of one value.
	Filter(level int, key, value []byte) (d FilterDecision, newValue []byte)
}

// filterOnFlush and operandFilter are the optional methods of a
// CompactionFilter (see its doc).
type filterOnFlush interface{ FilterOnFlush() bool }

type operandFilter interface {
	FilterMergeOperand(level int, key, operand []byte) bool
}

type blobKeyFilter interface {
	FilterBlobByKey(level int, key []byte) (d FilterDecision, newValue []byte, decided bool)
}

// entryFilter is a family's effective filter for one flush or compaction:
// the user's CompactionFilter, under the built-in TTL filter when the
// family has a TTL (RocksDB's TtlCompactionFilter layered over the user's).
type entryFilter struct {
	user    CompactionFilter
	operand operandFilter // nil: operands are kept
	blobKey blobKeyFilter // nil: blob values are always read for Filter
	ttl     int64         // seconds; 0: no TTL
	now     int64         // unix seconds, read once per job
	level   int
	newVal  []byte // ChangeValue's value with the timestamp appended again
}

// newEntryFilter returns cf's filter for a job at level, or nil when the
// family has neither filter nor TTL (or, for a flush, none that asks to
// run in flushes).
func (cf *ColumnFamily) newEntryFilter(level int, flush bool) *entryFilter {
	user := cf.opts.CompactionFilter
	ttl := cf.ttlSeconds()
	if flush {
		// RocksDB's TTL filter factory filters compactions only; a user
		// filter runs in flushes when it asks to.
		ff, ok := user.(filterOnFlush)
		if !ok || !ff.FilterOnFlush() {
			return nil
		}
	}
	if user == nil && ttl == 0 {
		return nil
	}
	f := &entryFilter{user: user, ttl: ttl, level: level}
	if ttl > 0 {
		f.now = cf.d.nowUnix()
	}
	if of, ok := user.(operandFilter); ok {
		f.operand = of
	}
	if bf, ok := user.(blobKeyFilter); ok && ttl == 0 {
		f.blobKey = bf
	}
	return f
}

// filter decides for the value of key. newValue is valid until the next
// call.
func (f *entryFilter) filter(key, value []byte) (FilterDecision, []byte) {
	if f.ttl == 0 {
		return f.user.Filter(f.level, key, value)
	}
	if len(value) < ttlSuffixLen {
		// Not in the TTL format (written before TTL was on): RocksDB's
		// IsStale keeps it; so does Strata, without asking the user.
		return FilterKeep, nil
	}
	if ttlExpired(value, f.ttl, f.now) {
		return FilterRemove, nil
	}
	if f.user == nil {
		return FilterKeep, nil
	}
	n := len(value) - ttlSuffixLen
	d, nv := f.user.Filter(f.level, key, value[:n])
	if d == FilterChangeValue {
		// The new value keeps the old write time (TtlCompactionFilter).
		f.newVal = append(append(f.newVal[:0], nv...), value[n:]...)
		return d, f.newVal
	}
	return d, nv
}

// filterBlobByKey asks the filter's FilterBlobByKey about the blob value
// of key; decided is false when it has none or leaves it undetermined.
func (f *entryFilter) filterBlobByKey(key []byte) (FilterDecision, []byte, bool) {
	if f.blobKey == nil {
		return FilterKeep, nil, false
	}
	return f.blobKey.FilterBlobByKey(f.level, key)
}

// dropOperand reports whether the operand filter drops op.
func (f *entryFilter) dropOperand(key, op []byte) bool {
	if f == nil || f.operand == nil {
		return false
	}
	if f.ttl > 0 {
		if len(op) < ttlSuffixLen {
			return false
		}
		op = op[:len(op)-ttlSuffixLen]
	}
	return f.operand.FilterMergeOperand(f.level, key, op)
}

// skipUntil validates a FilterRemoveAndSkipUntil bound for key: it returns
// a copy of it, or nil when it is not above key (the decision is then
// FilterKeep, as RocksDB's).
func skipUntil(cmp *base.Comparer, key, bound []byte) []byte {
	if cmp.CompareUser(bound, key) <= 0 {
		return nil
	}
	return append([]byte(nil), bound...)
}

// ttlSuffixLen is the length of the write time RocksDB's DBWithTTL appends
// to every value and merge operand (kTSLength): 4 bytes, little-endian
// unix seconds.
const ttlSuffixLen = 4

// ttlExpired reports whether v (with its suffix) is stale at now, as
// RocksDB's IsStale: its write time plus ttl is before now.
func ttlExpired(v []byte, ttl, now int64) bool {
	ts := int64(binary.LittleEndian.Uint32(v[len(v)-ttlSuffixLen:]))
	return ts+ttl < now
}
