package stress

// Metamorphic check: one seeded sequence of operations runs, single
// threaded, under several configurations that must not change any answer
// (block size, compression, filters, extractor, write buffer size,
// compaction style, MaxOpenFiles, automatic compactions). Each run writes one
// line per operation; the lines must be identical across configurations.

import (
	"fmt"
	"io"
	"math/rand"
	"sort"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/prefix"
)

// ErrMetamorphic marks runs whose answers differ between configurations.
var ErrMetamorphic = errors.New("stress: configurations disagree")

// MetaVariant is one configuration of a metamorphic run.
type MetaVariant struct {
	Name string
	// Model runs the sequence on a sorted-map model instead of the
	// database: the reference every configuration must also agree with.
	Model                  bool
	BlockSize              int
	Compression            db.Compression
	BloomBits              int
	Extractor              string // prefix.Parse form; "" = none
	WriteBufferSize        int
	FIFO                   bool // FIFO with a limit so large nothing is dropped
	MaxOpenFiles           int
	DisableAutoCompactions bool
	L0Trigger              int
	TargetFileSize         int64
}

func (v MetaVariant) String() string {
	if v.Model {
		return v.Name + "{sorted-map model}"
	}
	style := "level"
	if v.FIFO {
		style = "fifo"
	}
	ext := v.Extractor
	if ext == "" {
		ext = "none"
	}
	return fmt.Sprintf("%s{block=%d compression=%d bloom=%d extractor=%s wbs=%d style=%s max_open_files=%d no_auto=%v l0=%d target=%d}",
		v.Name, v.BlockSize, v.Compression, v.BloomBits, ext, v.WriteBufferSize, style, v.MaxOpenFiles,
		v.DisableAutoCompactions, v.L0Trigger, v.TargetFileSize)
}

// MetaVariants are the configurations every sequence runs under. Strata has
// no readahead option, so that dimension is absent.
var MetaVariants = []MetaVariant{
	{Name: "model", Model: true},
	{Name: "default", BlockSize: 4096, Compression: db.SnappyCompression, BloomBits: 10, Extractor: "fixed:7",
		WriteBufferSize: 64 << 10, MaxOpenFiles: 1000},
	{Name: "tiny", BlockSize: 64, Compression: db.NoCompression, BloomBits: 0, Extractor: "",
		WriteBufferSize: 1 << 10, MaxOpenFiles: 2, L0Trigger: 2, TargetFileSize: 4 << 10},
	{Name: "zstd-fifo", BlockSize: 1024, Compression: db.ZstdCompression, BloomBits: 10, Extractor: "capped:6",
		WriteBufferSize: 4 << 20, FIFO: true, MaxOpenFiles: 100},
	{Name: "noauto", BlockSize: 256, Compression: db.SnappyCompression, BloomBits: 4, Extractor: "fixed:5",
		WriteBufferSize: 2 << 10, MaxOpenFiles: 10, DisableAutoCompactions: true},
	{Name: "fifo-tiny", BlockSize: 128, Compression: db.ZstdCompression, BloomBits: 20, Extractor: "fixed:9",
		WriteBufferSize: 1 << 10, FIFO: true, MaxOpenFiles: 3},
	{Name: "level-small", BlockSize: 512, Compression: db.NoCompression, BloomBits: 10, Extractor: "capped:7",
		WriteBufferSize: 4 << 10, MaxOpenFiles: 5, L0Trigger: 2, TargetFileSize: 8 << 10},
}

// metaExtractors are the extractors the sequence swaps among through
// SetOptions, and the variants start with: prefixes of at most 7 bytes (or
// out of domain), so a PrefixSameAsStart scan kept inside one 7-byte prefix
// by its bounds has the same answer under each.
var metaExtractors = []string{"", "fixed:5", "fixed:6", "fixed:7", "capped:6", "capped:7", "fixed:9"}

type metaKind uint8

const (
	metaPut metaKind = iota
	metaDelete
	metaDelRange
	metaBatch
	metaGet
	metaMultiGet
	metaScan
	metaSnapshot    // take snapshot slot
	metaSnapRelease // release snapshot slot
	metaFlush
	metaCompact
	metaSwap // SetOptions prefix_extractor
	metaReopen
)

const metaSnapSlots = 3

// MetaOp is one operation of a sequence.
type MetaOp struct {
	kind     metaKind
	key      int   // Put, Delete, Get
	lo, hi   int   // DeleteRange, Compact, scan bounds (key indexes); -1 = none
	keys     []int // MultiGet
	batch    []MetaOp
	ver      uint32 // Put
	reverse  bool
	limit    int
	snap     int // read at snapshot slot snap-1; 0 = latest
	prefix   bool
	totalOrd bool
	ext      string
}

func (op *MetaOp) String() string {
	switch op.kind {
	case metaPut:
		return fmt.Sprintf("put %d v%d", op.key, op.ver)
	case metaDelete:
		return fmt.Sprintf("delete %d", op.key)
	case metaDelRange:
		return fmt.Sprintf("delrange [%d,%d)", op.lo, op.hi)
	case metaBatch:
		parts := make([]string, len(op.batch))
		for i := range op.batch {
			parts[i] = op.batch[i].String()
		}
		return "batch{" + strings.Join(parts, "; ") + "}"
	case metaGet:
		return fmt.Sprintf("get %d snap=%d", op.key, op.snap)
	case metaMultiGet:
		return fmt.Sprintf("multiget %v snap=%d", op.keys, op.snap)
	case metaScan:
		return fmt.Sprintf("scan [%d,%d) rev=%v limit=%d prefix=%v total_order=%v snap=%d",
			op.lo, op.hi, op.reverse, op.limit, op.prefix, op.totalOrd, op.snap)
	case metaSnapshot:
		return fmt.Sprintf("snapshot %d", op.snap)
	case metaSnapRelease:
		return fmt.Sprintf("release %d", op.snap)
	case metaFlush:
		return "flush"
	case metaCompact:
		return fmt.Sprintf("compact [%d,%d)", op.lo, op.hi)
	case metaSwap:
		return fmt.Sprintf("set prefix_extractor=%q", op.ext)
	case metaReopen:
		return "reopen"
	}
	return "?"
}

// metaKeys is the key space of a sequence.
const metaKeys = 400

// GenerateMetaOps returns the sequence of n operations for seed.
func GenerateMetaOps(seed int64, n int) []MetaOp {
	rng := rand.New(rand.NewSource(seed))
	var ver uint32
	key := func() int { return rng.Intn(metaKeys) }
	rangeOf := func(maxLen int) (int, int) {
		lo := rng.Intn(metaKeys)
		return lo, lo + rng.Intn(maxLen+1)
	}
	snap := func() int {
		if rng.Intn(4) == 0 {
			return 1 + rng.Intn(metaSnapSlots)
		}
		return 0
	}
	ops := make([]MetaOp, 0, n)
	for len(ops) < n {
		var op MetaOp
		switch p := rng.Intn(1000); {
		case p < 250:
			ver++
			op = MetaOp{kind: metaPut, key: key(), ver: ver}
		case p < 330:
			op = MetaOp{kind: metaDelete, key: key()}
		case p < 360:
			lo, hi := rangeOf(30)
			op = MetaOp{kind: metaDelRange, lo: lo, hi: hi}
		case p < 440:
			op = MetaOp{kind: metaBatch}
			for j := 1 + rng.Intn(6); j > 0; j-- {
				switch q := rng.Intn(10); {
				case q < 6:
					ver++
					op.batch = append(op.batch, MetaOp{kind: metaPut, key: key(), ver: ver})
				case q < 9:
					op.batch = append(op.batch, MetaOp{kind: metaDelete, key: key()})
				default:
					lo, hi := rangeOf(10)
					op.batch = append(op.batch, MetaOp{kind: metaDelRange, lo: lo, hi: hi})
				}
			}
		case p < 600:
			op = MetaOp{kind: metaGet, key: key(), snap: snap()}
		case p < 660:
			op = MetaOp{kind: metaMultiGet, snap: snap()}
			for j := 1 + rng.Intn(8); j > 0; j-- {
				op.keys = append(op.keys, key())
			}
		case p < 740:
			op = MetaOp{kind: metaScan, reverse: rng.Intn(2) == 0, limit: 1 + rng.Intn(20),
				snap: snap(), totalOrd: rng.Intn(3) == 0, lo: -1, hi: -1}
			if rng.Intn(5) != 0 {
				op.lo = rng.Intn(metaKeys)
			}
			if rng.Intn(5) != 0 {
				op.hi = rng.Intn(metaKeys + 1)
			}
		case p < 780:
			// A PrefixSameAsStart scan inside one 7-byte prefix (10 keys).
			g := rng.Intn(metaKeys / 10)
			a, b := rng.Intn(10), rng.Intn(11)
			if a > b {
				a, b = b, a
			}
			op = MetaOp{kind: metaScan, prefix: true, reverse: rng.Intn(2) == 0, limit: 1 + rng.Intn(10),
				snap: snap(), totalOrd: rng.Intn(3) == 0, lo: g*10 + a, hi: g*10 + b}
		case p < 840:
			op = MetaOp{kind: metaSnapshot, snap: 1 + rng.Intn(metaSnapSlots)}
		case p < 870:
			op = MetaOp{kind: metaSnapRelease, snap: 1 + rng.Intn(metaSnapSlots)}
		case p < 920:
			op = MetaOp{kind: metaFlush}
		case p < 950:
			op = MetaOp{kind: metaCompact, lo: -1, hi: -1}
			if rng.Intn(2) == 0 {
				op.lo, op.hi = rangeOf(100)
			}
		case p < 990:
			op = MetaOp{kind: metaSwap, ext: metaExtractors[rng.Intn(len(metaExtractors))]}
		default:
			op = MetaOp{kind: metaReopen}
		}
		ops = append(ops, op)
	}
	return ops
}

// metaRun executes a sequence under one variant.
type metaRun struct {
	v     MetaVariant
	fs    vfs.FS
	d     *db.DB
	ext   string
	snaps [metaSnapSlots]*db.Snapshot
}

func (r *metaRun) open() error {
	o := &db.Options{
		CreateIfMissing:                true,
		FS:                             r.fs,
		BlockSize:                      r.v.BlockSize,
		Compression:                    r.v.Compression,
		BloomBitsPerKey:                r.v.BloomBits,
		WriteBufferSize:                r.v.WriteBufferSize,
		MaxOpenFiles:                   r.v.MaxOpenFiles,
		DisableAutoCompactions:         r.v.DisableAutoCompactions,
		Level0FileNumCompactionTrigger: r.v.L0Trigger,
		TargetFileSizeBase:             r.v.TargetFileSize,
	}
	if r.v.FIFO {
		o.CompactionStyle = db.FIFOCompaction
		o.FIFOMaxTableFilesSize = 1 << 40
	}
	if r.ext != "" {
		e, err := prefix.Parse(r.ext)
		if err != nil {
			return err
		}
		o.PrefixExtractor = e
	}
	d, err := db.Open("/meta", o)
	if err != nil {
		return errors.Wrapf(err, "open (%s)", r.v)
	}
	r.d = d
	return nil
}

func metaKey(i int) []byte { return Key(i) }

// metaValue is the value of key i at version v.
func metaValue(i int, v uint32) []byte { return Value(i, v, 1) }

// fmtResult formats a read result: the value's version, or the error class.
func fmtResult(i int, v []byte, err error) string {
	switch {
	case errors.Is(err, db.ErrNotFound):
		return "-"
	case err != nil:
		return "error: " + err.Error()
	}
	ver, derr := DecodeValue(i, v, 1)
	if derr != nil {
		return "bad value: " + derr.Error()
	}
	return "v" + strconv.FormatUint(uint64(ver), 10)
}

func (r *metaRun) readOpts(op *MetaOp) *db.ReadOptions {
	ro := &db.ReadOptions{TotalOrderSeek: op.totalOrd}
	if op.snap > 0 {
		ro.Snapshot = r.snaps[op.snap-1] // nil: the slot is empty, read the latest
	}
	return ro
}

// step runs one operation and returns its result line.
func (r *metaRun) step(op *MetaOp) (string, error) {
	switch op.kind {
	case metaPut:
		return errString(r.d.Put(metaKey(op.key), metaValue(op.key, op.ver), nil)), nil
	case metaDelete:
		return errString(r.d.Delete(metaKey(op.key), nil)), nil
	case metaDelRange:
		return errString(r.d.DeleteRange(metaKey(op.lo), metaKey(op.hi), nil)), nil
	case metaBatch:
		b := db.NewBatch()
		for _, s := range op.batch {
			switch s.kind {
			case metaPut:
				b.Put(metaKey(s.key), metaValue(s.key, s.ver))
			case metaDelete:
				b.Delete(metaKey(s.key))
			case metaDelRange:
				b.DeleteRange(metaKey(s.lo), metaKey(s.hi))
			}
		}
		return errString(r.d.Write(b, nil)), nil
	case metaGet:
		v, err := r.d.Get(metaKey(op.key), r.readOpts(op))
		return fmtResult(op.key, v, err), nil
	case metaMultiGet:
		keys := make([][]byte, len(op.keys))
		for i, k := range op.keys {
			keys[i] = metaKey(k)
		}
		vals, errs := r.d.MultiGet(keys, r.readOpts(op))
		parts := make([]string, len(keys))
		for i := range keys {
			parts[i] = fmtResult(op.keys[i], vals[i], errs[i])
		}
		return strings.Join(parts, " "), nil
	case metaScan:
		return r.scan(op), nil
	case metaSnapshot:
		if s := r.snaps[op.snap-1]; s != nil {
			s.Release()
		}
		r.snaps[op.snap-1] = r.d.NewSnapshot()
		return "ok", nil
	case metaSnapRelease:
		if s := r.snaps[op.snap-1]; s != nil {
			s.Release()
			r.snaps[op.snap-1] = nil
		}
		return "ok", nil
	case metaFlush:
		return errString(r.d.Flush()), nil
	case metaCompact:
		if op.lo < 0 {
			return errString(r.d.CompactRange(nil, nil)), nil
		}
		return errString(r.d.CompactRange(metaKey(op.lo), metaKey(op.hi))), nil
	case metaSwap:
		err := r.d.SetOptions(map[string]string{"prefix_extractor": op.ext})
		if err == nil {
			r.ext = op.ext
		}
		return errString(err), nil
	case metaReopen:
		r.releaseSnaps()
		if err := r.d.Close(); err != nil {
			return "", errors.Wrap(err, "close")
		}
		r.d = nil
		if err := r.open(); err != nil {
			return "", err
		}
		return "ok", nil
	}
	return "", errors.Newf("unknown op %d", op.kind)
}

func errString(err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}

func (r *metaRun) scan(op *MetaOp) string {
	ro := r.readOpts(op)
	var sb strings.Builder
	if op.prefix {
		// Bound the far side only; the near side is the Seek key. The
		// bounds keep the scan inside one 7-byte prefix.
		ro.PrefixSameAsStart = true
		if op.reverse {
			ro.LowerBound = metaKey(op.lo)
		} else {
			ro.UpperBound = metaKey(op.hi)
		}
	} else {
		if op.lo >= 0 {
			ro.LowerBound = metaKey(op.lo)
		}
		if op.hi >= 0 {
			ro.UpperBound = metaKey(op.hi)
		}
		if op.lo >= 0 && op.hi >= 0 && op.lo > op.hi {
			ro.UpperBound = ro.LowerBound // an empty range
		}
	}
	it := r.d.NewIterator(ro)
	switch {
	case op.prefix && op.lo >= op.hi:
		// Nothing to position on inside the prefix: empty.
	case op.prefix && op.reverse:
		it.SeekForPrev(metaKey(op.hi - 1))
	case op.prefix:
		it.Seek(metaKey(op.lo))
	case op.reverse:
		it.SeekToLast()
	default:
		it.SeekToFirst()
	}
	n := 0
	for ; it.Valid() && n < op.limit; n++ {
		k := it.Key()
		i, err := KeyIndex(k)
		if err != nil {
			fmt.Fprintf(&sb, "bad key %q ", k)
			break
		}
		fmt.Fprintf(&sb, "%d=%s ", i, fmtResult(i, it.Value(), nil))
		if op.reverse {
			it.Prev()
		} else {
			it.Next()
		}
	}
	if err := it.Err(); err != nil {
		fmt.Fprintf(&sb, "error: %v", err)
	}
	if err := it.Close(); err != nil {
		fmt.Fprintf(&sb, "close error: %v", err)
	}
	return strings.TrimSpace(sb.String())
}

func (r *metaRun) releaseSnaps() {
	for i, s := range r.snaps {
		if s != nil {
			s.Release()
			r.snaps[i] = nil
		}
	}
}

// RunMetaVariant runs ops under v on a fresh in-memory file system and
// returns one result line per operation.
func RunMetaVariant(v MetaVariant, ops []MetaOp) ([]string, error) {
	if v.Model {
		return runMetaModel(ops), nil
	}
	r := &metaRun{v: v, fs: vfs.NewMem(), ext: v.Extractor}
	if err := r.open(); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ops))
	for i := range ops {
		line, err := r.step(&ops[i])
		if err != nil {
			if r.d != nil {
				r.releaseSnaps()
				r.d.Close()
			}
			return out, errors.Wrapf(err, "op %d (%s) under %s", i, ops[i].String(), v)
		}
		out = append(out, line)
	}
	r.releaseSnaps()
	if err := r.d.Close(); err != nil {
		return out, errors.Wrap(err, "close")
	}
	return out, nil
}

// MetaConfig is a metamorphic run.
type MetaConfig struct {
	Seed     int64
	Ops      int           // default 2000
	Variants []MetaVariant // nil = MetaVariants
	Log      io.Writer
}

// RunMetamorphic generates the sequence of cfg.Seed, runs it under every
// variant and compares the result lines with the first variant's. The
// first difference is returned as an error marked ErrMetamorphic naming the
// seed, the op, both variants and both results.
func RunMetamorphic(cfg MetaConfig) error {
	if cfg.Ops <= 0 {
		cfg.Ops = 2000
	}
	if cfg.Variants == nil {
		cfg.Variants = MetaVariants
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	ops := GenerateMetaOps(cfg.Seed, cfg.Ops)
	logs := make([][]string, len(cfg.Variants))
	for vi, v := range cfg.Variants {
		out, err := RunMetaVariant(v, ops)
		if err != nil {
			return errors.Wrapf(err, "seed %d", cfg.Seed)
		}
		logs[vi] = out
		if vi > 0 {
			if err := compareMeta(cfg.Seed, ops, cfg.Variants, logs[:vi+1]); err != nil {
				return err
			}
			fmt.Fprintf(cfg.Log, "metamorphic: seed %d: %s agrees on %d ops\n", cfg.Seed, v.Name, len(ops))
		}
	}
	return nil
}

// compareMeta compares each variant's log with the first one's.
func compareMeta(seed int64, ops []MetaOp, variants []MetaVariant, logs [][]string) error {
	for vi := 1; vi < len(logs); vi++ {
		if i, ok := firstDiff(logs[0], logs[vi]); !ok {
			a, b := "(missing)", "(missing)"
			if i < len(logs[0]) {
				a = logs[0][i]
			}
			if i < len(logs[vi]) {
				b = logs[vi][i]
			}
			return errors.Mark(errors.Newf("seed %d: op %d (%s) differs:\n  %s: %s\n  %s: %s",
				seed, i, ops[i].String(), variants[0], a, variants[vi], b), ErrMetamorphic)
		}
	}
	return nil
}

// firstDiff returns the index of the first differing line of two logs.
func firstDiff(a, b []string) (int, bool) {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i, false
		}
	}
	if len(b) > len(a) {
		return len(a), false
	}
	return 0, true
}

// runMetaModel runs a sequence on a sorted-map model of the database and
// returns the lines a correct database prints.
func runMetaModel(ops []MetaOp) []string {
	cur := map[int]uint32{}
	var snaps [metaSnapSlots]map[int]uint32
	var apply func(op *MetaOp)
	apply = func(op *MetaOp) {
		switch op.kind {
		case metaPut:
			cur[op.key] = op.ver
		case metaDelete:
			delete(cur, op.key)
		case metaDelRange:
			for k := range cur {
				if k >= op.lo && k < op.hi {
					delete(cur, k)
				}
			}
		case metaBatch:
			for i := range op.batch {
				apply(&op.batch[i])
			}
		}
	}
	view := func(op *MetaOp) map[int]uint32 {
		if op.snap > 0 && snaps[op.snap-1] != nil {
			return snaps[op.snap-1]
		}
		return cur
	}
	get := func(m map[int]uint32, k int) string {
		if v, ok := m[k]; ok {
			return "v" + strconv.FormatUint(uint64(v), 10)
		}
		return "-"
	}
	out := make([]string, 0, len(ops))
	for i := range ops {
		op := &ops[i]
		line := "ok"
		switch op.kind {
		case metaPut, metaDelete, metaDelRange, metaBatch:
			apply(op)
		case metaGet:
			line = get(view(op), op.key)
		case metaMultiGet:
			m := view(op)
			parts := make([]string, len(op.keys))
			for j, k := range op.keys {
				parts[j] = get(m, k)
			}
			line = strings.Join(parts, " ")
		case metaScan:
			m := view(op)
			lo, hi := op.lo, op.hi
			if lo < 0 {
				lo = 0
			}
			if hi < 0 {
				hi = 1 << 30
			}
			keys := make([]int, 0, len(m))
			for k := range m {
				if k >= lo && k < hi {
					keys = append(keys, k)
				}
			}
			sort.Ints(keys)
			if op.reverse {
				sort.Sort(sort.Reverse(sort.IntSlice(keys)))
			}
			if len(keys) > op.limit {
				keys = keys[:op.limit]
			}
			parts := make([]string, len(keys))
			for j, k := range keys {
				parts[j] = strconv.Itoa(k) + "=" + get(m, k)
			}
			line = strings.Join(parts, " ")
		case metaSnapshot:
			c := make(map[int]uint32, len(cur))
			for k, v := range cur {
				c[k] = v
			}
			snaps[op.snap-1] = c
		case metaSnapRelease:
			snaps[op.snap-1] = nil
		case metaReopen:
			snaps = [metaSnapSlots]map[int]uint32{}
		}
		out = append(out, line)
	}
	return out
}
