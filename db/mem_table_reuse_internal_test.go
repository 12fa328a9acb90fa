package db

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// arenaTestOptions give memtables that are all initialMemTableSize bytes, so
// that every flushed arena fits the next memtable.
func arenaTestOptions() *Options {
	return &Options{CreateIfMissing: true, WriteBufferSize: initialMemTableSize, DisableAutoCompactions: true}
}

// arenaValue is the value stored under key: a reader that met a reused
// arena would see another key's bytes (or zeros) instead.
func arenaValue(key string) []byte {
	return bytes.Repeat([]byte(key), 8)
}

func putRange(t *testing.T, d *DB, prefix string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		k := fmt.Sprintf("%s%06d", prefix, i)
		require.NoError(t, d.Put([]byte(k), arenaValue(k), nil))
	}
}

// A flushed memtable nobody reads gives its arena to the next memtable of
// the same size (issue 12: the fills kept a third, dead arena on the heap).
func TestMemTableArenaReusedAfterFlush(t *testing.T) {
	d, err := Open(t.TempDir(), arenaTestOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	for round := range 5 {
		putRange(t, d, "k", round*100, (round+1)*100)
		require.NoError(t, d.Flush())
	}
	// The first memtable after Open is new; every later one can reuse the
	// arena of the one flushed before it.
	require.GreaterOrEqual(t, d.arenaReuses.Load(), uint64(4))
	for i := range 500 {
		k := fmt.Sprintf("k%06d", i)
		v, err := d.Get([]byte(k), nil)
		require.NoError(t, err)
		require.Equal(t, arenaValue(k), v)
	}
}

// An open iterator pins the memtables of its view: flushing one of them and
// then forcing more flushes, whose memtables take the pooled arenas, must
// neither hand its arena out nor change what the iterator yields. After
// Close the arena is retired.
func TestIteratorPinsFlushedMemTableArena(t *testing.T) {
	d, err := Open(t.TempDir(), arenaTestOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	// Warm the pool, so that the next memtables would take a free arena.
	putRange(t, d, "z", 0, 10)
	require.NoError(t, d.Flush())

	const n = 1000
	putRange(t, d, "a", 0, n)
	d.mu.Lock()
	pinned := d.def.mu.mem
	d.mu.Unlock()

	it := d.NewIterator(nil)
	it.Seek([]byte("a"))
	require.True(t, it.Valid())
	require.Equal(t, "a000000", string(it.Key()))
	firstValue := it.Value() // aliases the pinned arena

	require.NoError(t, d.Flush())
	d.mu.Lock()
	require.False(t, d.def.isImmutableLocked(pinned), "the memtable was flushed")
	d.mu.Unlock()
	require.Positive(t, pinned.refs.Load(), "the iterator's view still references the flushed memtable")

	reusesBefore := d.arenaReuses.Load()
	for round := range 6 {
		putRange(t, d, "b", round*200, (round+1)*200)
		require.NoError(t, d.Flush())
		require.Positive(t, pinned.refs.Load())
	}
	// Other arenas were recycled meanwhile: the pool was in use.
	require.Greater(t, d.arenaReuses.Load(), reusesBefore)

	require.Equal(t, arenaValue("a000000"), firstValue)
	i := 0
	for ; it.Valid(); it.Next() {
		k := string(it.Key())
		if k[0] == 'z' {
			break
		}
		require.Equal(t, fmt.Sprintf("a%06d", i), k, "the iterator's view has no b keys")
		require.Equal(t, arenaValue(k), it.Value())
		i++
	}
	require.NoError(t, it.Err())
	require.Equal(t, n, i)
	require.NoError(t, it.Close())
	// The closed iterator's state may be cached for reuse; a new view
	// releases it.
	putRange(t, d, "c", 0, 1)
	require.NoError(t, d.Flush())
	require.Zero(t, pinned.refs.Load(), "nothing references the flushed memtable any more")
}

// Readers (Get, iterators) race with a writer that flushes every few hundred
// writes, so that arenas are retired and reused while reads run; every value
// read must be the one written under its key. Run with -race; the number of
// rounds comes from STRATA_ARENA_ROUNDS (default short).
func TestArenaReuseConcurrentReaders(t *testing.T) {
	rounds := 20
	if s := os.Getenv("STRATA_ARENA_ROUNDS"); s != "" {
		var err error
		rounds, err = strconv.Atoi(s)
		require.NoError(t, err)
	}
	d, err := Open(t.TempDir(), arenaTestOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()

	const perRound = 300
	done := make(chan struct{})
	errc := make(chan error, 3)
	var wg sync.WaitGroup
	check := func(k, v []byte) error {
		if !bytes.Equal(v, arenaValue(string(k))) {
			return fmt.Errorf("key %q has value %q", k, v)
		}
		return nil
	}
	reader := func(iterate bool) {
		defer wg.Done()
		for j := 0; ; j++ {
			select {
			case <-done:
				errc <- nil
				return
			default:
			}
			if iterate {
				it := d.NewIterator(nil)
				for it.Seek([]byte("k")); it.Valid(); it.Next() {
					if err := check(it.Key(), it.Value()); err != nil {
						it.Close()
						errc <- err
						return
					}
				}
				if err := it.Close(); err != nil {
					errc <- err
					return
				}
				continue
			}
			k := []byte(fmt.Sprintf("k%06d", j%(rounds*perRound)))
			v, err := d.Get(k, nil)
			if err == ErrNotFound {
				continue
			}
			if err == nil {
				err = check(k, v)
			}
			if err != nil {
				errc <- err
				return
			}
		}
	}
	wg.Add(3)
	go reader(true)
	go reader(false)
	go reader(false)
	for round := range rounds {
		putRange(t, d, "k", round*perRound, (round+1)*perRound)
		require.NoError(t, d.Flush())
	}
	close(done)
	wg.Wait()
	for range 3 {
		require.NoError(t, <-errc)
	}
	require.Positive(t, d.arenaReuses.Load())
}

// TestClosedIteratorOfOldViewIsNotCached: an iterator closed after the view
// changed does not leave its state in the cache, where it would pin the old
// view's memtables and files until the next NewIterator.
func TestClosedIteratorOfOldViewIsNotCached(t *testing.T) {
	d, err := Open(t.TempDir(), arenaTestOptions())
	require.NoError(t, err)
	defer d.Close()
	putRange(t, d, "a", 0, 10)
	it := d.NewIterator(nil)
	it.SeekToFirst()
	require.True(t, it.Valid())
	putRange(t, d, "b", 0, 10)
	require.NoError(t, d.Flush()) // a new read view
	require.NoError(t, it.Close())
	require.Nil(t, d.def.iterCache.Load(), "the closed iterator's old view was cached")

	it = d.NewIterator(nil) // same view as now: its state is cached on Close
	it.SeekToFirst()
	require.True(t, it.Valid())
	require.NoError(t, it.Close())
	require.NotNil(t, d.def.iterCache.Load())
}
