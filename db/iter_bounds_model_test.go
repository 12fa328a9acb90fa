package db_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// TestBoundedIteratorModel checks bounded iterators against a model over a
// database whose keys lie in a memtable (and immutable ones, with a small
// write buffer), several L0 tables that overlap one another or not (runs
// of consecutive keys, as a log writes them, and keys all over the key
// space), and lower levels (CompactRange now and then), with deletions and
// range deletions, at the latest state and at snapshots: random seeks and
// steps in both directions, and SetBounds followed by a new seek on the
// same iterator. The engine skips sources whose key span misses the
// bounds, walks disjoint L0 tables as one level and skips the upper-bound
// check within a data block below the bound; every result must be exactly
// the model's.
func TestBoundedIteratorModel(t *testing.T) {
	base := testutil.Seed(t)
	runs := 6
	if testutil.Long() {
		runs = 40
	}
	for r := 0; r < runs; r++ {
		seed := base + int64(r)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			// Data blocks of a few entries too: a table's iterator then
			// judges the upper bound per block (its index separator),
			// and a range's end falls inside blocks, past them and on
			// their last keys.
			blockSize := []int{4 << 10, 256, 64}[uint64(seed)%3]
			d, err := db.Open("/db", &db.Options{CreateIfMissing: true, FS: vfs.NewMem(),
				DisableAutoCompactions: true, WriteBufferSize: 16 << 10, BlockSize: blockSize})
			require.NoError(t, err)
			defer func() { require.NoError(t, d.Close()) }()
			model := testutil.NewModel()
			key := func(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }
			const space = 2000
			type snap struct {
				s *db.Snapshot
				m *testutil.Model
			}
			var snaps []snap
			next := 0 // the log-like runs' next key
			for round := 0; round < 12; round++ {
				n := 20 + rng.Intn(200)
				switch rng.Intn(3) {
				case 0, 1: // consecutive keys, disjoint from earlier runs
					for i := 0; i < n; i++ {
						k, v := key(next%space), []byte(fmt.Sprintf("v%d-%d", round, i))
						next++
						require.NoError(t, d.Put(k, v, nil))
						model.Put(k, v)
					}
				default: // anywhere
					for i := 0; i < n; i++ {
						k := key(rng.Intn(space))
						switch rng.Intn(10) {
						case 0:
							require.NoError(t, d.Delete(k, nil))
							model.Delete(k)
						case 1:
							end := key(rng.Intn(space))
							if string(end) > string(k) {
								require.NoError(t, d.DeleteRange(k, end, nil))
								model.DeleteRange(k, end)
							}
						default:
							v := []byte(fmt.Sprintf("w%d-%d", round, i))
							require.NoError(t, d.Put(k, v, nil))
							model.Put(k, v)
						}
					}
				}
				if rng.Intn(3) == 0 {
					snaps = append(snaps, snap{d.NewSnapshot(), model.Clone()})
				}
				switch rng.Intn(6) {
				case 0:
					require.NoError(t, d.CompactRange(nil, nil))
				case 1, 2, 3:
					require.NoError(t, d.Flush())
				}
				// Check at the latest state and at a snapshot.
				checkBounded(t, rng, d, nil, model, key, space)
				if len(snaps) > 0 {
					s := snaps[rng.Intn(len(snaps))]
					checkBounded(t, rng, d, s.s, s.m, key, space)
				}
			}
			for _, s := range snaps {
				s.s.Release()
			}
		})
	}
}

// checkBounded runs random bounded iterators over d (at snap, or now) and
// compares them with m.
func checkBounded(t *testing.T, rng *rand.Rand, d *db.DB, snap *db.Snapshot, m *testutil.Model, key func(int) []byte, space int) {
	t.Helper()
	bound := func() []byte {
		if rng.Intn(6) == 0 {
			return nil
		}
		return key(rng.Intn(space+2) - 1)
	}
	for iter := 0; iter < 8; iter++ {
		lower, upper := bound(), bound()
		if lower != nil && upper != nil && string(upper) < string(lower) && rng.Intn(2) == 0 {
			lower, upper = upper, lower
		}
		if upper != nil && rng.Intn(3) != 0 && lower != nil {
			// Mostly narrow ranges, as a log reads them.
			upper = key(min(space, atoiKey(lower)+1+rng.Intn(300)))
		}
		it := d.NewIterator(&db.ReadOptions{Snapshot: snap, LowerBound: lower, UpperBound: upper})
		mi := testutil.NewModelIter(m.Range(lower, upper), nil, false)
		var trace []string
		for op := 0; op < 60; op++ {
			var name string
			switch r := rng.Intn(12); {
			case r < 3 && mi.Valid():
				name = "next"
				it.Next()
				mi.Next()
			case r < 6 && mi.Valid():
				name = "prev"
				it.Prev()
				mi.Prev()
			case r < 7:
				k := key(rng.Intn(space+2) - 1)
				name = "seek " + string(k)
				it.Seek(k)
				mi.Seek(k)
			case r < 8:
				k := key(rng.Intn(space+2) - 1)
				name = "seekforprev " + string(k)
				it.SeekForPrev(k)
				mi.SeekForPrev(k)
			case r < 9:
				name = "first"
				it.SeekToFirst()
				mi.SeekToFirst()
			case r < 10:
				name = "last"
				it.SeekToLast()
				mi.SeekToLast()
			default:
				lower, upper = bound(), bound()
				name = fmt.Sprintf("setbounds %q %q + first", lower, upper)
				it.SetBounds(lower, upper)
				mi = testutil.NewModelIter(m.Range(lower, upper), nil, false)
				if rng.Intn(2) == 0 {
					it.SeekToFirst()
					mi.SeekToFirst()
				} else {
					it.SeekToLast()
					mi.SeekToLast()
				}
			}
			trace = append(trace, name)
			require.NoError(t, it.Err(), "%v", trace)
			require.Equal(t, mi.Valid(), it.Valid(), "bounds [%q, %q): %v", lower, upper, trace)
			if mi.Valid() {
				e := mi.Entry()
				require.Equal(t, e.Key, string(it.Key()), "bounds [%q, %q): %v", lower, upper, trace)
				require.Equal(t, e.Value, string(it.Value()), "%v", trace)
			}
		}
		require.NoError(t, it.Close())
	}
}

// atoiKey is the number in a key made by key.
func atoiKey(k []byte) int {
	n := 0
	for _, c := range k[1:] {
		n = n*10 + int(c-'0')
	}
	return n
}
