// Package raftetcd makes a Strata database the log of an etcd-io/raft
// (go.etcd.io/raft/v3) node: Storage is a raft.Storage, and SaveReady is
// what the application calls with each Ready to make its entries, hard
// state and snapshot durable in one batch.
//
// # Key layout
//
// Every key of a group starts with a range-local prefix, as CockroachDB's
// unreplicated range-ID keys do:
//
//	"\x01i" + rangeID (8 bytes big-endian) + "u" + suffix
//
// with the suffixes
//
//	"rftl" + index (8 bytes big-endian)  a log entry (raftpb.Entry, marshalled)
//	"rfth"                               the HardState
//	"rftt"                               the truncated state: index and term of
//	                                     the last entry compacted away
//	"rfts"                               the last snapshot (raftpb.Snapshot)
//
// Entries sort by index and sit together, so Entries(lo, hi) is one
// contiguous scan, and compacting or cutting a conflicting tail is one
// range deletion. Many groups (ranges) share one database, each under its
// range ID; none of the prefixes is a prefix of another.
//
// # Term cache
//
// raft asks for the term of recent entries on every append it receives and
// every append it sends. Storage keeps the terms of the last
// Options.TermCacheSize entries in memory (a window ending at the last
// index, cut and extended by each append), plus the truncated state's term,
// so Term of a recent index never reads the database.
//
// # Entry cache
//
// raft reads back the entries it has just appended, to send them to
// followers and to apply them. Storage keeps the last entries appended, up
// to Options.EntryCacheSize bytes, in memory (as CockroachDB's raftentry
// cache does on Pebble): a window of the log ending at the last index, its
// payloads copied from the appended entries, cut by a conflicting tail,
// trimmed by Compact and emptied by a snapshot. Entries of a range inside
// the window are copied out of it without reading the database.
//
// Errors: ErrCompacted, ErrUnavailable and ErrSnapOutOfDate are returned
// unwrapped, where raft's MemoryStorage returns them, because raft compares
// them with ==. Where MemoryStorage panics (a request past the last index),
// Storage returns an error wrapping db.ErrInvalidArgument instead; raft
// itself panics on any other error from its storage.
package raftetcd

import (
	"encoding/binary"
	"strings"
	"sync"
	"unsafe"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Key suffixes, after the range-local prefix (see the package doc).
var (
	suffixLog       = []byte("rftl")
	suffixHardState = []byte("rfth")
	suffixTruncated = []byte("rftt")
	suffixSnapshot  = []byte("rfts")
)

// DefaultTermCacheSize is the number of recent entries whose terms Storage
// keeps in memory when Options.TermCacheSize is 0.
const DefaultTermCacheSize = 4096

// DefaultEntryCacheSize is the bytes of recent entries Storage keeps in
// memory when Options.EntryCacheSize is 0.
const DefaultEntryCacheSize = 1 << 20

// Options configure a Storage.
type Options struct {
	// RangeID names the raft group: its keys start with the range-local
	// prefix of this ID, so groups with different IDs share one database.
	RangeID uint64
	// TermCacheSize is how many recent entries' terms are kept in memory;
	// 0 means DefaultTermCacheSize, negative means none.
	TermCacheSize int
	// EntryCacheSize bounds the bytes (payloads plus a fixed cost per
	// entry) of the recently appended entries kept in memory for Entries;
	// 0 means DefaultEntryCacheSize, negative means none.
	EntryCacheSize int
}

// Storage is a raft.Storage on a Strata database, and the writes an
// application makes on each Ready. It is safe for concurrent use: raft.Node
// reads it on its goroutine while the application writes.
type Storage struct {
	d     *db.DB
	owned bool

	prefix  []byte // range-local prefix
	logLo   []byte // prefix + "rftl": first possible log key
	logHi   []byte // prefix + "rftm": just past every log key
	hsKey   []byte
	truncK  []byte
	snapKey []byte

	mu sync.RWMutex
	// truncIndex and truncTerm are the last entry compacted away (or the
	// snapshot's); entries truncIndex+1..last are in the database.
	truncIndex, truncTerm uint64
	last                  uint64
	hs                    pb.HardState
	snapMeta              pb.SnapshotMetadata // of the stored snapshot

	// terms[i] is the term of entry termsLo+i; the window ends at last.
	terms    []uint64
	termsLo  uint64
	termsCap int

	// ents is the entry cache: ents[i] is entry entsLo+i, the window ends
	// at last when it is not empty, and entsBytes (its cost) stays within
	// entsCap.
	ents      []pb.Entry
	entsLo    uint64
	entsBytes int
	entsCap   int
	// entsBuf is the array ents lies in (from its start), so the window
	// can move back to its front instead of into a new array; entsArena
	// is the chunk the payloads of the next appends are copied into.
	entsBuf   []pb.Entry
	entsArena []byte

	batch *db.Batch
	buf   []byte
}

var _ raft.Storage = (*Storage)(nil)

var syncWrite = &db.WriteOptions{Sync: true}

// DefaultRecycleLogFileNum is the db.Options.RecycleLogFileNum Open uses
// when it is given no database options: a raft log syncs every Ready, and
// a sync of a WAL written over a recycled file rewrites blocks the file
// already has instead of allocating new ones (see docs/wal.md). Four
// files cover the WALs a few flushes in a row make obsolete.
const DefaultRecycleLogFileNum = 4

// Open opens (creating if missing) a Strata database in dir and returns a
// Storage on it that owns it: Close closes it. With dbOpts nil the database
// gets the engine's defaults and DefaultRecycleLogFileNum; given options
// are used as they are (RecycleLogFileNum 0 turns recycling off).
func Open(dir string, dbOpts *db.Options, opts *Options) (*Storage, error) {
	o := db.Options{RecycleLogFileNum: DefaultRecycleLogFileNum}
	if dbOpts != nil {
		o = *dbOpts
	}
	o.CreateIfMissing = true
	d, err := db.Open(dir, &o)
	if err != nil {
		return nil, err
	}
	s, err := New(d, opts)
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New returns a Storage on an open database, loading the group's state. The
// caller keeps ownership of d.
func New(d *db.DB, opts *Options) (*Storage, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	s := &Storage{d: d, batch: db.NewBatch(), termsCap: o.TermCacheSize}
	if s.termsCap == 0 {
		s.termsCap = DefaultTermCacheSize
	}
	if s.termsCap < 0 {
		s.termsCap = 0
	}
	s.entsCap = o.EntryCacheSize
	if s.entsCap == 0 {
		s.entsCap = DefaultEntryCacheSize
	}
	if s.entsCap < 0 {
		s.entsCap = 0
	}
	s.prefix = RangePrefix(o.RangeID)
	s.logLo = s.key(suffixLog)
	s.logHi = s.key([]byte("rftm"))
	s.hsKey = s.key(suffixHardState)
	s.truncK = s.key(suffixTruncated)
	s.snapKey = s.key(suffixSnapshot)
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// RangePrefix returns the range-local key prefix of a range ID:
// "\x01i" + 8-byte big-endian ID + "u".
func RangePrefix(rangeID uint64) []byte {
	p := append([]byte("\x01i"), make([]byte, 8)...)
	binary.BigEndian.PutUint64(p[2:], rangeID)
	return append(p, 'u')
}

func (s *Storage) key(suffix []byte) []byte {
	return append(append(make([]byte, 0, len(s.prefix)+len(suffix)), s.prefix...), suffix...)
}

func (s *Storage) logKey(dst []byte, idx uint64) []byte {
	dst = append(dst, s.logLo...)
	return binary.BigEndian.AppendUint64(dst, idx)
}

// DB returns the database.
func (s *Storage) DB() *db.DB { return s.d }

// Close closes the database if Open opened it.
func (s *Storage) Close() error {
	if s.owned {
		return s.d.Close()
	}
	return nil
}

func (s *Storage) load() error {
	if v, err := s.d.Get(s.hsKey, nil); err == nil {
		if err := s.hs.Unmarshal(v); err != nil {
			return errors.Wrapf(db.ErrCorruption, "raftetcd: hard state: %v", err)
		}
	} else if !errors.Is(err, db.ErrNotFound) {
		return errors.Wrap(err, "raftetcd: reading hard state")
	}
	if v, err := s.d.Get(s.truncK, nil); err == nil {
		if len(v) != 16 {
			return errors.Wrapf(db.ErrCorruption, "raftetcd: truncated state has %d bytes, want 16", len(v))
		}
		s.truncIndex, s.truncTerm = binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
	} else if !errors.Is(err, db.ErrNotFound) {
		return errors.Wrap(err, "raftetcd: reading truncated state")
	}
	if v, err := s.d.Get(s.snapKey, nil); err == nil {
		var snap pb.Snapshot
		if err := snap.Unmarshal(v); err != nil {
			return errors.Wrapf(db.ErrCorruption, "raftetcd: snapshot: %v", err)
		}
		s.snapMeta = snap.Metadata
	} else if !errors.Is(err, db.ErrNotFound) {
		return errors.Wrap(err, "raftetcd: reading snapshot")
	}
	s.last = s.truncIndex
	it := s.d.NewIterator(&db.ReadOptions{LowerBound: s.logLo, UpperBound: s.logHi})
	defer it.Close()
	it.SeekToLast()
	if it.Valid() {
		idx, err := s.indexOf(it.Key())
		if err != nil {
			return err
		}
		if idx < s.truncIndex {
			return errors.Wrapf(db.ErrCorruption, "raftetcd: last entry %d below truncated index %d", idx, s.truncIndex)
		}
		s.last = idx
	}
	if err := it.Err(); err != nil {
		return errors.Wrap(err, "raftetcd: reading the last entry")
	}
	// Warm the term cache with the tail of the log.
	if s.termsCap > 0 && s.last > s.truncIndex {
		lo := max(s.truncIndex+1, s.last-min(s.last, uint64(s.termsCap))+1)
		ents, err := s.readEntries(lo, s.last+1, ^uint64(0))
		if err != nil {
			return err
		}
		s.termsLo = lo
		for _, e := range ents {
			s.terms = append(s.terms, e.Term)
		}
	}
	return nil
}

func (s *Storage) indexOf(key []byte) (uint64, error) {
	if len(key) != len(s.logLo)+8 {
		return 0, errors.Wrapf(db.ErrCorruption, "raftetcd: malformed log key %x", key)
	}
	return binary.BigEndian.Uint64(key[len(s.logLo):]), nil
}

// InitialState returns the saved HardState and the ConfState of the last
// snapshot, as MemoryStorage does.
func (s *Storage) InitialState() (pb.HardState, pb.ConfState, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.hs, s.snapMeta.ConfState, nil
}

// HardState returns the saved HardState.
func (s *Storage) HardState() pb.HardState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.hs
}

// Entries returns the entries in [lo, hi), at least one, at most maxSize
// bytes of them (raft's limitSize: the sum of Entry.Size()). The entries'
// Data may be shared with the entry cache: callers must not modify them
// (raft does not; MemoryStorage shares them the same way).
func (s *Storage) Entries(lo, hi, maxSize uint64) ([]pb.Entry, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if lo <= s.truncIndex {
		return nil, raft.ErrCompacted
	}
	if hi > s.last+1 {
		return nil, errors.Wrapf(db.ErrInvalidArgument, "raftetcd: entries' hi(%d) is out of bound lastindex(%d)", hi, s.last)
	}
	if s.last == s.truncIndex {
		return nil, raft.ErrUnavailable
	}
	if lo >= hi {
		return nil, nil
	}
	if len(s.ents) > 0 && lo >= s.entsLo && hi <= s.entsLo+uint64(len(s.ents)) {
		src := s.ents[lo-s.entsLo : hi-s.entsLo]
		// raft's limitSize: at least one, then up to maxSize bytes.
		n, size := 1, uint64(src[0].Size())
		for ; n < len(src); n++ {
			if size += uint64(src[n].Size()); size > maxSize {
				break
			}
		}
		// A copy of the entries (the window changes under later
		// appends); their payloads are the cache's, never written.
		return append([]pb.Entry(nil), src[:n]...), nil
	}
	return s.readEntries(lo, hi, maxSize)
}

// arenaSize is the least payload chunk of the entry cache.
const arenaSize = 32 << 10

// readEntries scans [lo, hi), stopping before the entry that takes the total
// past maxSize (always returning the first). Every index must be present.
//
// The result is sized once, at the first entry, for the range or as many
// entries of the first one's size as maxSize admits; the payloads are
// copied into slabs sized alike, up to maxSlab each (a log's entries are
// mostly of one size). So a range costs a few allocations however many
// entries it has, instead of one per entry: the allocations and the
// collector's work on them are most of a range read's cost after the
// scan. Each entry is decoded from the iterator's value (valid until the
// next step, so the payload is copied before it) and appended to the
// result in one store.
func (s *Storage) readEntries(lo, hi, maxSize uint64) ([]pb.Entry, error) {
	// Both bounds in one allocation.
	kl := len(s.logLo) + 8
	buf := make([]byte, 2*kl)
	lk, hk := buf[:kl:kl], buf[kl:2*kl:2*kl]
	copy(lk, s.logLo)
	copy(hk, s.logLo)
	binary.BigEndian.PutUint64(lk[kl-8:], lo)
	binary.BigEndian.PutUint64(hk[kl-8:], hi)
	it := s.d.NewIterator(&db.ReadOptions{LowerBound: lk, UpperBound: hk})
	defer it.Close()
	var ents []pb.Entry
	var slab payloadSlab
	var size uint64
	next := lo
	cut := false
	for it.SeekToFirst(); it.Valid(); it.Next() {
		k := it.Key()
		if len(k) != len(s.logLo)+8 {
			return nil, errors.Wrapf(db.ErrCorruption, "raftetcd: malformed log key %x", k)
		}
		if idx := binary.BigEndian.Uint64(k[len(s.logLo):]); idx != next {
			return nil, errors.Wrapf(db.ErrCorruption, "raftetcd: log entry %d missing (found %d)", next, idx)
		}
		v := it.Value()
		// A marshalled entry's length is its Size().
		size += uint64(len(v))
		if next > lo && size > maxSize {
			cut = true
			break
		}
		if ents == nil {
			ents = make([]pb.Entry, 0, min(hi-lo, maxSize/uint64(max(len(v), 1))+1))
		}
		var f entryFields
		if !decodeEntry(v, &f) {
			// Not an entry as raft marshals it (unknown fields, or
			// corrupt): the generated decoder says which (and copies
			// the payload).
			var e pb.Entry
			if err := e.Unmarshal(v); err != nil {
				return nil, errors.Wrapf(db.ErrCorruption, "raftetcd: log entry %d: %v", next, err)
			}
			if err := checkEntryIndex(next, e.Index); err != nil {
				return nil, err
			}
			ents = append(ents, e)
			next++
			continue
		}
		if err := checkEntryIndex(next, f.index); err != nil {
			return nil, err
		}
		var data []byte
		if l := f.dataLen; l > 0 {
			if !slab.room(l) {
				// Sized for the rest of the range at this payload's
				// size, within what maxSize leaves and within the
				// allocator's small objects (a larger one takes the
				// heap's slower path for large objects).
				rest := min(hi-next, (maxSize-(size-uint64(len(v))))/uint64(len(v))+1)
				slab.grow(max(l, int(min(rest*uint64(l), maxSlab))))
			}
			data = slab.add(v[f.dataOff : f.dataOff+l])
		} else if f.hasData {
			data = []byte{} // present and empty, as Unmarshal leaves it
		}
		// The entry's fields stored one by one into the zeroed slot: its
		// one pointer is written once, with one write barrier while the
		// collector marks (a whole Entry stored at once is a typed copy,
		// through the bulk barrier).
		if len(ents) == cap(ents) {
			ents = append(ents, pb.Entry{})
		} else {
			ents = ents[:len(ents)+1]
		}
		e := &ents[len(ents)-1]
		e.Term, e.Index, e.Type = f.term, f.index, f.typ
		e.Data = data
		next++
	}
	if err := it.Err(); err != nil {
		return nil, errors.Wrapf(err, "raftetcd: reading entries %d-%d", lo, hi-1)
	}
	if !cut && next != hi {
		return nil, errors.Wrapf(db.ErrCorruption, "raftetcd: log entry %d missing", next)
	}
	return ents, nil
}

// checkEntryIndex reports a log entry stored under key index want whose
// own Index is got as corruption.
func checkEntryIndex(want, got uint64) error {
	if got != want {
		return errors.Wrapf(db.ErrCorruption, "raftetcd: log entry under index %d says %d", want, got)
	}
	return nil
}

// maxSlab bounds one payload slab of readEntries: a range of large
// entries, or a long one, takes several. It is the largest of the Go
// allocator's size classes that it serves as a small object once rounded
// up (32 KiB less the allocation header is the limit, and an unzeroed
// allocation is rounded up to its class first): a larger one is a large
// object, allocated from the heap under its lock, which a range of 256
// entries of 128 B just crossed.
const maxSlab = 28 << 10

// payloadSlab is a chunk that readEntries copies payloads into. It is
// allocated without being zeroed first (strings.Builder's Grow allocates
// so), since every byte handed out is written by the copy before it:
// zeroing a chunk that is then written over was a tenth of a range read's
// CPU time. The payloads are returned as []byte over the chunk: nothing
// writes them after the copy (raft does not modify entries' Data, as
// Entries documents), and no string over the chunk is kept.
type payloadSlab struct {
	b    strings.Builder
	base *byte // the chunk's first byte, once one payload is in
}

// room reports whether n more bytes fit in the chunk.
func (p *payloadSlab) room(n int) bool { return p.b.Cap()-p.b.Len() >= n }

// grow starts a new chunk of at least size bytes (the old one lives on in
// the payloads copied into it).
func (p *payloadSlab) grow(size int) {
	p.b = strings.Builder{}
	p.b.Grow(size)
	p.base = nil
}

// add copies src (not empty, within room) into the chunk and returns the
// copy, its capacity its length: an append to one returned payload must
// not write over the next one in the chunk.
func (p *payloadSlab) add(src []byte) []byte {
	off := p.b.Len()
	_, _ = p.b.Write(src) // within the capacity: the chunk does not move
	if p.base == nil {
		p.base = unsafe.StringData(p.b.String())
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(p.base), off)), len(src))
}

// entryFields are the fields of a marshalled raftpb.Entry v as decodeEntry
// reads them: Data is v[dataOff:dataOff+dataLen], present (hasData) even
// when empty.
type entryFields struct {
	typ              pb.EntryType
	term, index      uint64
	dataOff, dataLen int
	hasData          bool
}

// decodeEntry decodes a marshalled raftpb.Entry v as Unmarshal does, into
// f, giving the payload's place in v rather than a slice of it (the caller
// copies it and stores the entry's one pointer once). It handles the four
// fields raft writes (Type, Term, Index as varints, Data as bytes, in any
// order, the last of a repeated field winning as in proto) and returns
// false on anything else (another field or wire type, a truncated value, a
// varint of more than 9 bytes), leaving the generated Unmarshal to decide.
func decodeEntry(v []byte, f *entryFields) bool {
	for i := 0; i < len(v); {
		tag := v[i]
		i++
		// The varint, inline: raft's terms, indexes and lengths take a
		// few bytes.
		var x uint64
		for s := uint(0); ; s += 7 {
			if i >= len(v) || s > 56 {
				return false
			}
			b := v[i]
			i++
			x |= uint64(b&0x7f) << s
			if b < 0x80 {
				break
			}
		}
		switch tag {
		case 0x08: // field 1, Type
			f.typ = pb.EntryType(int32(x))
		case 0x10: // field 2, Term
			f.term = x
		case 0x18: // field 3, Index
			f.index = x
		case 0x22: // field 4, Data: length-delimited
			if x > uint64(len(v)-i) {
				return false
			}
			// Proto's last-wins for a repeated bytes field.
			f.dataOff, f.dataLen, f.hasData = i, int(x), true
			i += int(x)
		default:
			return false
		}
	}
	return true
}

// Term returns the term of entry i, from the term cache when it is recent.
func (s *Storage) Term(i uint64) (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.term(i)
}

func (s *Storage) term(i uint64) (uint64, error) {
	if i < s.truncIndex {
		return 0, raft.ErrCompacted
	}
	if i == s.truncIndex {
		return s.truncTerm, nil
	}
	if i > s.last {
		return 0, raft.ErrUnavailable
	}
	if i >= s.termsLo && i-s.termsLo < uint64(len(s.terms)) {
		return s.terms[i-s.termsLo], nil
	}
	ents, err := s.readEntries(i, i+1, ^uint64(0))
	if err != nil {
		return 0, err
	}
	return ents[0].Term, nil
}

// LastIndex returns the index of the last entry (the snapshot's index when
// the log is empty).
func (s *Storage) LastIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.last, nil
}

// FirstIndex returns the index of the first entry that may be read.
func (s *Storage) FirstIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.truncIndex + 1, nil
}

// Snapshot returns the last snapshot saved by ApplySnapshot or
// CreateSnapshot, read from the database.
func (s *Storage) Snapshot() (pb.Snapshot, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var snap pb.Snapshot
	v, err := s.d.Get(s.snapKey, nil)
	if errors.Is(err, db.ErrNotFound) {
		return snap, nil
	}
	if err != nil {
		return snap, errors.Wrap(err, "raftetcd: reading snapshot")
	}
	if err := snap.Unmarshal(v); err != nil {
		return snap, errors.Wrapf(db.ErrCorruption, "raftetcd: snapshot: %v", err)
	}
	return snap, nil
}

// SetHardState saves st, synced.
func (s *Storage) SetHardState(st pb.HardState) error {
	return s.SaveReady(st, nil, pb.Snapshot{}, true)
}

// Append appends entries, replacing any existing entries from the first
// new index on (a conflicting tail), synced. Entries at or below the
// truncated index are skipped, as MemoryStorage does.
func (s *Storage) Append(entries []pb.Entry) error {
	return s.SaveReady(pb.HardState{}, entries, pb.Snapshot{}, true)
}

// ApplySnapshot replaces the log with snap (the log becomes empty at
// snap's index), synced. It returns raft.ErrSnapOutOfDate if snap is not
// newer than the stored snapshot.
func (s *Storage) ApplySnapshot(snap pb.Snapshot) error {
	s.mu.RLock()
	old := s.snapMeta.Index
	s.mu.RUnlock()
	if snap.Metadata.Index <= old {
		// Also for an empty snapshot (index 0), as MemoryStorage.
		return raft.ErrSnapOutOfDate
	}
	return s.SaveReady(pb.HardState{}, nil, snap, true)
}

// SaveReady makes a Ready durable: it applies snap if it is not empty,
// then appends entries (cutting a conflicting tail) and saves hs if it is
// not empty, all in one batch, synced when mustSync (Ready.MustSync).
// Either all of it is in the database after a crash or none of it.
func (s *Storage) SaveReady(hs pb.HardState, entries []pb.Entry, snap pb.Snapshot, mustSync bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.batch
	b.Reset()
	defer b.Reset()
	truncIndex, truncTerm, last := s.truncIndex, s.truncTerm, s.last
	haveSnap := !raft.IsEmptySnap(snap)
	// Size the buffer once: the batch may refer to it until Write returns.
	n := 16
	if haveSnap {
		n += snap.Size()
	}
	if !raft.IsEmptyHardState(hs) {
		n += hs.Size()
	}
	for i := range entries {
		n += len(s.logLo) + 8 + entries[i].Size()
	}
	if cap(s.buf) < n {
		s.buf = make([]byte, 0, n)
	}
	buf := s.buf[:0]
	if haveSnap {
		if snap.Metadata.Index <= s.snapMeta.Index {
			return raft.ErrSnapOutOfDate
		}
		k := len(buf)
		buf = buf[:k+snap.Size()]
		if _, err := snap.MarshalTo(buf[k:]); err != nil {
			return errors.Wrap(err, "raftetcd: encoding snapshot")
		}
		b.Put(s.snapKey, buf[k:])
		truncIndex, truncTerm = snap.Metadata.Index, snap.Metadata.Term
		last = truncIndex
		b.DeleteRange(s.logLo, s.logHi)
		k = len(buf)
		buf = binary.BigEndian.AppendUint64(buf, truncIndex)
		buf = binary.BigEndian.AppendUint64(buf, truncTerm)
		b.Put(s.truncK, buf[k:])
	}
	if len(entries) > 0 && entries[len(entries)-1].Index > truncIndex {
		if entries[0].Index <= truncIndex {
			entries = entries[truncIndex+1-entries[0].Index:]
		}
		first := entries[0].Index
		if first > last+1 {
			return errors.Wrapf(db.ErrInvalidArgument, "raftetcd: missing log entry [last: %d, append at: %d]", last, first)
		}
		for i := range entries {
			e := &entries[i]
			if e.Index != first+uint64(i) {
				return errors.Wrapf(db.ErrInvalidArgument, "raftetcd: entries not contiguous at %d (index %d)", first+uint64(i), e.Index)
			}
			k := len(buf)
			buf = s.logKey(buf, e.Index)
			v := len(buf)
			buf = buf[:v+e.Size()]
			if _, err := e.MarshalTo(buf[v:]); err != nil {
				return errors.Wrapf(err, "raftetcd: encoding entry %d", e.Index)
			}
			b.Put(buf[k:v], buf[v:])
		}
		newLast := entries[len(entries)-1].Index
		if newLast < last {
			// Cut the conflicting tail past the new entries.
			b.DeleteRange(s.logKey(nil, newLast+1), s.logHi)
		}
		last = newLast
	}
	if !raft.IsEmptyHardState(hs) {
		k := len(buf)
		buf = buf[:k+hs.Size()]
		if _, err := hs.MarshalTo(buf[k:]); err != nil {
			return errors.Wrap(err, "raftetcd: encoding hard state")
		}
		b.Put(s.hsKey, buf[k:])
	}
	s.buf = buf[:0]
	if b.Count() == 0 {
		return nil
	}
	wo := syncWrite
	if !mustSync {
		wo = nil
	}
	if err := s.d.Write(b, wo); err != nil {
		return errors.Wrapf(err, "raftetcd: saving ready (%d entries, last %d)", len(entries), last)
	}
	if haveSnap {
		s.snapMeta = snap.Metadata
		s.terms, s.termsLo = s.terms[:0], truncIndex+1
		s.dropCachedEntries(len(s.ents))
		s.entsLo = truncIndex + 1
	}
	s.truncIndex, s.truncTerm = truncIndex, truncTerm
	if len(entries) > 0 && entries[len(entries)-1].Index > truncIndex {
		s.cacheTerms(entries)
		s.cacheEntries(entries)
	}
	s.last = last
	if !raft.IsEmptyHardState(hs) {
		s.hs = hs
	}
	return nil
}

// cacheTerms puts the terms of entries (just written, the new tail of the
// log) into the term cache, dropping what they replaced and the oldest
// terms past the cache's size.
func (s *Storage) cacheTerms(entries []pb.Entry) {
	if s.termsCap == 0 {
		return
	}
	first := entries[0].Index
	if len(s.terms) == 0 || first < s.termsLo || first > s.termsLo+uint64(len(s.terms)) {
		s.terms, s.termsLo = s.terms[:0], first
	} else {
		s.terms = s.terms[:first-s.termsLo]
	}
	for i := range entries {
		s.terms = append(s.terms, entries[i].Term)
	}
	if over := len(s.terms) - s.termsCap; over > 0 {
		// Slide the window; append reallocates (copying only the window)
		// once the front has eaten the capacity, amortised O(1).
		s.terms = s.terms[over:]
		s.termsLo += uint64(over)
	}
}

// entryCost is what an entry counts against Options.EntryCacheSize: its
// payload and the Entry itself.
func entryCost(e *pb.Entry) int { return len(e.Data) + int(unsafe.Sizeof(pb.Entry{})) }

// cacheEntries puts entries (just written, the new tail of the log) into
// the entry cache, dropping what they replaced and the oldest entries past
// the cache's size. Their payloads are copied (the application may reuse
// its buffers once SaveReady returns) into chunks shared by many appends,
// so that an append allocates nothing in the steady state.
func (s *Storage) cacheEntries(entries []pb.Entry) {
	if s.entsCap == 0 {
		return
	}
	first := entries[0].Index
	if len(s.ents) == 0 || first < s.entsLo || first > s.entsLo+uint64(len(s.ents)) {
		s.dropCachedEntries(len(s.ents))
		s.entsLo = first
	} else {
		cut := int(first - s.entsLo)
		for i := range s.ents[cut:] {
			s.entsBytes -= entryCost(&s.ents[cut+i])
		}
		clear(s.ents[cut:])
		s.ents = s.ents[:cut]
	}
	s.growCache(len(entries))
	for _, e := range entries {
		if e.Data != nil {
			if len(s.entsArena)+len(e.Data) > cap(s.entsArena) {
				// The old chunk lives on in the entries that use it.
				s.entsArena = make([]byte, 0, max(arenaSize, len(e.Data)))
			}
			// Each payload capped at its length: the chunk's next
			// bytes are written by later appends, never these.
			k := len(s.entsArena)
			s.entsArena = append(s.entsArena, e.Data...)
			e.Data = s.entsArena[k:len(s.entsArena):len(s.entsArena)]
		}
		s.ents = append(s.ents, e)
		s.entsBytes += entryCost(&e)
	}
	over := 0
	for b := s.entsBytes; b > s.entsCap; over++ {
		b -= entryCost(&s.ents[over])
	}
	s.dropCachedEntries(over)
}

// growCache makes room for n more entries in the cache's array: by moving
// the window back to the array's front when the front has been dropped
// (cache windows slide; amortised O(1) per entry), else in a new array of
// twice the need.
func (s *Storage) growCache(n int) {
	need := len(s.ents) + n
	if need <= cap(s.ents) {
		return
	}
	if need <= cap(s.entsBuf) {
		buf := s.entsBuf[:cap(s.entsBuf)]
		k := copy(buf, s.ents)
		// The stale copies past the window would keep payloads alive.
		clear(buf[k:])
		s.ents = buf[:k]
		return
	}
	buf := make([]pb.Entry, len(s.ents), 2*need)
	copy(buf, s.ents)
	clear(s.ents)
	s.entsBuf, s.ents = buf[:0], buf
}

// dropCachedEntries removes the first n entries of the entry cache.
func (s *Storage) dropCachedEntries(n int) {
	for i := range s.ents[:n] {
		s.entsBytes -= entryCost(&s.ents[i])
	}
	// Cleared, so that the payloads are not kept alive by the array until
	// append reallocates it.
	clear(s.ents[:n])
	s.ents = s.ents[n:]
	s.entsLo += uint64(n)
}

// CreateSnapshot saves a snapshot at index i with the given ConfState (if
// not nil; else the stored one) and data, synced, and returns it. The log
// is left as it is: Compact removes entries. It returns
// raft.ErrSnapOutOfDate if i is not past the stored snapshot.
func (s *Storage) CreateSnapshot(i uint64, cs *pb.ConfState, data []byte) (pb.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i <= s.snapMeta.Index {
		return pb.Snapshot{}, raft.ErrSnapOutOfDate
	}
	if i > s.last {
		return pb.Snapshot{}, errors.Wrapf(db.ErrInvalidArgument, "raftetcd: snapshot %d is out of bound lastindex(%d)", i, s.last)
	}
	term, err := s.term(i)
	if err != nil {
		return pb.Snapshot{}, err
	}
	snap := pb.Snapshot{Data: data, Metadata: pb.SnapshotMetadata{Index: i, Term: term, ConfState: s.snapMeta.ConfState}}
	if cs != nil {
		snap.Metadata.ConfState = *cs
	}
	v, err := snap.Marshal()
	if err != nil {
		return pb.Snapshot{}, errors.Wrap(err, "raftetcd: encoding snapshot")
	}
	if err := s.d.Put(s.snapKey, v, syncWrite); err != nil {
		return pb.Snapshot{}, errors.Wrapf(err, "raftetcd: saving snapshot %d", i)
	}
	s.snapMeta = snap.Metadata
	return snap, nil
}

// Compact removes the entries up to compactIndex, which becomes the
// truncated index (its term is kept), in one batch of a range deletion and
// the truncated state. It returns raft.ErrCompacted if compactIndex is not
// past the truncated index.
func (s *Storage) Compact(compactIndex uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if compactIndex <= s.truncIndex {
		return raft.ErrCompacted
	}
	if compactIndex > s.last {
		return errors.Wrapf(db.ErrInvalidArgument, "raftetcd: compact %d is out of bound lastindex(%d)", compactIndex, s.last)
	}
	term, err := s.term(compactIndex)
	if err != nil {
		return err
	}
	b := s.batch
	b.Reset()
	defer b.Reset()
	b.DeleteRange(s.logLo, s.logKey(nil, compactIndex+1))
	var v [16]byte
	binary.BigEndian.PutUint64(v[:], compactIndex)
	binary.BigEndian.PutUint64(v[8:], term)
	b.Put(s.truncK, v[:])
	if err := s.d.Write(b, syncWrite); err != nil {
		return errors.Wrapf(err, "raftetcd: compacting to %d", compactIndex)
	}
	s.truncIndex, s.truncTerm = compactIndex, term
	if s.termsLo <= compactIndex {
		drop := min(uint64(len(s.terms)), compactIndex+1-s.termsLo)
		s.terms = s.terms[drop:]
		s.termsLo += drop
	}
	if len(s.ents) > 0 && s.entsLo <= compactIndex {
		s.dropCachedEntries(int(min(uint64(len(s.ents)), compactIndex+1-s.entsLo)))
	}
	return nil
}
