package raftetcd

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// index is etcd raft's test helper (log_test.go): index(i).terms(t...) is
// the entries at i, i+1, ... with terms t....
type index uint64

func (i index) terms(terms ...uint64) []pb.Entry {
	idx := uint64(i)
	entries := make([]pb.Entry, 0, len(terms))
	for _, term := range terms {
		entries = append(entries, pb.Entry{Term: term, Index: idx})
		idx++
	}
	return entries
}

// newTestStorage returns a Storage in a fresh database holding the log a
// MemoryStorage{ents: ents} holds: ents[0] is the truncated entry (written
// as the truncated state), ents[1:] the entries. It reopens the database
// before returning it, so the state is also read back from disk.
func newTestStorage(t *testing.T, ents []pb.Entry) *Storage {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir, nil, &Options{RangeID: 7})
	require.NoError(t, err)
	var v [16]byte
	binary.BigEndian.PutUint64(v[:], ents[0].Index)
	binary.BigEndian.PutUint64(v[8:], ents[0].Term)
	require.NoError(t, s.DB().Put(s.truncK, v[:], nil))
	require.NoError(t, s.Close())
	s, err = Open(dir, nil, &Options{RangeID: 7})
	require.NoError(t, err)
	require.NoError(t, s.Append(ents[1:]))
	require.NoError(t, s.Close())
	s, err = Open(dir, nil, &Options{RangeID: 7})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// dump returns the log as MemoryStorage's ents: the truncated entry (index
// and term only), then every entry, read from the database.
func dump(t *testing.T, s *Storage) []pb.Entry {
	t.Helper()
	first, err := s.FirstIndex()
	require.NoError(t, err)
	last, err := s.LastIndex()
	require.NoError(t, err)
	term, err := s.Term(first - 1)
	require.NoError(t, err)
	out := []pb.Entry{{Index: first - 1, Term: term}}
	if last >= first {
		ents, err := s.Entries(first, last+1, math.MaxUint64)
		require.NoError(t, err)
		out = append(out, ents...)
	}
	return out
}

func TestEntriesPastLastIndexIsAnError(t *testing.T) {
	s := newTestStorage(t, index(3).terms(3, 4, 5))
	_, err := s.Entries(4, 7, math.MaxUint64)
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.ErrorIs(t, s.Compact(6), db.ErrInvalidArgument)
	_, err = s.CreateSnapshot(6, nil, nil)
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.ErrorIs(t, s.Append(index(7).terms(6)), db.ErrInvalidArgument, "a gap after the last entry")
	require.Equal(t, index(3).terms(3, 4, 5), dump(t, s), "refused writes change nothing")
}

// TestReopen: entries, hard state, snapshot and truncated state survive
// Close and reopen; a cut conflicting tail stays cut.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil, nil)
	require.NoError(t, err)
	ents := index(1).terms(1, 1, 2, 2, 2, 3)
	ents[2].Data = []byte("three")
	hs := pb.HardState{Term: 3, Vote: 2, Commit: 4}
	require.NoError(t, s.SaveReady(hs, ents, pb.Snapshot{}, true))
	// A new leader at term 4 overwrites 5 and 6.
	require.NoError(t, s.SaveReady(pb.HardState{Term: 4, Vote: 1, Commit: 4}, index(5).terms(4), pb.Snapshot{}, true))
	cs := pb.ConfState{Voters: []uint64{1, 2, 3}}
	snap, err := s.CreateSnapshot(3, &cs, []byte("state@3"))
	require.NoError(t, err)
	require.NoError(t, s.Compact(2))
	require.NoError(t, s.Close())

	s, err = Open(dir, nil, nil)
	require.NoError(t, err)
	defer s.Close()
	gotHS, gotCS, err := s.InitialState()
	require.NoError(t, err)
	require.Equal(t, pb.HardState{Term: 4, Vote: 1, Commit: 4}, gotHS)
	require.Equal(t, cs, gotCS)
	want := index(2).terms(1, 2, 2, 4)
	want[1].Data = []byte("three")
	require.Equal(t, want, dump(t, s))
	_, err = s.Term(6)
	require.Equal(t, raft.ErrUnavailable, err)
	gotSnap, err := s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, snap, gotSnap)

	// A snapshot from the leader replaces the whole log.
	leaderSnap := pb.Snapshot{Data: []byte("state@10"), Metadata: pb.SnapshotMetadata{Index: 10, Term: 5, ConfState: cs}}
	require.NoError(t, s.SaveReady(pb.HardState{Term: 5, Commit: 10}, index(11).terms(5), leaderSnap, true))
	require.NoError(t, s.Close())
	s, err = Open(dir, nil, nil)
	require.NoError(t, err)
	require.Equal(t, index(10).terms(5, 5), dump(t, s))
	gotSnap, err = s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, leaderSnap, gotSnap)
	require.Equal(t, raft.ErrSnapOutOfDate, s.ApplySnapshot(leaderSnap))
}

// TestRangesShareADatabase: two groups on one database see only their own
// log and state.
func TestRangesShareADatabase(t *testing.T) {
	d, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	defer d.Close()
	a, err := New(d, &Options{RangeID: 1})
	require.NoError(t, err)
	b, err := New(d, &Options{RangeID: 2})
	require.NoError(t, err)
	require.NoError(t, a.SaveReady(pb.HardState{Term: 1, Commit: 2}, index(1).terms(1, 1), pb.Snapshot{}, true))
	require.NoError(t, b.SaveReady(pb.HardState{Term: 7, Commit: 1}, index(1).terms(7, 7, 7), pb.Snapshot{}, true))
	require.NoError(t, a.Compact(1))
	a2, err := New(d, &Options{RangeID: 1})
	require.NoError(t, err)
	b2, err := New(d, &Options{RangeID: 2})
	require.NoError(t, err)
	require.Equal(t, index(1).terms(1, 1), dump(t, a2))
	require.Equal(t, index(0).terms(0, 7, 7, 7), dump(t, b2))
	require.Equal(t, uint64(7), b2.HardState().Term)
}

// TestMatchesMemoryStorage runs random appends (with conflicting tails),
// compactions, snapshots and reopens on a Storage with a tiny term cache
// and on raft's MemoryStorage, and compares every answer: without the
// entry cache, with one of a few entries and with the default one.
func TestMatchesMemoryStorage(t *testing.T) {
	for _, cacheSize := range []int{-1, 300, 0} {
		t.Run(fmt.Sprintf("cache=%d", cacheSize), func(t *testing.T) {
			testMatchesMemoryStorage(t, cacheSize)
		})
	}
}

func testMatchesMemoryStorage(t *testing.T, cacheSize int) {
	for seed := int64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewSource(seed))
		dir := t.TempDir()
		opts := &Options{TermCacheSize: 3, EntryCacheSize: cacheSize}
		s, err := Open(dir, nil, opts)
		require.NoError(t, err)
		m := raft.NewMemoryStorage()
		term := uint64(1)
		for step := 0; step < 300; step++ {
			first, _ := m.FirstIndex()
			last, _ := m.LastIndex()
			switch op := rng.Intn(10); {
			case op < 5: // append, maybe over a conflicting tail
				from := last + 1
				if last >= first && rng.Intn(3) == 0 {
					from = first + uint64(rng.Int63n(int64(last-first+1)))
					term++
				}
				var ents []pb.Entry
				for i := 0; i < 1+rng.Intn(6); i++ {
					ents = append(ents, pb.Entry{Index: from + uint64(i), Term: term, Data: []byte{byte(rng.Intn(256))}})
				}
				require.NoError(t, m.Append(ents))
				require.NoError(t, s.Append(ents))
			case op == 5 && last >= first:
				c := first + uint64(rng.Int63n(int64(last-first+1)))
				require.Equal(t, m.Compact(c), s.Compact(c))
			case op == 6 && last >= first:
				i := first + uint64(rng.Int63n(int64(last-first+1)))
				want, werr := m.CreateSnapshot(i, &pb.ConfState{Voters: []uint64{1}}, []byte("d"))
				got, gerr := s.CreateSnapshot(i, &pb.ConfState{Voters: []uint64{1}}, []byte("d"))
				require.Equal(t, werr, gerr)
				require.Equal(t, want, got)
			case op == 7:
				term++
				snap := pb.Snapshot{Metadata: pb.SnapshotMetadata{Index: last + uint64(rng.Intn(3)), Term: term}}
				require.Equal(t, m.ApplySnapshot(snap), s.ApplySnapshot(snap))
			case op == 8:
				require.NoError(t, s.Close())
				s, err = Open(dir, nil, opts)
				require.NoError(t, err)
			}
			first, _ = m.FirstIndex()
			last, _ = m.LastIndex()
			sf, _ := s.FirstIndex()
			sl, _ := s.LastIndex()
			require.Equal(t, first, sf, "seed %d step %d", seed, step)
			require.Equal(t, last, sl, "seed %d step %d", seed, step)
			for i := first - 1; i <= last+1; i++ {
				wt, werr := m.Term(i)
				gt, gerr := s.Term(i)
				require.Equal(t, werr, gerr, "seed %d step %d term %d", seed, step, i)
				require.Equal(t, wt, gt, "seed %d step %d term %d", seed, step, i)
			}
			if last >= first {
				lo := first + uint64(rng.Int63n(int64(last-first+1)))
				max := uint64(rng.Intn(40))
				we, werr := m.Entries(lo, last+1, max)
				ge, gerr := s.Entries(lo, last+1, max)
				require.Equal(t, werr, gerr)
				require.Equal(t, we, ge, "seed %d step %d entries from %d max %d", seed, step, lo, max)
			}
			checkEntryCache(t, s)
			ws, _ := m.Snapshot()
			gs, err := s.Snapshot()
			require.NoError(t, err)
			require.Equal(t, ws, gs)
		}
		require.NoError(t, s.Close())
	}
}

// TestTornBatchKeepsHardStateWithEntries writes Readies whose HardState
// commits exactly the entries written with it, then cuts the WAL at every
// offset inside the last batch's record: every reopened image holds a
// prefix of the batches, each with its hard state, never entries without
// the hard state written with them (or the reverse).
func TestTornBatchKeepsHardStateWithEntries(t *testing.T) {
	const batch, batches = 4, 6
	dir := t.TempDir()
	s, err := Open(dir, nil, nil)
	require.NoError(t, err)
	// walSize returns the WAL and the end of its records: the WAL is
	// preallocated with zeros, which its reader takes as the end.
	walSize := func() (string, int64) {
		names, err := filepath.Glob(filepath.Join(dir, "*.log"))
		require.NoError(t, err)
		sort.Strings(names)
		require.NotEmpty(t, names)
		b, err := os.ReadFile(names[len(names)-1])
		require.NoError(t, err)
		end := len(b)
		for end > 0 && b[end-1] == 0 {
			end--
		}
		return names[len(names)-1], int64(end)
	}
	var before int64
	for b := 0; b < batches; b++ {
		_, before = walSize()
		ents := make([]pb.Entry, batch)
		for i := range ents {
			ents[i] = pb.Entry{Index: uint64(b*batch + i + 1), Term: 1, Data: make([]byte, 100)}
		}
		hs := pb.HardState{Term: 1, Vote: 1, Commit: uint64((b + 1) * batch)}
		require.NoError(t, s.SaveReady(hs, ents, pb.Snapshot{}, true))
	}
	wal, after := walSize()
	require.Greater(t, after, before)
	// The crash image: the directory as the open database left it.
	base := t.TempDir()
	copyDir(t, dir, base)
	require.NoError(t, s.Close())
	orig, err := os.ReadFile(filepath.Join(base, filepath.Base(wal)))
	require.NoError(t, err)
	step := max(1, (after-before)/40)
	for i := int64(0); i < 2*(after-before+step); i++ {
		cut, zeroed := before+(i/2)*step, i%2 == 1
		if cut > after {
			break
		}
		img := t.TempDir()
		copyDir(t, base, img)
		torn := orig[:cut]
		if zeroed { // the tail zeroed, the file keeps its length
			torn = append(append([]byte(nil), orig[:cut]...), make([]byte, len(orig)-int(cut))...)
		}
		require.NoError(t, os.WriteFile(filepath.Join(img, filepath.Base(wal)), torn, 0o644))
		// A record cut short is a torn tail the default recovery mode
		// drops; a record whose tail is zeros fails its checksum, which
		// that mode (as RocksDB's) reports as corruption, so those images
		// open in point-in-time mode, which stops at the bad record.
		o := &db.Options{}
		if zeroed {
			o.WALRecoveryMode = db.WALRecoveryPointInTime
		}
		c, err := Open(img, o, nil)
		require.NoError(t, err, "cut at %d (zeroed %v)", cut, zeroed)
		last, _ := c.LastIndex()
		hs := c.HardState()
		require.Equal(t, hs.Commit, last, "cut at %d: entries and hard state disagree", cut)
		require.GreaterOrEqual(t, last, uint64((batches-1)*batch), "cut at %d lost an earlier batch", cut)
		if cut == after {
			require.Equal(t, uint64(batches*batch), last)
		}
		require.NoError(t, c.Close())
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	names, err := os.ReadDir(from)
	require.NoError(t, err)
	for _, n := range names {
		if n.IsDir() || n.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, n.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, n.Name()), b, 0o644))
	}
}

// TestDecodeEntryMatchesUnmarshal checks the scan's entry decoder against
// raftpb's generated Unmarshal on marshalled entries (nil, empty and full
// Data, every type) and on corrupted copies of them: where decodeEntry
// accepts an input, Unmarshal accepts it and gives the same entry.
func TestDecodeEntryMatchesUnmarshal(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		e := pb.Entry{Type: pb.EntryType(rng.Intn(3)), Term: rng.Uint64() >> rng.Intn(64), Index: rng.Uint64() >> rng.Intn(64)}
		switch rng.Intn(3) {
		case 1:
			e.Data = []byte{}
		case 2:
			e.Data = make([]byte, rng.Intn(300))
			rng.Read(e.Data)
		}
		v, err := e.Marshal()
		require.NoError(t, err)
		if i%2 == 1 {
			// Corrupt a byte, cut, or append a field the decoder
			// does not know.
			switch rng.Intn(3) {
			case 0:
				v[rng.Intn(len(v))] = byte(rng.Intn(256))
			case 1:
				v = v[:rng.Intn(len(v))]
			default:
				v = append(v, 0x28, byte(rng.Intn(128)))
			}
		}
		var want pb.Entry
		werr := want.Unmarshal(v)
		var f entryFields
		if !decodeEntry(v, &f) {
			continue
		}
		got := pb.Entry{Type: f.typ, Term: f.term, Index: f.index}
		if f.hasData {
			got.Data = v[f.dataOff : f.dataOff+f.dataLen : f.dataOff+f.dataLen]
		}
		require.NoError(t, werr, "input %x", v)
		require.Equal(t, want, got, "input %x", v)
		require.Equal(t, len(got.Data), cap(got.Data))
	}
}

// checkEntryCache checks the entry cache's invariants: within its size,
// its cost accounted exactly, a window ending at the last index.
func checkEntryCache(t *testing.T, s *Storage) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	cost := 0
	for i := range s.ents {
		require.Equal(t, s.entsLo+uint64(i), s.ents[i].Index)
		cost += entryCost(&s.ents[i])
	}
	require.Equal(t, cost, s.entsBytes)
	require.LessOrEqual(t, s.entsBytes, s.entsCap)
	if len(s.ents) > 0 {
		require.Equal(t, s.last, s.entsLo+uint64(len(s.ents))-1)
		require.Greater(t, s.entsLo, s.truncIndex)
	}
}

// TestEntryCacheCopiesPayloads: an application reusing its entries'
// buffers after SaveReady does not change what Entries returns, and the
// cache answers without the database (closed under it here).
func TestEntryCacheCopiesPayloads(t *testing.T) {
	s, err := Open(t.TempDir(), nil, nil)
	require.NoError(t, err)
	ents := []pb.Entry{{Index: 1, Term: 1, Data: []byte("one")}, {Index: 2, Term: 1, Data: []byte("two")}}
	require.NoError(t, s.Append(ents))
	copy(ents[0].Data, "xxx")
	copy(ents[1].Data, "yyy")
	got, err := s.Entries(1, 3, math.MaxUint64)
	require.NoError(t, err)
	require.Equal(t, []pb.Entry{{Index: 1, Term: 1, Data: []byte("one")}, {Index: 2, Term: 1, Data: []byte("two")}}, got)
	require.Len(t, s.ents, 2, "appended entries are cached")
	require.NoError(t, s.Close())
	got, err = s.Entries(2, 3, math.MaxUint64)
	require.NoError(t, err, "served from the cache")
	require.Equal(t, []byte("two"), got[0].Data)
}

// TestEntriesFromDatabaseOwnPayloads: entries read from the database
// (no entry cache) share one payload slab, each Data capped at its length,
// so that a caller appending to one entry's Data cannot change the next;
// entries of mixed sizes (larger than the first, which sized the slab)
// and empty or absent payloads read back as written.
func TestEntriesFromDatabaseOwnPayloads(t *testing.T) {
	s, err := Open(t.TempDir(), nil, &Options{EntryCacheSize: -1})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	var want []pb.Entry
	for i := uint64(1); i <= 300; i++ {
		e := pb.Entry{Index: i, Term: 1 + i/100}
		switch i % 7 {
		case 0:
			e.Data = []byte{}
		case 1:
		default:
			e.Data = bytes.Repeat([]byte{byte(i)}, int(10+i%5*i))
		}
		want = append(want, e)
	}
	require.NoError(t, s.Append(want))
	got, err := s.Entries(1, 301, math.MaxUint64)
	require.NoError(t, err)
	require.Equal(t, want, got)
	for i := range got {
		require.Equal(t, len(got[i].Data), cap(got[i].Data), "entry %d", got[i].Index)
	}
	got[1].Data = append(got[1].Data, 0xee, 0xee)
	require.Equal(t, want[2].Data, got[2].Data, "an append to one entry's Data changed the next")
	// maxSize cuts the range as raft's limitSize does.
	limit := uint64(want[0].Size() + want[1].Size() + want[2].Size())
	got, err = s.Entries(1, 301, limit)
	require.NoError(t, err)
	require.Equal(t, want[:3], got)
	got, err = s.Entries(5, 301, 0)
	require.NoError(t, err)
	require.Equal(t, want[4:5], got, "at least one entry")
}

// TestEntriesRefusesEntryUnderAnotherIndex: an entry whose own Index is
// not the index of the key it is stored under is corruption, whichever
// decoder reads it (the inline one, or the generated Unmarshal for an
// entry with a field the inline one does not know).
func TestEntriesRefusesEntryUnderAnotherIndex(t *testing.T) {
	for _, unknownField := range []bool{false, true} {
		t.Run(fmt.Sprintf("unknown_field=%v", unknownField), func(t *testing.T) {
			s, err := Open(t.TempDir(), nil, &Options{EntryCacheSize: -1})
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			require.NoError(t, s.SaveReady(pb.HardState{}, index(1).terms(1, 1, 1), pb.Snapshot{}, true))
			v, err := (&pb.Entry{Index: 9, Term: 1, Data: []byte("x")}).Marshal()
			require.NoError(t, err)
			if unknownField {
				v = append(v, 0x28, 1) // field 5, a varint
				var f entryFields
				require.False(t, decodeEntry(v, &f), "the inline decoder must hand this one over")
			}
			require.NoError(t, s.DB().Put(s.logKey(nil, 2), v, nil))
			_, err = s.Entries(1, 4, math.MaxUint64)
			require.ErrorIs(t, err, db.ErrCorruption)
			require.ErrorContains(t, err, "under index 2 says 9")
		})
	}
}
