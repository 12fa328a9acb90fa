package db_test

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/vfs"
	"github.com/stretchr/testify/require"
)

// testClock is a clock the test moves by hand, in whole seconds.
type testClock struct{ now atomic.Int64 }

func newTestClock(d *db.DB, start int64) *testClock {
	c := &testClock{}
	c.now.Store(start)
	db.SetClockForTesting(d, func() time.Time { return time.Unix(c.now.Load(), 0) })
	return c
}

func (c *testClock) set(sec int64) { c.now.Store(sec) }

// t0 is a write time after RocksDB's kMinTimestamp (2013).
const t0 = 1_700_000_000

func getString(t *testing.T, d interface {
	Get([]byte, *db.ReadOptions) ([]byte, error)
}, key string, ro *db.ReadOptions) (string, error) {
	t.Helper()
	v, err := d.Get([]byte(key), ro)
	return string(v), err
}

func TestTTL_ExpiryOnRead(t *testing.T) {
	d, dir := openTest(t, &db.Options{TTL: 10 * time.Second, DisableAutoCompactions: true})
	clock := newTestClock(d, t0)
	require.NoError(t, d.Put([]byte("old"), []byte("v1"), nil))
	b := db.NewBatch()
	b.Put([]byte("batched"), []byte("vb"))
	require.NoError(t, d.Write(b, nil))
	clock.set(t0 + 5)
	require.NoError(t, d.Put([]byte("young"), []byte("v2"), nil))

	v, err := getString(t, d, "old", nil)
	require.NoError(t, err)
	require.Equal(t, "v1", v)
	require.Equal(t, []string{"batched=vb", "old=v1", "young=v2"}, scan(t, d, nil))

	// Expired when write time + TTL is before now (RocksDB's IsStale):
	// at t0+10 still live, at t0+11 gone.
	clock.set(t0 + 10)
	require.Equal(t, []string{"batched=vb", "old=v1", "young=v2"}, scan(t, d, nil))
	clock.set(t0 + 11)
	_, err = getString(t, d, "old", nil)
	require.ErrorIs(t, err, db.ErrNotFound)
	vals, errs := d.MultiGet([][]byte{[]byte("old"), []byte("young")}, nil)
	require.ErrorIs(t, errs[0], db.ErrNotFound)
	require.NoError(t, errs[1])
	require.Equal(t, "v2", string(vals[1]))
	require.Equal(t, []string{"young=v2"}, scan(t, d, nil))
	// Backwards too.
	it := d.NewIterator(nil)
	var back []string
	for it.SeekToLast(); it.Valid(); it.Prev() {
		back = append(back, string(it.Key()))
	}
	require.NoError(t, it.Close())
	require.Equal(t, []string{"young"}, back)
	// IncludeExpired reads what no compaction has dropped yet.
	all := &db.ReadOptions{IncludeExpired: true}
	v, err = getString(t, d, "old", all)
	require.NoError(t, err)
	require.Equal(t, "v1", v)
	require.Equal(t, []string{"batched=vb", "old=v1", "young=v2"}, scan(t, d, all))

	// The compaction's TTL filter drops the expired values for good.
	require.NoError(t, d.CompactRange(nil, nil))
	_, err = getString(t, d, "old", all)
	require.ErrorIs(t, err, db.ErrNotFound)
	require.Equal(t, []string{"young=v2"}, scan(t, d, all))
	require.NoError(t, d.Close())

	// The stored format is DBWithTTL's: the value, then its write time as
	// 4 bytes little-endian.
	d2, err := db.Open(dir, nil)
	require.NoError(t, err)
	defer d2.Close()
	raw, err := d2.Get([]byte("young"), nil)
	require.NoError(t, err)
	require.Equal(t, "v2", string(raw[:len(raw)-4]))
	require.Equal(t, uint32(t0+5), binary.LittleEndian.Uint32(raw[len(raw)-4:]))
}

func TestTTL_SnapshotReadsAtNowButCompactionKeepsItsVersions(t *testing.T) {
	d, _ := openTest(t, &db.Options{TTL: 10 * time.Second, DisableAutoCompactions: true})
	defer d.Close()
	clock := newTestClock(d, t0)
	require.NoError(t, d.Put([]byte("k"), []byte("v1"), nil))
	snap := d.NewSnapshot()
	defer snap.Release()
	clock.set(t0 + 20)
	require.NoError(t, d.CompactRange(nil, nil))
	// The snapshot's version is kept by the compaction (a snapshot sees
	// it), but it is expired: it reads as absent unless asked.
	_, err := getString(t, d, "k", &db.ReadOptions{Snapshot: snap})
	require.ErrorIs(t, err, db.ErrNotFound)
	v, err := getString(t, d, "k", &db.ReadOptions{Snapshot: snap, IncludeExpired: true})
	require.NoError(t, err)
	require.Equal(t, "v1", v)
}

func TestTTL_Merge(t *testing.T) {
	d, _ := openTest(t, &db.Options{TTL: 10 * time.Second, MergeOperator: db.NewStringAppendOperator(","), DisableAutoCompactions: true})
	defer d.Close()
	clock := newTestClock(d, t0)
	require.NoError(t, d.Put([]byte("k"), []byte("a"), nil))
	clock.set(t0 + 5)
	require.NoError(t, d.Merge([]byte("k"), []byte("b"), nil))
	// Only operands, the newest at t0+8.
	require.NoError(t, d.Merge([]byte("m"), []byte("x"), nil))
	clock.set(t0 + 8)
	require.NoError(t, d.Merge([]byte("m"), []byte("y"), nil))

	clock.set(t0 + 12) // the Put has expired, the merge result has not
	v, err := getString(t, d, "k", nil)
	require.NoError(t, err)
	require.Equal(t, "a,b", v)
	require.Equal(t, []string{"k=a,b", "m=x,y"}, scan(t, d, nil))

	// A compaction merges them into one value stamped with the newest
	// operand's time, t0+5 for k: still live at t0+12, gone after t0+15.
	require.NoError(t, d.Flush())
	require.NoError(t, d.CompactRange(nil, nil))
	v, err = getString(t, d, "k", nil)
	require.NoError(t, err)
	require.Equal(t, "a,b", v)
	clock.set(t0 + 16)
	_, err = getString(t, d, "k", nil)
	require.ErrorIs(t, err, db.ErrNotFound)
	require.Equal(t, []string{"m=x,y"}, scan(t, d, nil))
	clock.set(t0 + 19)
	require.Empty(t, scan(t, d, nil))
	require.NoError(t, d.CompactRange(nil, nil))
	require.Empty(t, scan(t, d, &db.ReadOptions{IncludeExpired: true}))
}

func TestTTL_UnderUserFilter(t *testing.T) {
	f := &testFilter{name: "test.TTLUser"}
	d, _ := openTest(t, &db.Options{TTL: 10 * time.Second, CompactionFilter: f, DisableAutoCompactions: true})
	defer d.Close()
	clock := newTestClock(d, t0)
	require.NoError(t, d.Put([]byte("chg1"), []byte("abc"), nil))
	require.NoError(t, d.Put([]byte("drop1"), []byte("x"), nil))
	require.NoError(t, d.Put([]byte("keep"), []byte("y"), nil))
	clock.set(t0 + 3)
	require.NoError(t, d.CompactRange(nil, nil))
	// The user's filter saw the values without their timestamps, and the
	// changed value keeps its write time.
	require.Equal(t, []string{"chg1=ABC", "keep=y"}, scan(t, d, nil))
	clock.set(t0 + 11)
	require.Empty(t, scan(t, d, nil))
}

func TestTTL_FIFODropsOldTables(t *testing.T) {
	d, _ := openTest(t, &db.Options{TTL: 10 * time.Second, CompactionStyle: db.FIFOCompaction, DisableAutoCompactions: true})
	defer d.Close()
	clock := newTestClock(d, t0)
	require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
	require.NoError(t, d.Flush())
	clock.set(t0 + 6)
	require.NoError(t, d.Put([]byte("b"), []byte("2"), nil))
	require.NoError(t, d.Flush())
	all := &db.ReadOptions{IncludeExpired: true}
	clock.set(t0 + 11)
	require.NoError(t, d.CompactRange(nil, nil))
	// The first table is older than the TTL and gone whole; the second,
	// written at t0+6, stays.
	require.Equal(t, []string{"b=2"}, scan(t, d, all))
	clock.set(t0 + 17)
	require.NoError(t, d.CompactRange(nil, nil))
	require.Empty(t, scan(t, d, all))
}

func TestTTL_PerFamilyAndOptionsFile(t *testing.T) {
	d, dir := openTest(t, &db.Options{DisableAutoCompactions: true})
	defer d.Close()
	clock := newTestClock(d, t0)
	cf, err := d.CreateColumnFamily("events", &db.ColumnFamilyOptions{TTL: time.Minute, DisableAutoCompactions: true})
	require.NoError(t, err)
	b := db.NewBatch()
	b.Put([]byte("k"), []byte("plain"))
	b.PutCF(cf, []byte("k"), []byte("stamped"))
	require.NoError(t, d.Write(b, nil))
	v, err := getString(t, d, "k", nil)
	require.NoError(t, err)
	require.Equal(t, "plain", v) // no suffix in the default family
	v, err = getString(t, cf, "k", nil)
	require.NoError(t, err)
	require.Equal(t, "stamped", v)
	clock.set(t0 + 61)
	v, err = getString(t, d, "k", nil)
	require.NoError(t, err)
	require.Equal(t, "plain", v)
	_, err = getString(t, cf, "k", nil)
	require.ErrorIs(t, err, db.ErrNotFound)

	sections := optionsSections(t, dir)
	require.Contains(t, sections[`CFOptions "events"`], "ttl=60")
	require.Contains(t, sections[`CFOptions "default"`], "ttl=0")
}

func TestTTL_Validation(t *testing.T) {
	for _, ttl := range []time.Duration{-time.Second, 1500 * time.Millisecond, time.Duration(1<<31) * time.Second} {
		_, err := db.Open(t.TempDir(), &db.Options{CreateIfMissing: true, TTL: ttl})
		require.ErrorIs(t, err, db.ErrInvalidArgument, "TTL %v", ttl)
	}
}

func TestTTL_ShortValueIsCorruption(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("k"), []byte("ab"), nil))
	require.NoError(t, d.Close())
	d, err = db.Open(dir, &db.Options{TTL: time.Hour})
	require.NoError(t, err)
	defer d.Close()
	_, err = d.Get([]byte("k"), nil)
	require.ErrorIs(t, err, db.ErrCorruption)
	it := d.NewIterator(nil)
	it.SeekToFirst()
	require.False(t, it.Valid())
	require.ErrorIs(t, it.Err(), db.ErrCorruption)
	require.NoError(t, it.Close())
}

// TestTTLFamilyRefusesTransactions: a transaction or an indexed batch on a
// family with a TTL is refused with ErrInvalidArgument, rather than read
// its buffered values (which carry no write time) through the TTL path.
func TestTTLFamilyRefusesTransactions(t *testing.T) {
	d, err := db.Open("/db", &db.Options{FS: vfs.NewMem(), CreateIfMissing: true, TTL: time.Hour})
	require.NoError(t, err)
	defer d.Close()
	txn := d.NewTransaction(nil)
	require.ErrorIs(t, txn.Put([]byte("k"), []byte("v")), db.ErrInvalidArgument)
	_, err = txn.Get([]byte("k"))
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.NoError(t, txn.Rollback())
	b := d.NewIndexedBatch()
	b.Put([]byte("k"), []byte("v"))
	_, err = b.Get([]byte("k"))
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	it := b.NewIterator(nil)
	require.False(t, it.Valid())
	require.ErrorIs(t, it.Err(), db.ErrInvalidArgument)
	// A plain write of the same batch works and carries the write time.
	require.NoError(t, d.Write(b, nil))
	v, err := d.Get([]byte("k"), nil)
	require.NoError(t, err)
	require.Equal(t, "v", string(v))
}

// TestTTL_OptionsClock: Options.Clock is the time TTL stamps on writes and
// compares against, in reads and compactions, and it is per DB: a second
// DB on the real clock is not moved by the first one's.
func TestTTL_OptionsClock(t *testing.T) {
	var now atomic.Int64
	now.Store(t0) // years before time.Now: a stamp or a check on the real clock shows
	clock := func() time.Time { return time.Unix(now.Load(), 0) }
	d, _ := openTest(t, &db.Options{TTL: 10 * time.Second, DisableAutoCompactions: true, Clock: clock})
	defer d.Close()
	other, _ := openTest(t, &db.Options{TTL: 10 * time.Second, DisableAutoCompactions: true})
	defer other.Close()
	require.NoError(t, d.Put([]byte("k"), []byte("v"), nil))
	require.NoError(t, other.Put([]byte("k"), []byte("v"), nil))
	b := db.NewBatch()
	b.Put([]byte("b"), []byte("w"))
	require.NoError(t, d.Write(b, nil))

	now.Store(t0 + 10) // written + TTL is not before now: live
	for _, k := range []string{"k", "b"} {
		_, err := getString(t, d, k, nil)
		require.NoError(t, err, "key %s", k)
	}
	require.NoError(t, d.Flush())
	require.NoError(t, d.CompactRange(nil, nil))
	v, err := getString(t, d, "k", nil)
	require.NoError(t, err)
	require.Equal(t, "v", v)

	now.Store(t0 + 11)
	for _, k := range []string{"k", "b"} {
		_, err := getString(t, d, k, nil)
		require.ErrorIs(t, err, db.ErrNotFound, "key %s: expired on the DB's clock", k)
		v, err := getString(t, d, k, &db.ReadOptions{IncludeExpired: true})
		require.NoError(t, err, "key %s", k)
		require.NotEmpty(t, v)
	}
	v, err = getString(t, other, "k", nil)
	require.NoError(t, err, "the other DB reads the real clock")
	require.Equal(t, "v", v)

	// A compaction reads the same clock: it drops them.
	require.NoError(t, d.CompactRange(nil, nil))
	_, err = getString(t, d, "k", &db.ReadOptions{IncludeExpired: true})
	require.ErrorIs(t, err, db.ErrNotFound)
}
