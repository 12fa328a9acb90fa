package db_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// testFilter decides by key prefix: "drop" removes, "chg" upper-cases the
// value, "skip" removes up to skipTo; everything else is kept. It records
// the keys it was asked about.
type testFilter struct {
	name    string
	onFlush bool
	skipTo  string
	mu      sync.Mutex
	asked   []string
	// badOperand, when set, is a merge operand FilterMergeOperand drops.
	badOperand string
}

func (f *testFilter) Name() string { return f.name }

func (f *testFilter) Filter(level int, key, value []byte) (db.FilterDecision, []byte) {
	f.mu.Lock()
	f.asked = append(f.asked, string(key))
	f.mu.Unlock()
	switch k := string(key); {
	case strings.HasPrefix(k, "drop"):
		return db.FilterRemove, nil
	case strings.HasPrefix(k, "chg"):
		return db.FilterChangeValue, bytes.ToUpper(value)
	case strings.HasPrefix(k, "skip") && f.skipTo != "":
		return db.FilterRemoveAndSkipUntil, []byte(f.skipTo)
	}
	return db.FilterKeep, nil
}

func (f *testFilter) FilterOnFlush() bool { return f.onFlush }

func (f *testFilter) FilterMergeOperand(level int, key, operand []byte) bool {
	return f.badOperand != "" && string(operand) == f.badOperand
}

func (f *testFilter) askedKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

// removeAll removes every value.
type removeAll struct{}

func (removeAll) Name() string { return "test.RemoveAll" }
func (removeAll) Filter(int, []byte, []byte) (db.FilterDecision, []byte) {
	return db.FilterRemove, nil
}

func TestCompactionFilter_Decisions(t *testing.T) {
	f := &testFilter{name: "test.Decisions", skipTo: "skiq"}
	d, _ := openTest(t, &db.Options{CompactionFilter: f, DisableAutoCompactions: true})
	defer d.Close()
	// An older version of drop1 at the bottom: FilterRemove must leave a
	// deletion that keeps hiding it.
	require.NoError(t, d.Put([]byte("drop1"), []byte("old"), nil))
	require.NoError(t, d.CompactRange(nil, nil))
	require.NoError(t, d.Put([]byte("drop1"), []byte("new"), nil))
	for _, k := range []string{"a", "chg1", "skip", "skip1", "skip2", "skiq", "z"} {
		require.NoError(t, d.Put([]byte(k), []byte("v-"+k), nil))
	}
	require.NoError(t, d.Flush())
	// Flushes do not filter (no opt-in): everything reads as written.
	require.Equal(t, []string{"a=v-a", "chg1=v-chg1", "drop1=new", "skip=v-skip", "skip1=v-skip1", "skip2=v-skip2", "skiq=v-skiq", "z=v-z"}, scan(t, d, nil))

	require.NoError(t, d.CompactRange(nil, nil))
	require.Equal(t, []string{"a=v-a", "chg1=V-CHG1", "skiq=v-skiq", "z=v-z"}, scan(t, d, nil))
	_, err := d.Get([]byte("drop1"), nil)
	require.ErrorIs(t, err, db.ErrNotFound)
	// The keys the skip passed over were not offered to the filter.
	asked := f.askedKeys()
	require.Contains(t, asked, "skip")
	require.NotContains(t, asked, "skip1")
	require.NotContains(t, asked, "skip2")
	require.Contains(t, asked, "skiq")
}

func TestCompactionFilter_SnapshotsProtectWhatTheySee(t *testing.T) {
	d, _ := openTest(t, &db.Options{CompactionFilter: removeAll{}, DisableAutoCompactions: true})
	defer d.Close()
	require.NoError(t, d.Put([]byte("a"), []byte("1"), nil))
	require.NoError(t, d.Put([]byte("b"), []byte("1"), nil))
	snap := d.NewSnapshot()
	require.NoError(t, d.Put([]byte("b"), []byte("2"), nil))
	require.NoError(t, d.Put([]byte("c"), []byte("2"), nil))
	require.NoError(t, d.CompactRange(nil, nil))

	// The snapshot reads exactly what it saw.
	require.Equal(t, []string{"a=1", "b=1"}, scan(t, d, &db.ReadOptions{Snapshot: snap}))
	v, err := d.Get([]byte("b"), &db.ReadOptions{Snapshot: snap})
	require.NoError(t, err)
	require.Equal(t, "1", string(v))
	// Now: a's newest version is the snapshot's, so it stays; b's and c's
	// newest were seen by no snapshot and are gone, and b=1 does not come
	// back.
	require.Equal(t, []string{"a=1"}, scan(t, d, nil))

	snap.Release()
	require.NoError(t, d.CompactRange(nil, nil))
	require.Empty(t, scan(t, d, nil))
}

func TestCompactionFilter_FlushOptIn(t *testing.T) {
	for _, onFlush := range []bool{false, true} {
		f := &testFilter{name: "test.Flush", onFlush: onFlush}
		d, _ := openTest(t, &db.Options{CompactionFilter: f, DisableAutoCompactions: true})
		require.NoError(t, d.Put([]byte("drop1"), []byte("x"), nil))
		require.NoError(t, d.Put([]byte("chg1"), []byte("y"), nil))
		require.NoError(t, d.Flush())
		if onFlush {
			require.Equal(t, []string{"chg1=Y"}, scan(t, d, nil))
		} else {
			require.Equal(t, []string{"chg1=y", "drop1=x"}, scan(t, d, nil))
		}
		require.NoError(t, d.Close())
	}
}

// appendNoPartial joins operands with commas and has no PartialMerge: a
// flush would otherwise combine the operands into one before any
// compaction asks the filter about them.
type appendNoPartial struct{}

func (appendNoPartial) Name() string { return "test.AppendNoPartial" }

func (appendNoPartial) FullMerge(_, existing []byte, operands [][]byte) ([]byte, error) {
	parts := [][]byte{}
	if existing != nil {
		parts = append(parts, existing)
	}
	return bytes.Join(append(parts, operands...), []byte(",")), nil
}

func (appendNoPartial) PartialMerge([]byte, [][]byte) ([]byte, bool) { return nil, false }

func TestCompactionFilter_MergeOperands(t *testing.T) {
	f := &testFilter{name: "test.Operands", badOperand: "bad"}
	d, _ := openTest(t, &db.Options{CompactionFilter: f, MergeOperator: appendNoPartial{}, DisableAutoCompactions: true})
	defer d.Close()
	require.NoError(t, d.Put([]byte("k"), []byte("x"), nil))
	require.NoError(t, d.CompactRange(nil, nil))
	for _, op := range []string{"a", "bad", "b"} {
		require.NoError(t, d.Merge([]byte("k"), []byte(op), nil))
	}
	// Only operands (every one a merge, "bad" among them): the stack
	// with every operand dropped must leave what lies below.
	require.NoError(t, d.Merge([]byte("only"), []byte("bad"), nil))
	v, err := d.Get([]byte("k"), nil)
	require.NoError(t, err)
	require.Equal(t, "x,a,bad,b", string(v))
	require.NoError(t, d.CompactRange(nil, nil))
	v, err = d.Get([]byte("k"), nil)
	require.NoError(t, err)
	require.Equal(t, "x,a,b", string(v))
	_, err = d.Get([]byte("only"), nil)
	require.ErrorIs(t, err, db.ErrNotFound)
}

func TestCompactionFilter_PerFamily(t *testing.T) {
	d, dir := openTest(t, &db.Options{DisableAutoCompactions: true})
	defer d.Close()
	cf, err := d.CreateColumnFamily("filtered", &db.ColumnFamilyOptions{CompactionFilter: removeAll{}, DisableAutoCompactions: true})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("k"), []byte("v"), nil))
	require.NoError(t, cf.Put([]byte("k"), []byte("v"), nil))
	require.NoError(t, d.CompactRange(nil, nil))
	require.NoError(t, cf.CompactRange(nil, nil))
	v, err := d.Get([]byte("k"), nil)
	require.NoError(t, err)
	require.Equal(t, "v", string(v))
	_, err = cf.Get([]byte("k"), nil)
	require.ErrorIs(t, err, db.ErrNotFound)

	// The OPTIONS file names each family's filter.
	sections := optionsSections(t, dir)
	require.Contains(t, sections[`CFOptions "default"`], "compaction_filter=nullptr")
	require.Contains(t, sections[`CFOptions "filtered"`], "compaction_filter=test.RemoveAll")
}

// optionsSections returns the lines of the newest OPTIONS file by section
// title.
func optionsSections(t *testing.T, dir string) map[string][]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	newest := names[0]
	for _, n := range names {
		if len(n) > len(newest) || (len(n) == len(newest) && n > newest) {
			newest = n
		}
	}
	data, err := os.ReadFile(newest)
	require.NoError(t, err)
	out := map[string][]string{}
	var sec string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			sec = line[1 : len(line)-1]
			continue
		}
		if line != "" && !strings.HasPrefix(line, "#") {
			out[sec] = append(out[sec], line)
		}
	}
	return out
}
