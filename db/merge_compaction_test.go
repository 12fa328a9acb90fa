package db

import (
	"fmt"
	"testing"

	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stretchr/testify/require"
)

// tableEntries lists every point entry of every table of d's current
// version, level by level, as "key#seq,KIND=value".
func tableEntries(t *testing.T, d *DB) []string {
	t.Helper()
	rs := d.loadReadState()
	defer rs.unref()
	var out []string
	for level := 0; level < version.NumLevels; level++ {
		for _, f := range rs.version.Levels[level] {
			e, err := d.tables.acquire(f)
			require.NoError(t, err)
			it := e.reader.NewIter()
			for ok := it.First(); ok; ok = it.Next() {
				k := it.Key()
				out = append(out, fmt.Sprintf("%s#%d,%s=%s", k.UserKey, k.SeqNum(), k.Kind(), it.Value()))
			}
			require.NoError(t, it.Error())
			require.NoError(t, it.Close())
			d.tables.release(e)
		}
	}
	return out
}

func openMergeTestDB(t *testing.T) *DB {
	t.Helper()
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/db", 0o755))
	d, err := Open("/db", &Options{CreateIfMissing: true, FS: fs, DisableAutoCompactions: true,
		MergeOperator: NewStringAppendOperator(",")})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

// TestCompactionMergeRules checks what a full compaction (to the bottommost
// level) writes for merge stacks and single deletions, and that reads give
// the same answers before and after.
func TestCompactionMergeRules(t *testing.T) {
	type op struct {
		kind, key, val string // kind: put merge del sdel rdel snap release flush
	}
	for _, tc := range []struct {
		name string
		ops  []op
		want []string
		// reads: key -> value ("" = absent) at the latest state and at
		// snapshot i (snapReads[i]).
		reads     map[string]string
		snapReads []map[string]string
	}{
		{name: "stack on a put becomes a put",
			ops:   []op{{"put", "k", "x"}, {"flush", "", ""}, {"merge", "k", "y"}, {"merge", "k", "z"}},
			want:  []string{"k#3,SET=x,y,z"},
			reads: map[string]string{"k": "x,y,z"}},
		{name: "stack with no base at the bottom becomes a put",
			ops:   []op{{"merge", "k", "y"}, {"flush", "", ""}, {"merge", "k", "z"}},
			want:  []string{"k#2,SET=y,z"},
			reads: map[string]string{"k": "y,z"}},
		{name: "stack on a deletion",
			ops:   []op{{"put", "k", "x"}, {"del", "k", ""}, {"merge", "k", "y"}},
			want:  []string{"k#3,SET=y"},
			reads: map[string]string{"k": "y"}},
		{name: "stack on a range deletion",
			ops:   []op{{"put", "k", "x"}, {"rdel", "a", "z"}, {"merge", "k", "y"}, {"merge", "k", "w"}},
			want:  []string{"k#4,SET=y,w"},
			reads: map[string]string{"k": "y,w"}},
		{name: "stripes are not combined",
			ops: []op{{"put", "k", "x"}, {"merge", "k", "y"}, {"snap", "", ""},
				{"merge", "k", "z"}, {"merge", "k", "w"}},
			want:      []string{"k#4,MERGE=z,w", "k#2,SET=x,y"},
			reads:     map[string]string{"k": "x,y,z,w"},
			snapReads: []map[string]string{{"k": "x,y"}}},
		{name: "operands of an older stripe with nothing under them",
			ops:       []op{{"merge", "k", "y"}, {"snap", "", ""}, {"merge", "k", "z"}},
			want:      []string{"k#2,MERGE=z", "k#1,SET=y"},
			reads:     map[string]string{"k": "y,z"},
			snapReads: []map[string]string{{"k": "y"}}},
		{name: "single delete meets its put",
			ops:   []op{{"put", "s", "1"}, {"flush", "", ""}, {"sdel", "s", ""}, {"put", "t", "2"}},
			want:  []string{"t#3,SET=2"},
			reads: map[string]string{"s": "", "t": "2"}},
		{name: "single delete in another stripe than its put",
			ops:       []op{{"put", "s", "1"}, {"snap", "", ""}, {"sdel", "s", ""}},
			want:      []string{"s#2,SINGLEDEL=", "s#1,SET=1"},
			reads:     map[string]string{"s": ""},
			snapReads: []map[string]string{{"s": "1"}}},
		{name: "pairs of single delete and put",
			ops: []op{{"put", "s", "1"}, {"sdel", "s", ""}, {"snap", "", ""},
				{"put", "s", "2"}, {"sdel", "s", ""}},
			want:      nil,
			reads:     map[string]string{"s": ""},
			snapReads: []map[string]string{{"s": ""}}},
		{name: "single delete under a put is kept",
			ops: []op{{"put", "s", "1"}, {"snap", "", ""}, {"sdel", "s", ""},
				{"put", "s", "2"}, {"snap", "", ""}, {"sdel", "s", ""}},
			want:      []string{"s#4,SINGLEDEL=", "s#3,SET=2", "s#2,SINGLEDEL=", "s#1,SET=1"},
			reads:     map[string]string{"s": ""},
			snapReads: []map[string]string{{"s": "1"}, {"s": "2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := openMergeTestDB(t)
			var snaps []*Snapshot
			for _, o := range tc.ops {
				k, v := []byte(o.key), []byte(o.val)
				switch o.kind {
				case "put":
					require.NoError(t, d.Put(k, v, nil))
				case "merge":
					require.NoError(t, d.Merge(k, v, nil))
				case "del":
					require.NoError(t, d.Delete(k, nil))
				case "sdel":
					require.NoError(t, d.SingleDelete(k, nil))
				case "rdel":
					require.NoError(t, d.DeleteRange(k, v, nil))
				case "snap":
					snaps = append(snaps, d.NewSnapshot())
				case "flush":
					require.NoError(t, d.Flush())
				}
			}
			check := func(when string) {
				for k, want := range tc.reads {
					got, err := d.Get([]byte(k), nil)
					if want == "" {
						require.ErrorIs(t, err, ErrNotFound, "%s: %s", when, k)
						continue
					}
					require.NoError(t, err, "%s: %s", when, k)
					require.Equal(t, want, string(got), "%s: %s", when, k)
				}
				for i, reads := range tc.snapReads {
					for k, want := range reads {
						got, err := d.Get([]byte(k), &ReadOptions{Snapshot: snaps[i]})
						if want == "" {
							require.ErrorIs(t, err, ErrNotFound, "%s: snapshot %d: %s", when, i, k)
							continue
						}
						require.NoError(t, err, "%s: snapshot %d: %s", when, i, k)
						require.Equal(t, want, string(got), "%s: snapshot %d: %s", when, i, k)
					}
				}
			}
			check("before compaction")
			require.NoError(t, d.CompactRange(nil, nil))
			check("after compaction")
			require.Equal(t, tc.want, tableEntries(t, d))
			for _, s := range snaps {
				s.Release()
			}
			require.NoError(t, d.CompactRange(nil, nil))
			snapsGone := tc.snapReads
			tc.snapReads = nil
			check("after compaction without snapshots")
			tc.snapReads = snapsGone
		})
	}
}

// TestMergeNeedsOperator: writing a merge operand without an operator is
// refused, by DB.Merge and by Write of a batch holding one.
func TestMergeNeedsOperator(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/db", 0o755))
	d, err := Open("/db", &Options{CreateIfMissing: true, FS: fs})
	require.NoError(t, err)
	defer d.Close()
	require.ErrorIs(t, d.Merge([]byte("k"), []byte("v"), nil), ErrInvalidArgument)
	b := NewBatch()
	b.Put([]byte("a"), []byte("1"))
	b.Merge([]byte("k"), []byte("v"))
	require.ErrorIs(t, d.Write(b, nil), ErrInvalidArgument)
	_, err = d.Get([]byte("a"), nil)
	require.ErrorIs(t, err, ErrNotFound, "nothing of the batch was written")
	b.Reset()
	b.Put([]byte("a"), []byte("1"))
	require.NoError(t, d.Write(b, nil))
}

// A flush combines operands within snapshot stripes, as compaction does
// above the bottommost level; with a range deletion in the memtable it
// writes the entries as they are.
func TestFlushMergesOperands(t *testing.T) {
	d := openMergeTestDB(t)
	k := []byte("k")
	require.NoError(t, d.Put(k, []byte("x"), nil))
	require.NoError(t, d.Merge(k, []byte("y"), nil))
	s := d.NewSnapshot()
	defer s.Release()
	require.NoError(t, d.Merge(k, []byte("z"), nil))
	require.NoError(t, d.Merge(k, []byte("w"), nil))
	require.NoError(t, d.Merge([]byte("m"), []byte("1"), nil))
	require.NoError(t, d.Merge([]byte("m"), []byte("2"), nil))
	require.NoError(t, d.Put([]byte("p"), []byte("v"), nil))
	require.NoError(t, d.Flush())
	require.Equal(t, []string{"k#4,MERGE=z,w", "k#2,SET=x,y", "m#6,MERGE=1,2", "p#7,SET=v"}, tableEntries(t, d))
	v, err := d.Get(k, nil)
	require.NoError(t, err)
	require.Equal(t, "x,y,z,w", string(v))
	v, err = d.Get(k, &ReadOptions{Snapshot: s})
	require.NoError(t, err)
	require.Equal(t, "x,y", string(v))

	d = openMergeTestDB(t)
	require.NoError(t, d.Put(k, []byte("x"), nil))
	require.NoError(t, d.Merge(k, []byte("y"), nil))
	require.NoError(t, d.DeleteRange([]byte("a"), []byte("b"), nil))
	require.NoError(t, d.Flush())
	require.Equal(t, []string{"k#2,MERGE=y", "k#1,SET=x"}, tableEntries(t, d))
}
