package tool

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/record"
	"github.com/stratadb/strata/internal/version"
)

func init() {
	register("manifest", "dump", "FILE [--hex]", manifestDump)
}

// ldbLevels is the number of levels ldb manifest_dump prints: it opens the
// MANIFEST with num_levels = 64, whatever the database uses.
const ldbLevels = 64

// cfState is one column family's state while a MANIFEST is replayed.
type cfState struct {
	id         uint32
	name       string
	logNumber  uint64
	comparator string
	order      *base.Comparer // set by orderFamilies
	levels     [ldbLevels]map[uint64]*version.FileMetadata
}

// manifestState is the result of replaying a MANIFEST's edits.
type manifestState struct {
	cfs                             map[uint32]*cfState
	nextFile, prevLog, minLogToKeep uint64
	lastSeq                         base.SeqNum
	maxColumnFamily                 uint32
	edits                           int
}

func newCF(id uint32, name string) *cfState {
	cf := &cfState{id: id, name: name}
	for i := range cf.levels {
		cf.levels[i] = map[uint64]*version.FileMetadata{}
	}
	return cf
}

// replayManifest reads every edit of the MANIFEST at path.
func replayManifest(path string) (*manifestState, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Wrap(err, "strata: manifest")
	}
	defer f.Close()
	name := filepath.Base(path)
	_, num, _ := base.ParseFilename(name)
	st := &manifestState{cfs: map[uint32]*cfState{0: newCF(0, "default")}}
	r := record.NewReader(f, num, name)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return st, nil
		}
		if err != nil {
			return nil, errors.Wrapf(err, "strata: manifest %s", path)
		}
		var e version.Edit
		if err := e.Decode(rec); err != nil {
			return nil, errors.Wrapf(err, "strata: manifest %s: edit at offset %d", path, r.Offset())
		}
		st.edits++
		if err := st.apply(&e); err != nil {
			return nil, errors.Wrapf(err, "strata: manifest %s: edit at offset %d", path, r.Offset())
		}
	}
}

func (st *manifestState) apply(e *version.Edit) error {
	if e.HasColumnFamilyAdd {
		st.cfs[e.ColumnFamily] = newCF(e.ColumnFamily, e.ColumnFamilyAdd)
	}
	cf := st.cfs[e.ColumnFamily]
	if cf == nil {
		return base.CorruptionErrorf("edit for unknown column family %d", e.ColumnFamily)
	}
	if e.ColumnFamilyDrop {
		delete(st.cfs, e.ColumnFamily)
		return nil
	}
	if e.HasComparator {
		cf.comparator = e.ComparatorName
	}
	if e.HasLogNumber {
		cf.logNumber = e.LogNumber
	}
	if e.HasNextFileNumber {
		st.nextFile = e.NextFileNumber
	}
	if e.HasPrevLogNumber {
		st.prevLog = e.PrevLogNumber
	}
	if e.HasLastSequence {
		st.lastSeq = e.LastSequence
	}
	if e.HasMaxColumnFamily {
		st.maxColumnFamily = e.MaxColumnFamily
	}
	if e.HasMinLogNumberToKeep {
		st.minLogToKeep = e.MinLogNumberToKeep
	}
	for _, d := range e.DeletedFiles {
		if d.Level >= ldbLevels {
			return base.CorruptionErrorf("deleted file %d at level %d", d.FileNum, d.Level)
		}
		delete(cf.levels[d.Level], d.FileNum)
	}
	for _, nf := range e.NewFiles {
		if nf.Level >= ldbLevels {
			return base.CorruptionErrorf("new file %d at level %d", nf.Meta.FileNum, nf.Level)
		}
		cf.levels[nf.Level][nf.Meta.FileNum] = nf.Meta
	}
	return nil
}

// files returns a level's files in RocksDB's order: level 0 newest first
// (largest, then smallest sequence number, then file number, descending),
// other levels by smallest internal key, then file number.
// cmp returns the order the family's records name: one given with
// WithComparer (see orderFamilies), a built-in comparer, or bytewise for a
// name the tool does not know (its checks then assume bytewise order).
func (cf *cfState) cmp() *base.Comparer {
	if cf.order != nil {
		return cf.order
	}
	if c := base.BuiltinComparer(cf.comparator); c != nil {
		return c
	}
	return base.DefaultComparer
}

// orderFamilies gives each family of st the comparer given with
// WithComparer under the name its records hold, if any.
func (t *T) orderFamilies(st *manifestState) {
	for _, cf := range st.cfs {
		if c, ok := t.comparers[cf.comparator]; ok {
			cf.order = base.FromKeyComparer(c)
		}
	}
}

func (cf *cfState) files(level int) []*version.FileMetadata {
	fs := make([]*version.FileMetadata, 0, len(cf.levels[level]))
	for _, f := range cf.levels[level] {
		fs = append(fs, f)
	}
	sort.Slice(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if level == 0 {
			if a.LargestSeq != b.LargestSeq {
				return a.LargestSeq > b.LargestSeq
			}
			if a.SmallestSeq != b.SmallestSeq {
				return a.SmallestSeq > b.SmallestSeq
			}
			return a.FileNum > b.FileNum
		}
		if c := cf.cmp().InternalCompare(a.Smallest, b.Smallest); c != 0 {
			return c < 0
		}
		return a.FileNum < b.FileNum
	})
	return fs
}

// debugKey is RocksDB's InternalKey::DebugString.
func debugKey(k base.InternalKey, hex bool) string {
	uk := string(k.UserKey)
	if hex {
		uk = strings.TrimPrefix(toHex(k.UserKey), "0x")
	}
	return fmt.Sprintf("'%s' seq:%d, type:%d", uk, k.SeqNum(), k.Kind())
}

// manifestDump prints the state a MANIFEST describes, as ldb
// manifest_dump: per column family its log number, comparator and the files
// of each of 64 levels, then the counters.
func manifestDump(t *T, c *cmdline) error {
	if err := c.need(1, "FILE"); err != nil {
		return err
	}
	st, err := replayManifest(c.args[0])
	if err != nil {
		return err
	}
	t.orderFamilies(st)
	var b strings.Builder
	ids := make([]uint32, 0, len(st.cfs))
	for id := range st.cfs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		cf := st.cfs[id]
		fmt.Fprintf(&b, "--------------- Column family %q  (ID %d) --------------\n", cf.name, cf.id)
		fmt.Fprintf(&b, "log number: %d\n", cf.logNumber)
		if cf.comparator != "" {
			fmt.Fprintf(&b, "comparator: %s\n", cf.comparator)
		} else {
			b.WriteString("comparator: <NO COMPARATOR>\n")
		}
		for level := 0; level < ldbLevels; level++ {
			fmt.Fprintf(&b, "--- level %d --- version# 1 ---\n", level)
			for _, f := range cf.files(level) {
				fmt.Fprintf(&b, " %d:%d[%d .. %d][%s .. %s]\n", f.FileNum, f.Size, f.SmallestSeq, f.LargestSeq,
					debugKey(f.Smallest, c.hex), debugKey(f.Largest, c.hex))
			}
		}
	}
	// ldb prints one more than the last recorded next file number: its
	// recovery reserves that number before printing.
	fmt.Fprintf(&b, "next_file_number %d last_sequence %d  prev_log_number %d max_column_family %d min_log_number_to_keep %d\n",
		st.nextFile+1, st.lastSeq, st.prevLog, st.maxColumnFamily, st.minLogToKeep)
	_, err = io.WriteString(c.out, b.String())
	return err
}

func init() {
	register("db", "list-column-families", "DIR", dbListColumnFamilies)
}

// currentManifest returns the path of the MANIFEST that dir's CURRENT names.
func currentManifest(dir string) (string, error) {
	if err := checkDB(dir); err != nil {
		return "", err
	}
	cur, err := os.ReadFile(filepath.Join(dir, "CURRENT"))
	if err != nil {
		return "", errors.Wrap(err, "strata")
	}
	name := strings.TrimSuffix(string(cur), "\n")
	if kind, _, ok := base.ParseFilename(name); !ok || kind != base.FileKindManifest {
		return "", base.CorruptionErrorf("%s: CURRENT names %q, not a MANIFEST", dir, name)
	}
	return filepath.Join(dir, name), nil
}

// dbListColumnFamilies prints the column families the MANIFEST records, as
// ldb list_column_families: "Column families in DIR: " then {a, b, ...} by
// ID. It reads only the MANIFEST, so it lists families this engine does not
// open yet.
func dbListColumnFamilies(t *T, c *cmdline) error {
	if err := c.need(1, "DIR"); err != nil {
		return err
	}
	path, err := currentManifest(c.args[0])
	if err != nil {
		return err
	}
	st, err := replayManifest(path)
	if err != nil {
		return err
	}
	t.orderFamilies(st)
	ids := make([]uint32, 0, len(st.cfs))
	for id := range st.cfs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = st.cfs[id].name
	}
	fmt.Fprintf(c.out, "Column families in %s: \n{%s}\n", c.args[0], strings.Join(names, ", "))
	return nil
}
