// Package memtable is the in-memory write buffer of the engine: a skiplist
// of internal keys stored in a fixed-size arena, plus a second skiplist of
// range tombstones in the same arena. It is not covered by the API contract.
//
// # Concurrency
//
// Writers either take turns (Add, AddRangeDel: one goroutine at a time) or
// run AddConcurrent from any number of goroutines at once; callers never mix
// the two at the same time (the db's commit pipeline runs Add only under its
// lock with no AddConcurrent in progress, and starts an AddConcurrent only
// under that lock). Any number of goroutines may read (Get, iterators,
// Tombstones, the statistics) at the same time, without a lock and while
// writers run. A reader sees every entry whose Add returned before
// the read began, and may or may not see entries added concurrently.
//
// # Arena layout
//
// The layout lives in memory only and never reaches disk. The arena is one
// []byte allocated by New. Offset 0 means "no node"; the first 8 bytes are
// never handed out. Every allocation is 8-byte aligned. A node is:
//
//	+0   trailer  uint64, little-endian: seq<<8 | kind
//	+8   keyLen   uint32, little-endian
//	+12  valueLen uint32, little-endian
//	+16  height   uint32, little-endian, 1..16
//	+20  prev     uint32, native order, atomic: previous node at level 0
//	+24  next     height × uint64 link words, native order, atomic: per
//	              level, the next node's offset (low 32 bits) and the
//	              summary of its key (high 32 bits; see linkWord)
//	     key      keyLen bytes (the user key)
//	     value    valueLen bytes
//
// New allocates four sentinel nodes of height 16 with empty keys: the head
// and tail of the point list, then those of the range-tombstone list. A range
// tombstone is a node whose key is the start key, whose trailer is
// (seq, KindRangeDelete) and whose value is the end key.
//
// # Why backward links
//
// Prev follows a back link at level 0 instead of searching again from the
// head as LevelDB does: reverse scans cost O(1) per step rather than
// O(log n), for 4 bytes per node. A back link may lag behind a concurrent
// insert (it is stored after the forward link), so Prev checks it by walking
// forward from the linked node until it meets the current one; that walk is
// one load unless an insert raced. Pebble keeps back links on every level for
// its lock-free concurrent inserts; with a single writer, level 0 suffices.
package memtable

import (
	"bytes"
	"math"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
)

// ErrArenaFull is returned by Add and AddRangeDel when the entry does not fit
// in the arena. The memtable is unchanged; the db rotates it and retries in a
// new one, of at least SizeFor bytes.
var ErrArenaFull = errors.New("strata: memtable arena full")

var (
	errFull      = ErrArenaFull
	errDuplicate = errors.New("duplicate internal key")
)

// fixedOverhead is the arena space a memtable uses before any entry: the
// reserved prefix and the sentinels of both lists.
const fixedOverhead = arenaReserved + 2*sentinelBytes

// EmptySize is the arena space an empty memtable already uses: a memtable
// that must take n more bytes needs an arena of at least EmptySize+n.
const EmptySize = fixedOverhead

// SizeFor returns an arena size large enough for a memtable that holds one
// entry (or one range tombstone) with the given key and value lengths. For a
// tombstone, keyLen is the start key's and valueLen the end key's length. The
// result may exceed MaxArenaSize, in which case no memtable can hold the
// entry.
func SizeFor(keyLen, valueLen int) int {
	n := maxEntryBytes(keyLen, valueLen)
	if n > math.MaxInt-fixedOverhead {
		return math.MaxInt
	}
	return int(n) + fixedOverhead
}

// MemTable is a sorted, append-only set of internal keys and values with a
// set of range tombstones, in one arena.
//
// Invariants:
//   - points holds point entries (any kind but KindRangeDelete), rangeDels
//     holds range tombstones; each holds every internal key at most once.
//   - The statistics (counts, sequence range, hasTombstones) are written
//     after the entry is published, and read atomically: by the single
//     writer with plain stores, by concurrent writers with atomic adds and
//     a compare-and-swap minimum and maximum of the sequence range.
//   - smallestSeq is math.MaxUint64 and largestSeq 0 while nothing has been
//     added.
type MemTable struct {
	cmp       *base.Comparer
	arena     *arena
	points    *skiplist
	rangeDels *skiplist

	// writing is set while Add or AddRangeDel runs; it catches callers that
	// break the single-writer rule (not all of them: it is a cheap check).
	writing atomic.Bool

	hasTombstones atomic.Bool
	numEntries    atomic.Uint64
	numDeletes    atomic.Uint64
	numRangeDels  atomic.Uint64
	smallestSeq   atomic.Uint64
	largestSeq    atomic.Uint64
}

// New returns an empty memtable whose arena has arenaSize bytes. Sizes below
// the fixed overhead of a memtable are raised to it. New panics when
// arenaSize exceeds MaxArenaSize: a caller that cannot rule that out uses
// Make.
func New(arenaSize int) *MemTable {
	m, err := Make(arenaSize)
	if err != nil {
		panic(err)
	}
	return m
}

// Make is New for sizes that come from user input: an arenaSize above
// MaxArenaSize returns an ErrInvalidArgument error naming the size instead
// of panicking.
func Make(arenaSize int) (*MemTable, error) {
	if int64(arenaSize) > MaxArenaSize {
		return nil, base.InvalidArgumentf("memtable arena size %d exceeds the limit of %d bytes", arenaSize, int64(MaxArenaSize))
	}
	if arenaSize < fixedOverhead {
		arenaSize = fixedOverhead
	}
	return makeWith(newArena(uint32(arenaSize)))
}

// makeWith builds an empty memtable over a, whose used part must be zero
// beyond arenaReserved.
func makeWith(a *arena) (*MemTable, error) {
	m := &MemTable{arena: a}
	var ok1, ok2 bool
	m.points, ok1 = newSkiplist(m.arena)
	m.rangeDels, ok2 = newSkiplist(m.arena)
	if !ok1 || !ok2 {
		return nil, base.AssertionFailedf("memtable: arena of %d bytes cannot hold its sentinels", len(a.buf))
	}
	m.smallestSeq.Store(math.MaxUint64)
	return m, nil
}

// SetSummaryPrefix sets the prefix that the skiplists strip from user keys
// before summarizing them in their link words. A search decides a
// comparison from the summaries, without loading the node, when both keys
// start with the prefix and their next 28 or so bits differ (leading zero
// bytes are skipped too), so the prefix should be the one the keys to come
// share: the db passes the common prefix of the previous memtable's
// smallest and largest keys (CommonPrefix). Keys without it are compared
// in full, as keys with equal summaries are: any prefix is correct, a good
// one is faster. It must be called before the memtable is used or shared.
func (m *MemTable) SetSummaryPrefix(p []byte) {
	p = bytes.Clone(p)
	m.points.pfx, m.rangeDels.pfx = p, p
}

// SetComparer sets the order of user keys (nil or a bytewise comparer:
// bytewise, the default). It must be called before the memtable is used or
// shared.
func (m *MemTable) SetComparer(c *base.Comparer) {
	var general func(a, b []byte) int
	if c != nil && !c.Bytewise {
		general = c.Compare
	}
	m.points.general, m.rangeDels.general = general, general
	m.cmp = c
}

// Comparer returns the order set by SetComparer (never nil).
func (m *MemTable) Comparer() *base.Comparer { return m.cmp.OrDefault() }

// CommonPrefix returns the longest common prefix of the smallest and the
// largest user key among the point entries (so of all of them), or nil
// when there are fewer than two distinct ones. The slice is the caller's.
func (m *MemTable) CommonPrefix() []byte {
	s := m.points
	first, last := s.next(s.head, 0), s.last()
	if first == s.tail {
		return nil
	}
	a, b := s.key(first), s.key(last)
	if bytes.Equal(a, b) {
		return nil // one user key tells nothing of the others
	}
	return bytes.Clone(a[:base.SharedPrefixLen(a, b)])
}

// Add copies key and value into the memtable. It returns ErrArenaFull when
// they do not fit, an ErrInvalidArgument error when no arena could hold them
// (SizeFor > MaxArenaSize), and an assertion error when the internal key is
// already present, the kind is KindRangeDelete (use AddRangeDel) or another
// write is in progress. The memtable is unchanged on error.
//
// Callers must serialize Add and AddRangeDel.
func (m *MemTable) Add(key base.InternalKey, value []byte) error {
	if key.Kind() == base.KindRangeDelete {
		return base.AssertionFailedf("memtable: Add of a range deletion %s", key)
	}
	if err := m.beginWrite(len(key.UserKey), len(value)); err != nil {
		return err
	}
	defer m.writing.Store(false)
	if err := m.points.insert(key.UserKey, key.Trailer, value); err != nil {
		return m.wrapInsertError(err, key)
	}
	m.countPoint(key.Kind())
	m.noteSeq(key.SeqNum())
	return nil
}

// AddRangeDel copies the tombstone t into the memtable; t.Seq is its sequence
// number. Errors are as for Add. Callers validate the range (Start < End) and
// must serialize AddRangeDel and Add.
func (m *MemTable) AddRangeDel(t base.Tombstone) error {
	if err := m.beginWrite(len(t.Start), len(t.End)); err != nil {
		return err
	}
	defer m.writing.Store(false)
	key := base.MakeInternalKey(t.Start, t.Seq, base.KindRangeDelete)
	if err := m.rangeDels.insert(key.UserKey, key.Trailer, t.End); err != nil {
		return m.wrapInsertError(err, key)
	}
	m.numRangeDels.Add(1)
	m.noteSeq(t.Seq)
	m.hasTombstones.Store(true)
	return nil
}

// AddConcurrent is Add for writers that insert at the same time: any number
// of goroutines may call it at once (and read meanwhile), but not while an
// Add or AddRangeDel runs. Errors are as for Add; a duplicate internal key
// that a racing AddConcurrent adds first is refused too, leaving its node's
// bytes unused in the arena. Range tombstones have no concurrent path.
func (m *MemTable) AddConcurrent(key base.InternalKey, value []byte) error {
	if key.Kind() == base.KindRangeDelete {
		return base.AssertionFailedf("memtable: AddConcurrent of a range deletion %s", key)
	}
	if err := checkEntrySize(len(key.UserKey), len(value)); err != nil {
		return err
	}
	if m.writing.Load() {
		return base.AssertionFailedf("memtable: AddConcurrent during Add")
	}
	if err := m.points.insertConcurrent(key.UserKey, key.Trailer, value); err != nil {
		return m.wrapInsertError(err, key)
	}
	m.countPoint(key.Kind())
	seq := uint64(key.SeqNum())
	for lo := m.smallestSeq.Load(); seq < lo && !m.smallestSeq.CompareAndSwap(lo, seq); lo = m.smallestSeq.Load() {
	}
	for hi := m.largestSeq.Load(); seq > hi && !m.largestSeq.CompareAndSwap(hi, seq); hi = m.largestSeq.Load() {
	}
	return nil
}

// checkEntrySize refuses an entry no arena could hold.
func checkEntrySize(keyLen, valueLen int) error {
	if int64(SizeFor(keyLen, valueLen)) > MaxArenaSize {
		return base.InvalidArgumentf("memtable entry of %d key and %d value bytes is too large", keyLen, valueLen)
	}
	return nil
}

// countPoint counts a point entry of kind just added.
func (m *MemTable) countPoint(kind base.Kind) {
	m.numEntries.Add(1)
	if kind == base.KindDelete || kind == base.KindSingleDelete {
		m.numDeletes.Add(1)
	}
}

// beginWrite checks the size of an entry and claims the writer role.
func (m *MemTable) beginWrite(keyLen, valueLen int) error {
	if err := checkEntrySize(keyLen, valueLen); err != nil {
		return err
	}
	if !m.writing.CompareAndSwap(false, true) {
		return base.AssertionFailedf("memtable: concurrent writes")
	}
	return nil
}

func (m *MemTable) wrapInsertError(err error, key base.InternalKey) error {
	if err == errDuplicate {
		return base.AssertionFailedf("memtable: duplicate internal key %s", key)
	}
	return err
}

// noteSeq widens the recorded sequence range. Only the writer calls it.
func (m *MemTable) noteSeq(seq base.SeqNum) {
	if uint64(seq) < m.smallestSeq.Load() {
		m.smallestSeq.Store(uint64(seq))
	}
	if uint64(seq) > m.largestSeq.Load() {
		m.largestSeq.Store(uint64(seq))
	}
}

// Get returns the newest version of ukey visible at snap (sequence number
// below snap). found is false when there is none. A deletion is a version:
// it is returned with its kind. value aliases the arena; it never changes but
// the caller copies what it keeps past the memtable's life. Get does not
// consult range tombstones and does not allocate.
func (m *MemTable) Get(ukey []byte, snap base.SeqNum) (value []byte, kind base.Kind, seq base.SeqNum, found bool) {
	if snap == 0 {
		return nil, 0, 0, false
	}
	if snap > base.MaxSeqNum+1 {
		snap = base.MaxSeqNum + 1
	}
	// Entries with seq >= snap have trailer > snap<<8 - 1 and sort first.
	s := m.points
	_, nd := s.seek(ukey, uint64(snap)<<8-1)
	if nd == s.tail {
		return nil, 0, 0, false
	}
	if s.general == nil {
		if !bytes.Equal(s.key(nd), ukey) {
			return nil, 0, 0, false
		}
	} else if s.general(s.key(nd), ukey) != 0 {
		return nil, 0, 0, false
	}
	t := s.trailer(nd)
	return s.value(nd), base.Kind(t), base.SeqNum(t >> 8), true
}

// HasTombstones reports whether any range tombstone was added. It is one
// atomic load.
func (m *MemTable) HasTombstones() bool { return m.hasTombstones.Load() }

// Tombstones returns the range tombstones visible at snap (Seq < snap), in
// order of start key, newest first among equal starts. The slice is freshly
// allocated; Start and End alias the arena and never change.
func (m *MemTable) Tombstones(snap base.SeqNum) []base.Tombstone {
	if !m.HasTombstones() {
		return nil
	}
	s := m.rangeDels
	var ts []base.Tombstone
	for nd := s.next(s.head, 0); nd != s.tail; nd = s.next(nd, 0) {
		seq := base.SeqNum(s.trailer(nd) >> 8)
		if base.Visible(seq, snap) {
			ts = append(ts, base.Tombstone{Start: s.key(nd), End: s.value(nd), Seq: seq})
		}
	}
	return ts
}

// ApproximateMemoryUsage returns the arena bytes in use, including the fixed
// overhead of an empty memtable.
func (m *MemTable) ApproximateMemoryUsage() int { return int(m.arena.used()) }

// Empty reports whether nothing (no entry, no tombstone) has been added.
func (m *MemTable) Empty() bool {
	return m.numEntries.Load() == 0 && m.numRangeDels.Load() == 0
}

// NumEntries returns the number of point entries added (all kinds).
func (m *MemTable) NumEntries() uint64 { return m.numEntries.Load() }

// NumDeletes returns the number of point deletions (KindDelete and
// KindSingleDelete) among the point entries.
func (m *MemTable) NumDeletes() uint64 { return m.numDeletes.Load() }

// NumRangeDels returns the number of range tombstones added.
func (m *MemTable) NumRangeDels() uint64 { return m.numRangeDels.Load() }

// SeqNumRange returns the smallest and largest sequence numbers of the
// entries and tombstones added, or (0, 0) when the memtable is empty.
func (m *MemTable) SeqNumRange() (smallest, largest base.SeqNum) {
	lo, hi := m.smallestSeq.Load(), m.largestSeq.Load()
	if lo > hi {
		return 0, 0
	}
	return base.SeqNum(lo), base.SeqNum(hi)
}
