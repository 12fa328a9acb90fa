package db_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/batch"
	"github.com/stratadb/strata/internal/record"
	"github.com/stretchr/testify/require"
)

// walRec is one record of a hand-written WAL: batch i puts walKey(i).
type walRec struct {
	i          int
	log        int   // index of its WAL
	start, end int64 // its bytes in the WAL
	value      []byte
}

func walKey(i int) []byte { return []byte(fmt.Sprintf("w%05d", i)) }

// walSet is a database directory with no tables and several WALs written
// directly, each a sequence of one-Put batches with consecutive sequence
// numbers.
type walSet struct {
	base    map[string][]byte // CURRENT, MANIFEST, OPTIONS...: the empty DB
	logNums []uint64
	logs    [][]byte
	recs    []walRec
}

func newWALSet(t *testing.T, rng *rand.Rand, nLogs, perLog int) *walSet {
	t.Helper()
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true})
	require.NoError(t, err)
	require.NoError(t, d.Close())
	ws := &walSet{base: map[string][]byte{}}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var first uint64
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".log") {
			n, err := strconv.ParseUint(strings.TrimSuffix(name, ".log"), 10, 64)
			require.NoError(t, err)
			first = n
			continue
		}
		if name == "LOCK" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		ws.base[name] = data
	}
	require.NotZero(t, first, "the empty database has a WAL")
	seq := base.SeqNum(1)
	for l := 0; l < nLogs; l++ {
		var buf bytes.Buffer
		num := first + uint64(l)
		w := record.NewWriter(&buf, num)
		for k := 0; k < perLog; k++ {
			i := len(ws.recs)
			// Mostly small records, some that span blocks.
			n := 10 + rng.Intn(300)
			if rng.Intn(6) == 0 {
				n = 5000 + rng.Intn(70000)
			}
			v := make([]byte, n)
			for j := range v {
				v[j] = 'a' + byte(rng.Intn(26))
			}
			var b batch.Batch
			b.SetSeq(seq)
			b.Put(walKey(i), v)
			seq++
			start := w.Size()
			if left := record.BlockSize - start%record.BlockSize; left < record.HeaderSize {
				start += left
			}
			end, err := w.WriteRecord(b.Data())
			require.NoError(t, err)
			ws.recs = append(ws.recs, walRec{i: i, log: l, start: start, end: end, value: v})
		}
		require.NoError(t, w.Flush())
		ws.logNums = append(ws.logNums, num)
		ws.logs = append(ws.logs, buf.Bytes())
	}
	return ws
}

// write creates the directory with logs in place of the WALs.
func (ws *walSet) write(t *testing.T, dir string, logs [][]byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, data := range ws.base {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	for l, data := range logs {
		name := base.MakeFilename(base.FileKindLog, ws.logNums[l])
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
}

// walDamage is one damage to one WAL and what each mode must make of it.
type walDamage struct {
	desc string
	log  int
	// apply returns the damaged WAL.
	apply func([]byte) []byte
	// first is the first damaged record; torn is true when the damage is
	// a torn tail (the log ends inside record first).
	first int
	torn  bool
	// zeroAt: the damage is a zero-filled block that starts exactly at a
	// record (a zero header, which the default mode takes for the end of
	// the newest WAL, and for damage in an older one).
	zeroAt bool
	// lost are the records a skipping reader loses.
	lost map[int]bool
}

// expect returns the records mode recovers, or ok=false when Open must fail
// with ErrCorruption.
func (ws *walSet) expect(dmg *walDamage, mode db.WALRecoveryMode) (applied map[int]bool, ok bool) {
	applied = map[int]bool{}
	last := dmg.log == len(ws.logs)-1
	for _, r := range ws.recs {
		before := r.log < dmg.log || (r.log == dmg.log && r.i < dmg.first)
		switch mode {
		case db.WALRecoveryTolerateCorruptedTail:
			switch {
			case dmg.zeroAt && last:
				if before {
					applied[r.i] = true
				}
			case dmg.torn && (last || dmg.first < 0):
				if before {
					applied[r.i] = true
				}
			default:
				return nil, false
			}
		case db.WALRecoveryAbsoluteConsistency:
			return nil, false
		case db.WALRecoveryPointInTime:
			if before {
				applied[r.i] = true
			}
		case db.WALRecoverySkipAnyCorrupted:
			if !dmg.lost[r.i] {
				applied[r.i] = true
			}
		}
	}
	return applied, true
}

// recsOf returns the records of log l.
func (ws *walSet) recsOf(l int) []walRec {
	var out []walRec
	for _, r := range ws.recs {
		if r.log == l {
			out = append(out, r)
		}
	}
	return out
}

// damages returns one damage of each kind to log l.
func (ws *walSet) damages(rng *rand.Rand, l int) []*walDamage {
	recs := ws.recsOf(l)
	var out []*walDamage
	blockOf := func(off int64) int64 { return off / record.BlockSize }

	// A flipped byte inside a record: a skipping reader loses the record
	// and every record that starts later in the same block.
	{
		j := rng.Intn(len(recs))
		r := recs[j]
		x := r.start + rng.Int63n(r.end-r.start)
		lost := map[int]bool{r.i: true}
		for _, o := range recs[j+1:] {
			if blockOf(o.start) == blockOf(x) {
				lost[o.i] = true
			}
		}
		out = append(out, &walDamage{
			desc: fmt.Sprintf("flip log %d offset %d (record %d)", l, x, r.i), log: l, first: r.i, lost: lost,
			apply: func(b []byte) []byte { b = append([]byte(nil), b...); b[x] ^= 0xff; return b },
		})
	}
	// Truncation inside a record, past its header's type byte.
	{
		j := rng.Intn(len(recs))
		r := recs[j]
		x := r.start + record.HeaderSize + rng.Int63n(r.end-r.start-record.HeaderSize)
		lost := map[int]bool{}
		for _, o := range recs[j:] {
			lost[o.i] = true
		}
		out = append(out, &walDamage{
			desc: fmt.Sprintf("truncate log %d at %d (record %d)", l, x, r.i), log: l, first: r.i, torn: true, lost: lost,
			apply: func(b []byte) []byte { return append([]byte(nil), b[:x]...) },
		})
	}
	// A zeroed block with records after it.
	if n := int64(len(ws.logs[l])); n > 2*record.BlockSize {
		blk := rng.Int63n(n/record.BlockSize - 1)
		lo, hi := blk*record.BlockSize, (blk+1)*record.BlockSize
		dmg := &walDamage{desc: fmt.Sprintf("zero block %d of log %d", blk, l), log: l, first: -1, lost: map[int]bool{}}
		for _, r := range recs {
			if r.end > lo && r.start < hi {
				dmg.lost[r.i] = true
				if dmg.first < 0 {
					dmg.first = r.i
					dmg.zeroAt = r.start >= lo
					dmg.torn = r.start < lo
				}
			}
		}
		if dmg.first >= 0 {
			dmg.apply = func(b []byte) []byte {
				b = append([]byte(nil), b...)
				copy(b[lo:hi], make([]byte, hi-lo))
				return b
			}
			out = append(out, dmg)
		}
	}
	return out
}

var walRecoveryModes = []db.WALRecoveryMode{
	db.WALRecoveryTolerateCorruptedTail,
	db.WALRecoveryAbsoluteConsistency,
	db.WALRecoveryPointInTime,
	db.WALRecoverySkipAnyCorrupted,
}

// readAllKeys returns the database's contents.
func readAllKeys(t *testing.T, d *db.DB) map[string]string {
	t.Helper()
	it := d.NewIterator(nil)
	got := map[string]string{}
	for it.SeekToFirst(); it.Valid(); it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return got
}

// TestWALRecoveryModes damages one of three WALs (a flipped byte, a
// truncation inside a record, a zeroed block) and opens the database under
// every recovery mode: what Open recovers, or whether it fails, matches the
// model of each mode, and the outcome survives a reopen. STRATA_WAL_SEEDS
// runs more seeds.
func TestWALRecoveryModes(t *testing.T) {
	seeds := 2
	if v := os.Getenv("STRATA_WAL_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		seeds = n
	}
	for s := 0; s < seeds; s++ {
		seed := int64(s + 1)
		rng := rand.New(rand.NewSource(seed))
		ws := newWALSet(t, rng, 3, 25)
		for l := range ws.logs {
			for _, dmg := range ws.damages(rng, l) {
				for _, mode := range walRecoveryModes {
					name := fmt.Sprintf("seed%d/%s/%s", seed, dmg.desc, mode)
					logs := append([][]byte(nil), ws.logs...)
					logs[l] = dmg.apply(logs[l])
					dir := filepath.Join(t.TempDir(), "db")
					ws.write(t, dir, logs)
					want, ok := ws.expect(dmg, mode)
					d, err := db.Open(dir, &db.Options{WALRecoveryMode: mode})
					if !ok {
						require.ErrorIs(t, err, db.ErrCorruption, name)
						require.Contains(t, err.Error(), base.MakeFilename(base.FileKindLog, ws.logNums[l]), name)
						continue
					}
					require.NoError(t, err, name)
					wantKV := map[string]string{}
					for _, r := range ws.recs {
						if want[r.i] {
							wantKV[string(walKey(r.i))] = string(r.value)
						}
					}
					requireSameKeys(t, wantKV, readAllKeys(t, d), name)
					require.NoError(t, d.Close(), name)
					// Recovery is final: the damaged WALs are gone.
					d, err = db.Open(dir, nil)
					require.NoError(t, err, name)
					requireSameKeys(t, wantKV, readAllKeys(t, d), name+" (reopened)")
					require.NoError(t, d.Close(), name)
				}
			}
		}
	}
}

// requireSameKeys compares key sets first, for a readable failure.
func requireSameKeys(t *testing.T, want, got map[string]string, msg string) {
	t.Helper()
	keys := func(m map[string]string) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	require.Equal(t, keys(want), keys(got), msg)
	require.Equal(t, want, got, msg)
}

// TestWALRecoveryModeOption: the OPTIONS file names the mode as RocksDB
// does, and an unknown mode is refused.
func TestWALRecoveryModeOption(t *testing.T) {
	d, dir := openTest(t, &db.Options{WALRecoveryMode: db.WALRecoveryPointInTime})
	require.NoError(t, d.Close())
	opts := filesMatching(t, dir, "OPTIONS-*")
	require.NotEmpty(t, opts)
	data, err := os.ReadFile(opts[len(opts)-1])
	require.NoError(t, err)
	require.Contains(t, string(data), "  wal_recovery_mode=kPointInTimeRecovery\n")
	require.Equal(t, "kSkipAnyCorruptedRecords", db.WALRecoverySkipAnyCorrupted.String())

	_, err = db.Open(dir, &db.Options{WALRecoveryMode: 4})
	require.ErrorIs(t, err, db.ErrInvalidArgument)
	require.Contains(t, err.Error(), "WALRecoveryMode")
}
