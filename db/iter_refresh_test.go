package db_test

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// kvModel is a sorted-map model of the database.
type kvModel map[string]string

func (m kvModel) clone() kvModel {
	c := kvModel{}
	for k, v := range m {
		c[k] = v
	}
	return c
}

// sorted returns the keys in [lower, upper) (nil: unbounded), ascending.
func (m kvModel) sorted(lower, upper []byte) []string {
	var out []string
	for k := range m {
		if lower != nil && k < string(lower) || upper != nil && k >= string(upper) {
			continue
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// refreshKey is one of 200 keys.
func refreshKey(rng *rand.Rand) []byte { return []byte(fmt.Sprintf("k%03d", rng.Intn(200))) }

// mutate applies n random writes (puts, deletes, range deletions, and now
// and then a flush or a compaction) to d and m.
func mutate(t *testing.T, rng *rand.Rand, d *db.DB, m kvModel, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		switch r := rng.Intn(100); {
		case r < 60:
			k, v := refreshKey(rng), fmt.Sprintf("v%d", rng.Int63())
			require.NoError(t, d.Put(k, []byte(v), nil))
			m[string(k)] = v
		case r < 85:
			k := refreshKey(rng)
			require.NoError(t, d.Delete(k, nil))
			delete(m, string(k))
		case r < 92:
			a, b := refreshKey(rng), refreshKey(rng)
			if string(a) > string(b) {
				a, b = b, a
			}
			require.NoError(t, d.DeleteRange(a, b, nil))
			for k := range m {
				if k >= string(a) && k < string(b) {
					delete(m, k)
				}
			}
		case r < 97:
			require.NoError(t, d.Flush())
		default:
			require.NoError(t, d.CompactRange(nil, nil))
		}
	}
}

// checkSteps checks that it, positioned, walks want from index i in
// direction step (+1 Next, -1 Prev) for up to n steps.
func checkSteps(t *testing.T, it *db.Iterator, m kvModel, want []string, i, step, n int, msg string) {
	t.Helper()
	for s := 0; s < n; s++ {
		if i < 0 || i >= len(want) {
			require.False(t, it.Valid(), "%s: step %d: past the end, at %q", msg, s, it.Key())
			require.NoError(t, it.Err())
			return
		}
		require.True(t, it.Valid(), "%s: step %d: want %q", msg, s, want[i])
		require.Equal(t, want[i], string(it.Key()), "%s: step %d", msg, s)
		require.Equal(t, m[want[i]], string(it.Value()), "%s: step %d", msg, s)
		if step > 0 {
			it.Next()
		} else {
			it.Prev()
		}
		i += step
	}
}

// TestIteratorRefresh: writes made after an iterator was created are
// invisible to it until Refresh, and visible after; Refresh keeps the
// position (the same key, or the next one in the iterator's direction);
// an unpositioned iterator stays unpositioned. Checked against a model
// over random puts, deletes, range deletions, flushes and compactions.
func TestIteratorRefresh(t *testing.T) {
	d, _ := openTest(t, &db.Options{WriteBufferSize: 64 << 10})
	defer d.Close()
	rng := rand.New(rand.NewSource(1))
	m := kvModel{}
	mutate(t, rng, d, m, 300)
	it := d.NewIterator(nil)
	defer it.Close()
	view := m.clone()
	for round := 0; round < 40; round++ {
		msg := fmt.Sprintf("round %d", round)
		want := view.sorted(nil, nil)
		// Position it somewhere, in either direction.
		target := refreshKey(rng)
		var i, step int
		if rng.Intn(2) == 0 {
			it.Seek(target)
			i, step = sort.SearchStrings(want, string(target)), 1
		} else {
			it.SeekForPrev(target)
			i, step = sort.SearchStrings(want, string(target)+"\x00")-1, -1
		}
		checkSteps(t, it, view, want, i, step, 3, msg+" before writes")
		mutate(t, rng, d, m, 1+rng.Intn(60))
		// Unrefreshed, the iterator still reads view.
		i += 3 * step
		checkSteps(t, it, view, want, i, step, 3, msg+" after writes")
		i += 3 * step
		var cur string
		valid := it.Valid()
		if valid {
			cur = string(it.Key())
		}
		require.NoError(t, it.Refresh(), msg)
		view = m.clone()
		want = view.sorted(nil, nil)
		if !valid {
			require.False(t, it.Valid(), msg+": an unpositioned iterator stays so")
			continue
		}
		if step > 0 {
			i = sort.SearchStrings(want, cur)
		} else {
			i = sort.SearchStrings(want, cur+"\x00") - 1
		}
		checkSteps(t, it, view, want, i, step, 5, msg+" after Refresh")
		// A full scan sees the new view.
		it.SeekToFirst()
		checkSteps(t, it, view, want, 0, 1, len(want)+1, msg+" full scan")
	}
}

// TestIteratorRefreshSnapshot: an iterator reading at a snapshot keeps the
// snapshot's view across Refresh, even after flushes and compactions; with
// the snapshot released, Refresh fails with ErrClosed; a closed iterator
// refuses Refresh.
func TestIteratorRefreshSnapshot(t *testing.T) {
	d, _ := openTest(t, &db.Options{WriteBufferSize: 64 << 10})
	defer d.Close()
	rng := rand.New(rand.NewSource(2))
	m := kvModel{}
	mutate(t, rng, d, m, 300)
	snap := d.NewSnapshot()
	view := m.clone()
	it := d.NewIterator(&db.ReadOptions{Snapshot: snap})
	want := view.sorted(nil, nil)
	require.NotEmpty(t, want)
	it.SeekToFirst()
	for round := 0; round < 5; round++ {
		mutate(t, rng, d, m, 100)
		require.NoError(t, d.Flush())
		require.NoError(t, d.CompactRange(nil, nil))
		require.NoError(t, it.Refresh())
		it.SeekToLast()
		checkSteps(t, it, view, want, len(want)-1, -1, len(want)+1, fmt.Sprintf("round %d", round))
	}
	snap.Release()
	require.ErrorIs(t, it.Refresh(), db.ErrClosed)
	require.False(t, it.Valid())
	require.NoError(t, it.Close())
	require.ErrorIs(t, it.Refresh(), db.ErrClosed)
}

// TestIteratorSetBounds: SetBounds unpositions the iterator, and every
// later seek and step respects the new bounds, narrower or wider than the
// old ones (nil bounds included), in both directions.
func TestIteratorSetBounds(t *testing.T) {
	d, _ := openTest(t, &db.Options{WriteBufferSize: 64 << 10})
	defer d.Close()
	rng := rand.New(rand.NewSource(3))
	m := kvModel{}
	mutate(t, rng, d, m, 500)
	it := d.NewIterator(&db.ReadOptions{LowerBound: []byte("k050"), UpperBound: []byte("k100")})
	defer it.Close()
	it.SeekToFirst()
	for round := 0; round < 60; round++ {
		var lower, upper []byte
		if rng.Intn(4) > 0 {
			lower = refreshKey(rng)
		}
		if rng.Intn(4) > 0 {
			upper = refreshKey(rng)
		}
		msg := fmt.Sprintf("round %d [%q, %q)", round, lower, upper)
		it.SetBounds(lower, upper)
		require.False(t, it.Valid(), msg)
		// The iterator copied the bounds.
		if lower != nil {
			lower[0] = 'z'
			lower[0] = 'k'
		}
		want := m.sorted(lower, upper)
		switch rng.Intn(4) {
		case 0:
			it.SeekToFirst()
			checkSteps(t, it, m, want, 0, 1, len(want)+1, msg+" forward")
		case 1:
			it.SeekToLast()
			checkSteps(t, it, m, want, len(want)-1, -1, len(want)+1, msg+" backward")
		case 2:
			k := refreshKey(rng)
			it.Seek(k)
			i := sort.SearchStrings(want, string(k))
			checkSteps(t, it, m, want, i, 1, 10, msg+fmt.Sprintf(" Seek(%q)", k))
		default:
			k := refreshKey(rng)
			it.SeekForPrev(k)
			i := sort.SearchStrings(want, string(k)+"\x00") - 1
			checkSteps(t, it, m, want, i, -1, 10, msg+fmt.Sprintf(" SeekForPrev(%q)", k))
		}
	}
	// Changing bounds reuses the iterator's buffers.
	lo, up := []byte("k010"), []byte("k020")
	it.SetBounds(lo, up)
	require.Zero(t, testing.AllocsPerRun(100, func() { it.SetBounds(up, lo); it.SetBounds(lo, up) }))
	// An empty upper bound is a bound before every key.
	it.SetBounds(nil, []byte{})
	it.SeekToFirst()
	require.False(t, it.Valid())
	it.SeekToLast()
	require.False(t, it.Valid())
}
