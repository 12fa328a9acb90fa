package db_test

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestColumnFamilyModel drives three families with random puts, deletes,
// range deletions and cross-family batches, flushes of single families,
// reopens and power losses (crash clones of the in-memory file system after
// synced writes), with small write buffers so that memtables and WALs turn
// over often and families flush at different times. After every reopen
// each family must equal its model: recovery has to skip exactly the WAL
// records a family's tables already hold and replay the rest.
func TestColumnFamilyModel(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runColumnFamilyModel(t, seed) })
	}
}

func runColumnFamilyModel(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	fs := vfs.NewMem()
	names := []string{"default", "a", "b"}
	cfOpts := &db.ColumnFamilyOptions{WriteBufferSize: 4 << 10, MaxWriteBufferNumber: 3,
		Level0FileNumCompactionTrigger: 2}
	opts := func() *db.Options {
		return &db.Options{FS: fs, CreateIfMissing: true, CreateMissingColumnFamilies: true,
			WriteBufferSize: 8 << 10, MaxTotalWALSize: 64 << 10,
			ColumnFamilies: map[string]*db.ColumnFamilyOptions{"a": cfOpts, "b": cfOpts}}
	}
	d, err := db.Open("/db", opts())
	require.NoError(t, err)
	models := make([]map[string]string, len(names))
	for i := range models {
		models[i] = map[string]string{}
	}
	fam := func(i int) *db.ColumnFamily {
		cf := d.ColumnFamily(names[i])
		require.NotNil(t, cf, names[i])
		return cf
	}
	key := func() string { return fmt.Sprintf("k%03d", rng.Intn(200)) }
	check := func() {
		for i := range names {
			it := fam(i).NewIterator(nil)
			got := map[string]string{}
			for it.SeekToFirst(); it.Valid(); it.Next() {
				got[string(it.Key())] = string(it.Value())
			}
			require.NoError(t, it.Err())
			require.NoError(t, it.Close())
			require.Equal(t, models[i], got, "family %s", names[i])
		}
	}
	sync := &db.WriteOptions{Sync: true}
	for step := 0; step < 3000; step++ {
		switch r := rng.Intn(100); {
		case r < 55:
			i, k, v := rng.Intn(len(names)), key(), fmt.Sprintf("v%d", step)
			require.NoError(t, fam(i).Put([]byte(k), []byte(v), sync))
			models[i][k] = v
		case r < 65:
			i, k := rng.Intn(len(names)), key()
			require.NoError(t, fam(i).Delete([]byte(k), sync))
			delete(models[i], k)
		case r < 68:
			i := rng.Intn(len(names))
			lo, hi := key(), key()
			if lo > hi {
				lo, hi = hi, lo
			}
			require.NoError(t, fam(i).DeleteRange([]byte(lo), []byte(hi), sync))
			for k := range models[i] {
				if k >= lo && k < hi {
					delete(models[i], k)
				}
			}
		case r < 88:
			b := db.NewBatch()
			type op struct {
				i    int
				k, v string
			}
			var ops []op
			for n := 1 + rng.Intn(4); n > 0; n-- {
				o := op{i: rng.Intn(len(names)), k: key()}
				if rng.Intn(4) > 0 {
					o.v = fmt.Sprintf("b%d", step)
					b.PutCF(fam(o.i), []byte(o.k), []byte(o.v))
				} else {
					b.DeleteCF(fam(o.i), []byte(o.k))
				}
				ops = append(ops, o)
			}
			require.NoError(t, d.Write(b, sync))
			for _, o := range ops {
				if o.v != "" {
					models[o.i][o.k] = o.v
				} else {
					delete(models[o.i], o.k)
				}
			}
		case r < 92:
			require.NoError(t, fam(rng.Intn(len(names))).Flush())
		case r < 94:
			require.NoError(t, d.Close())
			d, err = db.Open("/db", opts())
			require.NoError(t, err)
			check()
		case r < 97:
			// Power loss: only what was synced survives, and every write
			// above was synced.
			crashed := fs.CrashClone()
			require.NoError(t, d.Close())
			fs = crashed
			d, err = db.Open("/db", opts())
			require.NoError(t, err)
			check()
		default:
			check()
		}
	}
	check()
	got, err := db.ListColumnFamiliesFS(fs, "/db")
	require.NoError(t, err)
	want := append([]string(nil), names...)
	sort.Strings(want[1:])
	require.Equal(t, want, got)
	require.NoError(t, d.Close())
}
