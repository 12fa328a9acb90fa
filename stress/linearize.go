package stress

// Linearizability mode: several goroutines issue operations on a small key
// space, each operation is recorded with the time it was called and the time
// it returned, and github.com/anishathalye/porcupine decides whether some
// sequential order of the operations, consistent with those intervals,
// explains every answer under a sequential key-value model. Flushes,
// compactions and SetOptions run concurrently from a background goroutine
// and are not part of the history: they must be invisible.

import (
	"fmt"
	"hash/fnv"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/prefix"
)

// ErrNotLinearizable marks a history porcupine rejected.
var ErrNotLinearizable = errors.New("stress: history is not linearizable")

// KV is the part of the db API the linearizability mode drives. *db.DB
// implements it; tests wrap it to inject bugs the checker must catch.
type KV interface {
	Put(key, value []byte, wo *db.WriteOptions) error
	Delete(key []byte, wo *db.WriteOptions) error
	DeleteRange(start, end []byte, wo *db.WriteOptions) error
	Write(b *db.Batch, wo *db.WriteOptions) error
	Get(key []byte, ro *db.ReadOptions) ([]byte, error)
	MultiGet(keys [][]byte, ro *db.ReadOptions) ([][]byte, []error)
	NewIterator(ro *db.ReadOptions) *db.Iterator
	NewSnapshot() *db.Snapshot
}

// maxLinSlots bounds the key space of one history (Groups*GroupKeys).
const maxLinSlots = 32

// LinConfig is a linearizability run: Histories independent histories,
// each on a fresh database.
type LinConfig struct {
	Seed         int64
	Histories    int // default 30
	Clients      int // goroutines issuing tracked operations; default 4
	OpsPerClient int // default 100
	// The key space is Groups groups of GroupKeys keys; multi-key
	// operations (DeleteRange, Batch, MultiGet, scans) stay inside one
	// group, so histories partition by group (and by key for single-key
	// operations). Keys of group g are Key(g*10+i): with fixed:7 a group
	// is one prefix. Defaults 2 and 4; Groups*GroupKeys <= 32,
	// GroupKeys <= 10.
	Groups, GroupKeys int
	// PointOnly restricts the operations to Put, Delete and Get, so the
	// history partitions by key.
	PointOnly bool
	// Background disables the concurrent Flush/CompactRange/SetOptions
	// goroutine when set to false through NoBackground.
	NoBackground bool
	// CheckTimeout bounds porcupine per history; default 30s. A history it
	// cannot decide in time counts as Unknown, not as a failure.
	CheckTimeout time.Duration
	// VisualizeDir, when set, receives porcupine's HTML visualization of a
	// history that fails the check.
	VisualizeDir string
	// Wrap, when set, wraps the database (tests inject bugs with it).
	Wrap func(*db.DB) KV
	Log  io.Writer
}

func (c LinConfig) withDefaults() LinConfig {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&c.Histories, 30)
	def(&c.Clients, 4)
	def(&c.OpsPerClient, 100)
	def(&c.Groups, 2)
	def(&c.GroupKeys, 4)
	if c.GroupKeys > 10 {
		c.GroupKeys = 10
	}
	if c.Groups*c.GroupKeys > maxLinSlots {
		c.Groups = maxLinSlots / c.GroupKeys
	}
	if c.CheckTimeout <= 0 {
		c.CheckTimeout = 30 * time.Second
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c
}

// LinStats counts what a linearizability run did.
type LinStats struct {
	Histories, Ops, Partitions, Unknown int
	Background                          int64 // untracked Flush/CompactRange/SetOptions calls
	// WithTables counts histories whose database held table files at the
	// end: flushes really ran under the tracked operations.
	WithTables int
	CheckTime  time.Duration
}

func (s LinStats) String() string {
	return fmt.Sprintf("histories=%d ops=%d partitions=%d unknown=%d background=%d with_tables=%d check=%s",
		s.Histories, s.Ops, s.Partitions, s.Unknown, s.Background, s.WithTables, s.CheckTime.Round(time.Millisecond))
}

type linKind uint8

const (
	linPut linKind = iota
	linDelete
	linDelRange
	linBatch
	linGet
	linMultiGet
	linScan
	// linTxn is a transactional read-modify-write: a transaction reads
	// slot with GetForUpdate and writes wslot (same group), retried on
	// ErrConflict; it is one atomic step of the model.
	linTxn
)

// linInput is one tracked operation. Slots number the keys of the history:
// slot g*GroupKeys+i is key index g*10+i.
type linInput struct {
	kind    linKind
	slot    int    // Put, Delete, Get
	val     uint32 // Put: the (unique) version written
	lo, hi  int    // DeleteRange, scan: slots [lo, hi), inside one group
	slots   []int  // MultiGet
	batch   []linInput
	reverse bool   // scan direction
	limit   int    // scan: at most this many entries
	snap    bool   // read through a snapshot taken within the interval
	how     string // scan: how it was positioned (for descriptions)
	wslot   int    // Txn: the slot written (val is the version written)
	txn     db.TransactionOptions
}

// linKV is one entry a scan returned.
type linKV struct {
	slot int
	val  uint32
}

// linOutput is what a read returned; writes return nothing.
type linOutput struct {
	val  uint32 // Get: 0 = not found
	vals []uint32
	scan []linKV
}

// linState is the model's state: the version stored in each slot, 0 for
// absent. An array, so states compare with ==.
type linState [maxLinSlots]uint32

func linApply(s *linState, in *linInput) {
	switch in.kind {
	case linPut:
		s[in.slot] = in.val
	case linDelete:
		s[in.slot] = 0
	case linDelRange:
		for i := in.lo; i < in.hi; i++ {
			s[i] = 0
		}
	case linBatch:
		for i := range in.batch {
			linApply(s, &in.batch[i])
		}
	}
}

// linScanModel is what a scan of [lo, hi) returns in state s.
func linScanModel(s *linState, in *linInput) []linKV {
	var out []linKV
	if in.reverse {
		for i := in.hi - 1; i >= in.lo && len(out) < in.limit; i-- {
			if s[i] != 0 {
				out = append(out, linKV{i, s[i]})
			}
		}
	} else {
		for i := in.lo; i < in.hi && len(out) < in.limit; i++ {
			if s[i] != 0 {
				out = append(out, linKV{i, s[i]})
			}
		}
	}
	return out
}

func linStep(state, input, output interface{}) (bool, interface{}) {
	s := state.(linState)
	in := input.(*linInput)
	switch in.kind {
	case linTxn:
		if s[in.slot] != output.(*linOutput).val {
			return false, s
		}
		s[in.wslot] = in.val
		return true, s
	case linGet:
		return s[in.slot] == output.(*linOutput).val, s
	case linMultiGet:
		out := output.(*linOutput)
		for i, sl := range in.slots {
			if s[sl] != out.vals[i] {
				return false, s
			}
		}
		return true, s
	case linScan:
		want := linScanModel(&s, in)
		got := output.(*linOutput).scan
		if len(want) != len(got) {
			return false, s
		}
		for i := range want {
			if want[i] != got[i] {
				return false, s
			}
		}
		return true, s
	default:
		linApply(&s, in)
		return true, s
	}
}

// linTouched lists the slots an operation reads or writes.
func linTouched(in *linInput, out []int) []int {
	switch in.kind {
	case linPut, linDelete, linGet:
		out = append(out, in.slot)
	case linTxn:
		out = append(out, in.slot, in.wslot)
	case linDelRange, linScan:
		for i := in.lo; i < in.hi; i++ {
			out = append(out, i)
		}
	case linMultiGet:
		out = append(out, in.slots...)
	case linBatch:
		for i := range in.batch {
			out = linTouched(&in.batch[i], out)
		}
	}
	return out
}

// linPartition splits a history into the connected components of "touches
// a common key": each is checked alone (porcupine's P-compositionality).
// With only single-key operations that is one partition per key.
func linPartition(history []porcupine.Operation) [][]porcupine.Operation {
	parent := make([]int, maxLinSlots+1) // the last one collects operations touching nothing
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	var buf []int
	for _, op := range history {
		buf = linTouched(op.Input.(*linInput), buf[:0])
		for j := 1; j < len(buf); j++ {
			parent[find(buf[j])] = find(buf[0])
		}
	}
	parts := map[int][]porcupine.Operation{}
	for _, op := range history {
		buf = linTouched(op.Input.(*linInput), buf[:0])
		root := maxLinSlots
		if len(buf) > 0 {
			root = find(buf[0])
		}
		parts[root] = append(parts[root], op)
	}
	roots := make([]int, 0, len(parts))
	for r := range parts {
		roots = append(roots, r)
	}
	sort.Ints(roots)
	out := make([][]porcupine.Operation, 0, len(roots))
	for _, r := range roots {
		out = append(out, parts[r])
	}
	return out
}

func describeLinInput(in *linInput) string {
	switch in.kind {
	case linTxn:
		return fmt.Sprintf("txn(read %d, put %d=v%d, %+v)", in.slot, in.wslot, in.val, in.txn)
	case linPut:
		return fmt.Sprintf("put(%d, v%d)", in.slot, in.val)
	case linDelete:
		return fmt.Sprintf("delete(%d)", in.slot)
	case linDelRange:
		return fmt.Sprintf("delrange[%d,%d)", in.lo, in.hi)
	case linBatch:
		parts := make([]string, len(in.batch))
		for i := range in.batch {
			parts[i] = describeLinInput(&in.batch[i])
		}
		return "batch{" + strings.Join(parts, " ") + "}"
	case linGet:
		return fmt.Sprintf("get(%d)", in.slot)
	case linMultiGet:
		return fmt.Sprintf("multiget%v snap=%v", in.slots, in.snap)
	case linScan:
		dir := "fwd"
		if in.reverse {
			dir = "rev"
		}
		return fmt.Sprintf("scan[%d,%d) %s limit=%d %s snap=%v", in.lo, in.hi, dir, in.limit, in.how, in.snap)
	}
	return "?"
}

// LinModel is the sequential key-value model porcupine checks against.
var LinModel = porcupine.Model{
	Partition: linPartition,
	Init:      func() interface{} { return linState{} },
	Step:      linStep,
	Hash: func(state interface{}) uint64 {
		s := state.(linState)
		h := fnv.New64a()
		var b [4]byte
		for _, v := range s {
			b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			h.Write(b[:])
		}
		return h.Sum64()
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(*linInput)
		s := describeLinInput(in)
		out, _ := output.(*linOutput)
		if out == nil {
			return s
		}
		switch in.kind {
		case linGet:
			return fmt.Sprintf("%s -> v%d", s, out.val)
		case linMultiGet:
			return fmt.Sprintf("%s -> %v", s, out.vals)
		case linScan:
			return fmt.Sprintf("%s -> %v", s, out.scan)
		}
		return s
	},
	DescribeState: func(state interface{}) string {
		s := state.(linState)
		var parts []string
		for i, v := range s {
			if v != 0 {
				parts = append(parts, fmt.Sprintf("%d:v%d", i, v))
			}
		}
		return "{" + strings.Join(parts, " ") + "}"
	},
}

// linHistory runs one history.
type linHistory struct {
	cfg       LinConfig
	rng       *rand.Rand // generation of each client uses its own
	kv        KV
	start     time.Time
	version   atomic.Uint32
	hadTables bool
}

func (h *linHistory) now() int64 { return int64(time.Since(h.start)) }

func (h *linHistory) keyOf(slot int) []byte {
	g, i := slot/h.cfg.GroupKeys, slot%h.cfg.GroupKeys
	return Key(g*10 + i)
}

// boundOf is the key of the exclusive bound hi (a slot index in the same
// group as lo, possibly one past its last key).
func (h *linHistory) boundOf(lo, hi int) []byte {
	g := lo / h.cfg.GroupKeys
	return Key(g*10 + hi - g*h.cfg.GroupKeys)
}

func (h *linHistory) slotOfKey(k []byte) (int, error) {
	idx, err := KeyIndex(k)
	if err != nil {
		return 0, err
	}
	g, i := idx/10, idx%10
	if g >= h.cfg.Groups || i >= h.cfg.GroupKeys {
		return 0, errors.Newf("key %q is outside the key space", k)
	}
	return g*h.cfg.GroupKeys + i, nil
}

// decode checks a read value and returns its version.
func (h *linHistory) decode(slot int, v []byte) (uint32, error) {
	g, i := slot/h.cfg.GroupKeys, slot%h.cfg.GroupKeys
	return DecodeValue(g*10+i, v, 1)
}

// randRange picks slots [lo, hi) inside one group; nonEmpty makes lo < hi.
func (h *linHistory) randRange(rng *rand.Rand, nonEmpty bool) (lo, hi int) {
	g := rng.Intn(h.cfg.Groups)
	a, b := rng.Intn(h.cfg.GroupKeys+1), rng.Intn(h.cfg.GroupKeys+1)
	if a > b {
		a, b = b, a
	}
	if nonEmpty && a == b {
		if b < h.cfg.GroupKeys {
			b++
		} else {
			a--
		}
	}
	return g*h.cfg.GroupKeys + a, g*h.cfg.GroupKeys + b
}

// genOp picks the next operation of a client.
func (h *linHistory) genOp(rng *rand.Rand) *linInput {
	n := h.cfg.Groups * h.cfg.GroupKeys
	slot := rng.Intn(n)
	p := rng.Intn(100)
	if h.cfg.PointOnly {
		p = p % 60 // Put, Delete, Get only
		switch {
		case p < 25:
			return &linInput{kind: linPut, slot: slot, val: h.version.Add(1)}
		case p < 35:
			return &linInput{kind: linDelete, slot: slot}
		default:
			return &linInput{kind: linGet, slot: slot}
		}
	}
	switch {
	case p < 25:
		return &linInput{kind: linPut, slot: slot, val: h.version.Add(1)}
	case p < 32:
		return &linInput{kind: linDelete, slot: slot}
	case p < 36:
		lo, hi := h.randRange(rng, false)
		return &linInput{kind: linDelRange, lo: lo, hi: hi}
	case p < 46:
		g := rng.Intn(h.cfg.Groups)
		in := &linInput{kind: linBatch}
		for j := 1 + rng.Intn(4); j > 0; j-- {
			s := g*h.cfg.GroupKeys + rng.Intn(h.cfg.GroupKeys)
			switch q := rng.Intn(10); {
			case q < 6:
				in.batch = append(in.batch, linInput{kind: linPut, slot: s, val: h.version.Add(1)})
			case q < 9:
				in.batch = append(in.batch, linInput{kind: linDelete, slot: s})
			default:
				a := g*h.cfg.GroupKeys + rng.Intn(h.cfg.GroupKeys+1)
				b := g*h.cfg.GroupKeys + rng.Intn(h.cfg.GroupKeys+1)
				if a > b {
					a, b = b, a
				}
				in.batch = append(in.batch, linInput{kind: linDelRange, lo: a, hi: b})
			}
		}
		return in
	case p < 66:
		return &linInput{kind: linGet, slot: slot}
	case p < 76:
		g := rng.Intn(h.cfg.Groups)
		in := &linInput{kind: linMultiGet, snap: rng.Intn(4) == 0}
		for j := 1 + rng.Intn(h.cfg.GroupKeys); j > 0; j-- {
			in.slots = append(in.slots, g*h.cfg.GroupKeys+rng.Intn(h.cfg.GroupKeys))
		}
		return in
	case p < 82 && h.txns() != nil:
		g := rng.Intn(h.cfg.Groups)
		return &linInput{kind: linTxn, slot: g*h.cfg.GroupKeys + rng.Intn(h.cfg.GroupKeys),
			wslot: g*h.cfg.GroupKeys + rng.Intn(h.cfg.GroupKeys), val: h.version.Add(1),
			txn: db.TransactionOptions{Isolation: db.Isolation(rng.Intn(2)), Pessimistic: rng.Intn(2) == 0,
				LockTimeout: 50 * time.Millisecond}}
	default:
		lo, hi := h.randRange(rng, true)
		return &linInput{kind: linScan, lo: lo, hi: hi, reverse: rng.Intn(2) == 0,
			limit: 1 + rng.Intn(h.cfg.GroupKeys), snap: rng.Intn(4) == 0, how: []string{"bounds", "seek", "prefix"}[rng.Intn(3)]}
	}
}

// exec performs one operation and fills in its porcupine record.
func (h *linHistory) exec(rng *rand.Rand, client int, in *linInput) (porcupine.Operation, error) {
	op := porcupine.Operation{ClientId: client, Input: in}
	wo := &db.WriteOptions{}
	var err error
	switch in.kind {
	case linPut:
		g, i := in.slot/h.cfg.GroupKeys, in.slot%h.cfg.GroupKeys
		v := Value(g*10+i, in.val, 1)
		k := h.keyOf(in.slot)
		op.Call = h.now()
		err = h.kv.Put(k, v, wo)
		op.Return = h.now()
	case linDelete:
		k := h.keyOf(in.slot)
		op.Call = h.now()
		err = h.kv.Delete(k, wo)
		op.Return = h.now()
	case linDelRange:
		a, b := h.keyOf(in.lo), h.boundOf(in.lo, in.hi)
		op.Call = h.now()
		err = h.kv.DeleteRange(a, b, wo)
		op.Return = h.now()
	case linBatch:
		b := db.NewBatch()
		for _, sub := range in.batch {
			switch sub.kind {
			case linPut:
				g, i := sub.slot/h.cfg.GroupKeys, sub.slot%h.cfg.GroupKeys
				b.Put(h.keyOf(sub.slot), Value(g*10+i, sub.val, 1))
			case linDelete:
				b.Delete(h.keyOf(sub.slot))
			case linDelRange:
				b.DeleteRange(h.keyOf(sub.lo), h.boundOf(sub.lo, sub.hi))
			}
		}
		op.Call = h.now()
		err = h.kv.Write(b, wo)
		op.Return = h.now()
	case linGet:
		k := h.keyOf(in.slot)
		op.Call = h.now()
		v, gerr := h.kv.Get(k, nil)
		op.Return = h.now()
		out := &linOutput{}
		switch {
		case errors.Is(gerr, db.ErrNotFound):
		case gerr != nil:
			err = gerr
		default:
			out.val, err = h.decode(in.slot, v)
		}
		op.Output = out
	case linMultiGet:
		keys := make([][]byte, len(in.slots))
		for i, sl := range in.slots {
			keys[i] = h.keyOf(sl)
		}
		ro := &db.ReadOptions{}
		var snap *db.Snapshot
		op.Call = h.now()
		if in.snap {
			snap = h.kv.NewSnapshot()
			op.Return = h.now()
			ro.Snapshot = snap
			linPause(rng)
		}
		vals, errs := h.kv.MultiGet(keys, ro)
		if !in.snap {
			op.Return = h.now()
		} else {
			snap.Release()
		}
		out := &linOutput{vals: make([]uint32, len(keys))}
		for i := range keys {
			switch {
			case errors.Is(errs[i], db.ErrNotFound):
			case errs[i] != nil:
				err = errs[i]
			default:
				var derr error
				out.vals[i], derr = h.decode(in.slots[i], vals[i])
				if derr != nil {
					err = derr
				}
			}
		}
		op.Output = out
	case linScan:
		var out *linOutput
		out, err = h.scan(rng, in, &op)
		op.Output = out
	case linTxn:
		op.Call = h.now()
		var out *linOutput
		out, err = h.txnRMW(in)
		op.Return = h.now()
		if err == nil && out == nil {
			return op, errLinSkip // never committed: no effect to check
		}
		op.Output = out
	}
	if err != nil {
		return op, errors.Wrapf(err, "client %d: %s", client, describeLinInput(in))
	}
	if op.Output == nil {
		op.Output = (*linOutput)(nil)
	}
	return op, nil
}

// errLinSkip marks an operation that had no effect (a transaction that
// conflicted on every try): the history leaves it out.
var errLinSkip = errors.New("stress: operation had no effect")

// linTxnDB is what a KV offers for transactions (*db.DB does; wrappers
// may not, and then the mode issues none).
type linTxnDB interface {
	NewTransaction(opts *db.TransactionOptions) *db.Transaction
}

func (h *linHistory) txns() linTxnDB {
	t, _ := h.kv.(linTxnDB)
	return t
}

// txnRMW runs in's transaction until it commits, up to a bound; the
// output is the version it read. nil output: every try conflicted.
func (h *linHistory) txnRMW(in *linInput) (*linOutput, error) {
	g, i := in.wslot/h.cfg.GroupKeys, in.wslot%h.cfg.GroupKeys
	v := Value(g*10+i, in.val, 1)
	for try := 0; try < 20; try++ {
		opts := in.txn
		t := h.txns().NewTransaction(&opts)
		out := &linOutput{}
		got, err := t.GetForUpdate(h.keyOf(in.slot))
		switch {
		case errors.Is(err, db.ErrNotFound):
			err = nil
		case err == nil:
			out.val, err = h.decode(in.slot, got)
		}
		if err == nil {
			err = t.Put(h.keyOf(in.wslot), v)
		}
		if err == nil {
			err = t.Commit()
		} else {
			_ = t.Rollback()
		}
		switch {
		case err == nil:
			return out, nil
		case errors.Is(err, db.ErrConflict):
			continue // a failed Commit or lock wait leaves no trace
		default:
			return nil, err
		}
	}
	return nil, nil
}

// linPause lets other goroutines run between taking a snapshot and reading
// through it, so writes, flushes and compactions happen in between.
func linPause(rng *rand.Rand) {
	for i := rng.Intn(4); i >= 0; i-- {
		runtime.Gosched()
	}
	if rng.Intn(3) == 0 {
		time.Sleep(time.Duration(rng.Intn(200)) * time.Microsecond)
	}
}

func (h *linHistory) scan(rng *rand.Rand, in *linInput, op *porcupine.Operation) (*linOutput, error) {
	lo, hi := h.keyOf(in.lo), h.boundOf(in.lo, in.hi)
	ro := &db.ReadOptions{TotalOrderSeek: rng.Intn(3) == 0}
	switch in.how {
	case "bounds":
		ro.LowerBound, ro.UpperBound = lo, hi
	case "seek", "prefix":
		// Position with Seek/SeekForPrev and bound only the far side.
		// With PrefixSameAsStart the prefix (at most 7 bytes, or out of
		// domain) covers the whole group, so the answer is the same.
		if in.reverse {
			ro.LowerBound = lo
		} else {
			ro.UpperBound = hi
		}
		ro.PrefixSameAsStart = in.how == "prefix"
	}
	var snap *db.Snapshot
	op.Call = h.now()
	if in.snap {
		snap = h.kv.NewSnapshot()
		op.Return = h.now()
		ro.Snapshot = snap
		defer snap.Release()
		linPause(rng)
	}
	it := h.kv.NewIterator(ro)
	out := &linOutput{}
	var err error
	if in.lo < in.hi {
		switch {
		case in.how == "bounds" && in.reverse:
			it.SeekToLast()
		case in.how == "bounds":
			it.SeekToFirst()
		case in.reverse:
			// The last key of the range: hi is exclusive.
			last := h.keyOf(in.hi - 1)
			it.SeekForPrev(last)
		default:
			it.Seek(lo)
		}
		for it.Valid() && len(out.scan) < in.limit {
			k := it.Key()
			sl, kerr := h.slotOfKey(k)
			if kerr != nil {
				err = kerr
				break
			}
			if sl < in.lo || sl >= in.hi {
				err = errors.Newf("scan returned key %q outside its bounds", k)
				break
			}
			v, derr := h.decode(sl, it.Value())
			if derr != nil {
				err = errors.Wrapf(derr, "key %q", k)
				break
			}
			out.scan = append(out.scan, linKV{sl, v})
			if in.reverse {
				it.Prev()
			} else {
				it.Next()
			}
		}
	}
	if ierr := it.Err(); ierr != nil && err == nil {
		err = ierr
	}
	if cerr := it.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if !in.snap {
		op.Return = h.now()
	}
	return out, err
}

// linExtractors are the extractors the background goroutine swaps among.
// Their prefixes of the 8-byte keys are at most 7 bytes or out of domain, so
// a PrefixSameAsStart scan within a group (one 7-byte prefix) has the same
// answer under each.
var linExtractors = []string{"", "nullptr", "fixed:5", "fixed:6", "fixed:7", "capped:6", "capped:7", "fixed:9"}

// background runs untracked Flush, CompactRange and SetOptions until stop
// is closed; it returns the number of calls and the first error.
func linBackground(d *db.DB, rng *rand.Rand, stop <-chan struct{}, groups int) (int64, error) {
	var n int64
	for {
		select {
		case <-stop:
			return n, nil
		default:
		}
		var err error
		switch p := rng.Intn(10); {
		case p < 3:
			err = d.Flush()
		case p < 5:
			if rng.Intn(2) == 0 {
				err = d.CompactRange(nil, nil)
			} else {
				g := rng.Intn(groups)
				err = d.CompactRange(Key(g*10), Key(g*10+10))
			}
		case p < 8:
			err = d.SetOptions(map[string]string{"prefix_extractor": linExtractors[rng.Intn(len(linExtractors))]})
		case p < 9:
			err = d.SetOptions(map[string]string{"write_buffer_size": strconv.Itoa(512 << rng.Intn(6))})
		default:
			err = d.SetOptions(map[string]string{"disable_auto_compactions": strconv.FormatBool(rng.Intn(3) == 0)})
		}
		n++
		if err != nil {
			return n, errors.Wrap(err, "background")
		}
		time.Sleep(time.Duration(rng.Intn(300)) * time.Microsecond)
	}
}

func linOptions(rng *rand.Rand) *db.Options {
	o := &db.Options{
		CreateIfMissing:                true,
		FS:                             vfs.NewMem(),
		WriteBufferSize:                512 << rng.Intn(4),
		BloomBitsPerKey:                []int{0, 10}[rng.Intn(2)],
		Compression:                    db.Compression(rng.Intn(3)),
		MaxOpenFiles:                   []int{2, 1000}[rng.Intn(2)],
		BlockSize:                      []int{64, 4096}[rng.Intn(2)],
		Level0FileNumCompactionTrigger: 2,
	}
	if e := linExtractors[rng.Intn(len(linExtractors))]; e != "" && e != "nullptr" {
		o.PrefixExtractor, _ = prefix.Parse(e)
	}
	if rng.Intn(4) == 0 {
		o.CompactionStyle = db.FIFOCompaction
		o.FIFOMaxTableFilesSize = 1 << 40 // never drops anything
	}
	return o
}

// runOne runs history number n and returns its operations.
func (h *linHistory) runOne(seed int64) ([]porcupine.Operation, int64, error) {
	rng := rand.New(rand.NewSource(seed))
	opts := linOptions(rng)
	d, err := db.Open("/lin", opts)
	if err != nil {
		return nil, 0, errors.Wrap(err, "open")
	}
	defer d.Close()
	h.kv = d
	if h.cfg.Wrap != nil {
		h.kv = h.cfg.Wrap(d)
	}
	h.start = time.Now()
	stop := make(chan struct{})
	bgDone := make(chan struct{})
	var bgN int64
	var bgErr error
	if !h.cfg.NoBackground {
		bgRng := rand.New(rand.NewSource(seed ^ 0x5bd1e995))
		go func() {
			defer close(bgDone)
			bgN, bgErr = linBackground(d, bgRng, stop, h.cfg.Groups)
		}()
	} else {
		close(bgDone)
	}
	type result struct {
		ops []porcupine.Operation
		err error
	}
	results := make(chan result, h.cfg.Clients)
	for c := 0; c < h.cfg.Clients; c++ {
		crng := rand.New(rand.NewSource(seed*31 + int64(c) + 1))
		go func(c int) {
			var r result
			for i := 0; i < h.cfg.OpsPerClient; i++ {
				op, err := h.exec(crng, c, h.genOp(crng))
				if errors.Is(err, errLinSkip) {
					continue
				}
				if err != nil {
					r.err = err
					break
				}
				r.ops = append(r.ops, op)
			}
			results <- r
		}(c)
	}
	var history []porcupine.Operation
	var firstErr error
	for c := 0; c < h.cfg.Clients; c++ {
		r := <-results
		history = append(history, r.ops...)
		if r.err != nil && firstErr == nil {
			firstErr = r.err
		}
	}
	close(stop)
	<-bgDone
	if firstErr == nil {
		firstErr = bgErr
	}
	if v, ok := d.GetProperty(db.PropTotalSSTFilesSize); ok && v != "0" {
		h.hadTables = true
	}
	return history, bgN, firstErr
}

// CheckHistory checks a history with porcupine against LinModel. It
// returns Illegal, Ok or Unknown (timed out), and writes the visualization
// to visualize (when not "") if the history is illegal.
func CheckHistory(history []porcupine.Operation, timeout time.Duration, visualize string) (porcupine.CheckResult, error) {
	res, info := porcupine.CheckOperationsVerbose(LinModel, history, timeout)
	if res == porcupine.Illegal && visualize != "" {
		if err := porcupine.VisualizePath(LinModel, info, visualize); err != nil {
			return res, err
		}
		if err := writeIllegalPartitions(history, timeout, strings.TrimSuffix(visualize, ".html")+".txt"); err != nil {
			return res, err
		}
	}
	return res, nil
}

// writeIllegalPartitions writes, as text, each partition of history that
// porcupine rejects, its operations in call order with their intervals.
func writeIllegalPartitions(history []porcupine.Operation, timeout time.Duration, path string) error {
	var b strings.Builder
	for pi, part := range linPartition(history) {
		if porcupine.CheckOperationsTimeout(LinModel, part, timeout) != porcupine.Illegal {
			continue
		}
		ops := append([]porcupine.Operation(nil), part...)
		sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
		fmt.Fprintf(&b, "partition %d (%d ops) is not linearizable; times in ns from the start\n", pi, len(ops))
		for _, op := range ops {
			fmt.Fprintf(&b, "client %d [%d, %d] %s\n", op.ClientId, op.Call, op.Return,
				LinModel.DescribeOperation(op.Input, op.Output))
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// RunLinearize runs cfg.Histories histories and checks each. It returns an
// error marked ErrNotLinearizable for the first illegal history (naming the
// seed that reproduces it), another error for a failure to run.
func RunLinearize(cfg LinConfig) (LinStats, error) {
	cfg = cfg.withDefaults()
	var st LinStats
	for n := 0; n < cfg.Histories; n++ {
		seed := cfg.Seed*1000003 + int64(n)
		h := &linHistory{cfg: cfg}
		history, bg, err := h.runOne(seed)
		st.Background += bg
		if err != nil {
			return st, errors.Wrapf(err, "history %d (seed %d, history seed %d)", n, cfg.Seed, seed)
		}
		st.Histories++
		if h.hadTables {
			st.WithTables++
		}
		st.Ops += len(history)
		st.Partitions += len(linPartition(history))
		vis := ""
		if cfg.VisualizeDir != "" {
			vis = filepath.Join(cfg.VisualizeDir, fmt.Sprintf("linearize-%d-%d.html", cfg.Seed, n))
		}
		t0 := time.Now()
		res, verr := CheckHistory(history, cfg.CheckTimeout, vis)
		st.CheckTime += time.Since(t0)
		switch res {
		case porcupine.Illegal:
			msg := ""
			if vis != "" {
				msg = "; visualization in " + vis
				if verr != nil {
					msg = fmt.Sprintf("; visualization failed: %v", verr)
				}
			}
			err := errors.Mark(errors.Newf("history %d of seed %d (history seed %d, %d ops) is not linearizable%s",
				n, cfg.Seed, seed, len(history), msg), ErrNotLinearizable)
			fmt.Fprintf(cfg.Log, "FAILURE: %v\n", err)
			return st, err
		case porcupine.Unknown:
			st.Unknown++
			fmt.Fprintf(cfg.Log, "history %d (seed %d): porcupine timed out after %s\n", n, seed, cfg.CheckTimeout)
		}
		if (n+1)%100 == 0 {
			fmt.Fprintf(cfg.Log, "linearize: %s\n", st)
		}
	}
	return st, nil
}
