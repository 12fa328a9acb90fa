package db

import (
	"encoding/binary"
	"io"
	"sync/atomic"
	"time"
	_ "unsafe" // for go:linkname nanotime

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/batch"
)

// TTL (Options.TTL, per family) stores values in RocksDB's DBWithTTL
// format (utilities/ttl): every value and merge operand written carries a
// 4-byte little-endian suffix, its write time in unix seconds, so that
// `ldb --ttl` reads Strata's databases and Strata reads those RocksDB's
// DBWithTTL wrote. Reads strip the suffix; beyond RocksDB, they never
// return a value whose write time plus the TTL is before now (RocksDB's
// reads return it until a compaction drops it), unless
// ReadOptions.IncludeExpired. Compactions drop expired values through the
// built-in TTL filter, under the user's CompactionFilter.

// maxTTL is the largest TTL: RocksDB keeps it in an int32 of seconds.
const maxTTL = time.Duration(1<<31-1) * time.Second

// ttlSeconds returns the family's TTL in seconds, 0 for none.
func (cf *ColumnFamily) ttlSeconds() int64 { return int64(cf.opts.TTL / time.Second) }

// nowUnix is the clock TTL reads, in unix seconds: Options.Clock, or
// time.Now without one.
func (d *DB) nowUnix() int64 {
	if f := d.clock.Load(); f != nil {
		return (*f)().Unix()
	}
	return unixNow()
}

// unixNow is time.Now().Unix() for reads, which ask once per Get: the
// current second is cached with the monotonic instant it ends at, so that
// most calls read only the monotonic clock, at half the cost of time.Now
// (which reads the wall clock and the monotonic one). It stays exact to
// the second as long as the wall clock runs with the monotonic one; a step
// of the wall clock (NTP) shows at the end of the cached second.
func unixNow() int64 {
	m := nanotime()
	if c := cachedSecond.Load(); c != nil && m < c.endsAt {
		return c.sec
	}
	t := time.Now()
	// m was read before t, so m plus what was left of t's second is no
	// later than the monotonic instant that second ends.
	cachedSecond.Store(&unixSecond{sec: t.Unix(), endsAt: m + int64(time.Second) - int64(t.Nanosecond())})
	return t.Unix()
}

// unixSecond is one wall-clock second and the monotonic instant (nanotime)
// at or before which it ends.
type unixSecond struct{ sec, endsAt int64 }

var cachedSecond atomic.Pointer[unixSecond]

// nanotime is the runtime's monotonic clock, what time.Now reads besides
// the wall clock.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// appendTTL appends the write time now to v, into a new slice.
func appendTTL(v []byte, now int64) []byte {
	out := make([]byte, len(v)+ttlSuffixLen)
	copy(out, v)
	binary.LittleEndian.PutUint32(out[len(v):], uint32(now))
	return out
}

// ttlBatch rewrites b for families with a TTL: each of their values and
// merge operands gains the write time (RocksDB's DBWithTTLImpl::Write
// handler). It returns b itself when no record needs it.
func (d *DB) ttlBatch(b *batch.Batch, fams []*ColumnFamily) (*batch.Batch, error) {
	ttl := func(id uint32) bool {
		for _, f := range fams {
			if f.id == id {
				return f.opts.TTL > 0
			}
		}
		return false
	}
	r, err := batch.NewReader(b.Data())
	if err != nil {
		return nil, err
	}
	now := d.nowUnix()
	out := new(batch.Batch)
	for {
		id, kind, key, value, err := r.NextCF()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		switch kind {
		case base.KindSet:
			if ttl(id) {
				value = appendTTL(value, now)
			}
			out.PutCF(id, key, value)
		case base.KindMerge:
			if ttl(id) {
				value = appendTTL(value, now)
			}
			out.MergeCF(id, key, value)
		case base.KindDelete:
			out.DeleteCF(id, key)
		case base.KindSingleDelete:
			out.SingleDeleteCF(id, key)
		case base.KindRangeDelete:
			out.DeleteRangeCF(id, key, value)
		default:
			return nil, errors.AssertionFailedf("strata: batch record of kind %s", kind)
		}
	}
}

// stripTTL turns a value read from a TTL family into the caller's: it
// removes the suffix, and returns ErrNotFound for an expired value unless
// includeExpired. A value too short to carry a suffix is ErrCorruption
// (RocksDB's SanityCheckTimestamp).
func (cf *ColumnFamily) stripTTL(key, v []byte, includeExpired bool) ([]byte, error) {
	if len(v) < ttlSuffixLen {
		return nil, base.CorruptionErrorf("strata: column family %q: value of key %q has %d bytes, too short for its TTL timestamp", cf.name, key, len(v))
	}
	if !includeExpired && ttlExpired(v, cf.ttlSeconds(), cf.d.nowUnix()) {
		return nil, ErrNotFound
	}
	return v[:len(v)-ttlSuffixLen], nil
}

// ttlMergeOperator is RocksDB's TtlMergeOperator: it strips the operands'
// and the existing value's timestamps, runs the user's operator and
// appends a timestamp to the result. RocksDB appends the merge's current
// time; Strata appends the newest operand's write time instead, so that a
// key's merged value expires TTL after its last write, not TTL after
// whatever read or compaction last merged it (with RocksDB's rule a value
// compacted more often than the TTL never expires). The format is the
// same.
type ttlMergeOperator struct {
	user MergeOperator
	cf   *ColumnFamily
}

func (t ttlMergeOperator) Name() string { return t.user.Name() }

// strip returns the operands without their timestamps and the newest
// write time among them.
func (t ttlMergeOperator) strip(key []byte, operands [][]byte) ([][]byte, uint32, error) {
	out := make([][]byte, len(operands))
	var newest uint32
	for i, op := range operands {
		if len(op) < ttlSuffixLen {
			return nil, 0, base.CorruptionErrorf("strata: column family %q: merge operand of key %q has %d bytes, too short for its TTL timestamp", t.cf.name, key, len(op))
		}
		n := len(op) - ttlSuffixLen
		if ts := binary.LittleEndian.Uint32(op[n:]); ts > newest {
			newest = ts
		}
		out[i] = op[:n]
	}
	return out, newest, nil
}

func (t ttlMergeOperator) FullMerge(key, existing []byte, operands [][]byte) ([]byte, error) {
	ops, ts, err := t.strip(key, operands)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		if len(existing) < ttlSuffixLen {
			return nil, base.CorruptionErrorf("strata: column family %q: value of key %q has %d bytes, too short for its TTL timestamp", t.cf.name, key, len(existing))
		}
		existing = existing[:len(existing)-ttlSuffixLen]
	}
	v, err := t.user.FullMerge(key, existing, ops)
	if err != nil {
		return nil, err
	}
	return binary.LittleEndian.AppendUint32(v, ts), nil
}

func (t ttlMergeOperator) PartialMerge(key []byte, operands [][]byte) ([]byte, bool) {
	ops, ts, err := t.strip(key, operands)
	if err != nil {
		return nil, false // kept as they are; a read reports the damage
	}
	v, ok := t.user.PartialMerge(key, ops)
	if !ok {
		return nil, false
	}
	return binary.LittleEndian.AppendUint32(v, ts), true
}

// mergeOperator returns the family's effective merge operator: the
// configured one, under the TTL operator when the family has a TTL; nil
// when none is configured.
func (cf *ColumnFamily) mergeOperator() MergeOperator {
	op := cf.opts.MergeOperator
	if op == nil || cf.opts.TTL <= 0 {
		return op
	}
	return ttlMergeOperator{user: op, cf: cf}
}
