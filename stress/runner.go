package stress

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/prefix"
)

// ErrWrongAnswer is the class of every failure the oracle finds.
var ErrWrongAnswer = errors.New("stress: wrong answer")

// extractorChoices are the prefix_extractor values SetOptions and reopen
// pick from: compatible and incompatible ones, and none.
var extractorChoices = []string{"", "fixed:5", "fixed:6", "fixed:7", "capped:6", "capped:7", "noop", "fixed:9"}

// Stats counts what a run did.
type Stats struct {
	Ops, Reads, Writes, Iters, Snapshots, Flushes, Compactions, SetOptions,
	Swaps, Reopens, Errors, Images atomic.Int64
	Merges, SingleDeletes, Ingests, Checkpoints, Refreshes atomic.Int64
	CrossBatches, Churns                                   atomic.Int64
	ClockSteps                                             atomic.Int64
	// Under a filter or TTL: reads that found a value the filter changed,
	// and reads that found nothing where only the filter or TTL allows it.
	ReadChanged, ReadGone atomic.Int64
}

func (s *Stats) String() string {
	return fmt.Sprintf("ops=%d reads=%d writes=%d iters=%d snapshots=%d flushes=%d compactions=%d setoptions=%d swaps=%d reopens=%d errors=%d images=%d",
		s.Ops.Load(), s.Reads.Load(), s.Writes.Load(), s.Iters.Load(), s.Snapshots.Load(), s.Flushes.Load(),
		s.Compactions.Load(), s.SetOptions.Load(), s.Swaps.Load(), s.Reopens.Load(), s.Errors.Load(), s.Images.Load()) +
		fmt.Sprintf(" merges=%d single_deletes=%d ingests=%d checkpoints=%d refreshes=%d",
			s.Merges.Load(), s.SingleDeletes.Load(), s.Ingests.Load(), s.Checkpoints.Load(), s.Refreshes.Load()) +
		fmt.Sprintf(" cross_family_batches=%d cf_churns=%d clock_steps=%d read_changed=%d read_gone=%d",
			s.CrossBatches.Load(), s.Churns.Load(), s.ClockSteps.Load(), s.ReadChanged.Load(), s.ReadGone.Load())
}

// Runner drives one stress run.
type Runner struct {
	cfg    Config
	oracle *Oracle
	Stats  Stats

	// mu: operations hold it shared; reopen and extractor swaps hold it
	// exclusively, so an operation knows the DB and extractor in force.
	mu      sync.RWMutex
	d       *db.DB
	ext     string // current extractor spec of the default family, "" = none
	dbGen   int
	options *db.Options

	// The column families, by slot: names[f] is the family of key indexes
	// [f*MaxKey, (f+1)*MaxKey), cfs[f] its handle in d, cfExt[f] its
	// extractor (slot 0: ext), slotGen[f] counts the drops of slot f (a
	// snapshot's saved states of a dropped family no longer apply).
	// Guarded by mu as d is.
	names    []string
	cfs      []*db.ColumnFamily
	cfExt    []string
	slotGen  []int
	nextName int

	// order is the DB's key order over each family's key indexes
	// (Config.Compare).
	order keyOrder

	failOnce sync.Once
	failErr  error
	failed   atomic.Bool
	opCount  atomic.Int64
	faults   *faultInjector
}

// NewRunner prepares a run; Run opens the DB.
func NewRunner(cfg Config) *Runner {
	cfg = cfg.WithDefaults()
	r := &Runner{cfg: cfg, order: newKeyOrder(cfg.MaxKey, cfg.Compare)}
	if cfg.PrefixSize > 0 {
		r.ext = "fixed:" + strconv.Itoa(cfg.PrefixSize)
	}
	for f := 0; f < cfg.ColumnFamilies; f++ {
		name := "default"
		if f > 0 {
			name = "cf" + strconv.Itoa(f)
		}
		r.names = append(r.names, name)
		r.cfExt = append(r.cfExt, r.ext)
		r.slotGen = append(r.slotGen, 0)
	}
	r.nextName = cfg.ColumnFamilies
	return r
}

// Oracle returns the run's oracle (after Run).
func (r *Runner) Oracle() *Oracle { return r.oracle }

// fail records the first wrong answer and stops the run.
func (r *Runner) fail(err error) {
	r.failOnce.Do(func() {
		r.failErr = errors.Mark(errors.Wrapf(err, "seed %d", r.cfg.Seed), ErrWrongAnswer)
		r.failed.Store(true)
		fmt.Fprintf(r.cfg.Log, "FAILURE: %v\n", r.failErr)
	})
}

func (r *Runner) dbOptions(ext string) (*db.Options, error) {
	o := &db.Options{
		CreateIfMissing:   true,
		WriteBufferSize:   r.cfg.WriteBufferSize,
		BloomBitsPerKey:   r.cfg.BloomBits,
		RecycleLogFileNum: r.cfg.RecycleLogFileNum,
		Compression:       r.cfg.Compression,
		FS:                r.cfg.FS,
		MergeOperator:     ConcatMergeOperator{},

		LevelCompactionDynamicLevelBytes:                 r.cfg.DynamicLevelBytes,
		MaxBytesForLevelBase:                             r.cfg.MaxBytesForLevelBase,
		MaxSubcompactions:                                r.cfg.Subcompactions,
		DisableConcurrentMemtableWrites:                  r.cfg.DisableConcurrentMemtableWrites,
		AllowMmapReads:                                   r.cfg.AllowMmapReads,
		CacheIndexAndFilterBlocks:                        r.cfg.CacheIndexAndFilterBlocks,
		DisableCacheIndexAndFilterBlocksWithHighPriority: r.cfg.DisableCacheIndexAndFilterBlocksWithHighPriority,
		HighPriPoolRatio:                                 r.cfg.HighPriPoolRatio,
		BlockCacheSize:                                   r.cfg.BlockCacheSize,
		TTL:                                              r.cfg.TTL,
		Comparer:                                         r.cfg.comparer(),
	}
	if r.cfg.Filter {
		o.CompactionFilter = Filter{OnFlush: r.cfg.Seed%2 != 0}
	}
	if r.cfg.TTL > 0 {
		o.Clock = r.oracle.Now
	}
	if r.cfg.Subcompactions > 1 {
		// A compaction is split into at most one range per 80% of the
		// target file size of input: at the default 64 MiB the stress
		// database's compactions would never split.
		o.TargetFileSizeBase = 32 << 10
	}
	if r.cfg.PartitionIndexAndFilters {
		o.IndexType, o.PartitionFilters, o.MetadataBlockSize = db.IndexTwoLevelSearch, true, 256
	}
	if r.cfg.BlobFiles {
		o.EnableBlobFiles, o.MinBlobSize, o.BlobFileSize = true, r.cfg.MinBlobSize, 16<<10
		o.EnableBlobGarbageCollection = true
		o.BlobGarbageCollectionAgeCutoff, o.BlobGarbageCollectionForceThreshold = 0.5, 0.5
	}
	if r.cfg.FIFO {
		o.CompactionStyle = db.FIFOCompaction
		o.FIFOMaxTableFilesSize = 256 << 10
	}
	if r.faults != nil {
		o.FS = r.faults.fs
	}
	if ext != "" {
		e, err := prefix.Parse(ext)
		if err != nil {
			return nil, err
		}
		o.PrefixExtractor = e
	}
	if len(r.names) > 1 {
		o.ColumnFamilies = map[string]*db.ColumnFamilyOptions{}
		o.CreateMissingColumnFamilies = true
		for f, name := range r.names[1:] {
			co, err := r.cfOptions(o, r.cfExt[f+1])
			if err != nil {
				return nil, err
			}
			o.ColumnFamilies[name] = co
		}
	}
	return o, nil
}

// cfOptions returns the options of a non-default family: the default
// family's (o) with extractor ext.
func (r *Runner) cfOptions(o *db.Options, ext string) (*db.ColumnFamilyOptions, error) {
	co := &db.ColumnFamilyOptions{
		WriteBufferSize:                  o.WriteBufferSize,
		BloomBitsPerKey:                  o.BloomBitsPerKey,
		Compression:                      o.Compression,
		CompactionStyle:                  o.CompactionStyle,
		FIFOMaxTableFilesSize:            o.FIFOMaxTableFilesSize,
		MergeOperator:                    o.MergeOperator,
		IndexType:                        o.IndexType,
		PartitionFilters:                 o.PartitionFilters,
		MetadataBlockSize:                o.MetadataBlockSize,
		MaxBytesForLevelBase:             o.MaxBytesForLevelBase,
		TargetFileSizeBase:               o.TargetFileSizeBase,
		LevelCompactionDynamicLevelBytes: o.LevelCompactionDynamicLevelBytes,
		CompactionFilter:                 o.CompactionFilter,
		TTL:                              o.TTL,
		Comparer:                         o.Comparer,

		EnableBlobFiles:                     o.EnableBlobFiles,
		MinBlobSize:                         o.MinBlobSize,
		BlobFileSize:                        o.BlobFileSize,
		EnableBlobGarbageCollection:         o.EnableBlobGarbageCollection,
		BlobGarbageCollectionAgeCutoff:      o.BlobGarbageCollectionAgeCutoff,
		BlobGarbageCollectionForceThreshold: o.BlobGarbageCollectionForceThreshold,
	}
	if ext != "" {
		e, err := prefix.Parse(ext)
		if err != nil {
			return nil, err
		}
		co.PrefixExtractor = e
	}
	return co, nil
}

// handles returns d's handles of the families names, by slot.
func handles(d *db.DB, names []string) ([]*db.ColumnFamily, error) {
	cfs := make([]*db.ColumnFamily, len(names))
	for f, name := range names {
		if cfs[f] = d.ColumnFamily(name); cfs[f] == nil {
			return nil, errors.Newf("column family %q missing after open", name)
		}
	}
	return cfs, nil
}

// cfOf returns the family of key index i; key returns its key there.
func (r *Runner) cfOf(i int) *db.ColumnFamily { return r.cfs[i/r.cfg.MaxKey] }
func (r *Runner) key(i int) []byte            { return Key(i % r.cfg.MaxKey) }

func (r *Runner) openLocked() error {
	o, err := r.dbOptions(r.ext)
	if err != nil {
		return err
	}
	d, err := db.Open(r.cfg.Dir, o)
	if err != nil {
		return errors.Wrapf(err, "open %s", r.cfg.Dir)
	}
	cfs, err := handles(d, r.names)
	if err != nil {
		d.Close()
		return err
	}
	r.d, r.options, r.cfs = d, o, cfs
	r.dbGen++
	return nil
}

// Run opens the DB, verifies it against the oracle (loaded from
// ExpectedLog if set), runs the operations and verifies again after a
// final reopen. It returns an error marked ErrWrongAnswer for a wrong
// answer, another error for a failure to run.
func (r *Runner) Run() error {
	cfg := r.cfg
	var inflight []InFlight
	if cfg.ExpectedLog != "" {
		o, inf, err := LoadOracle(cfg.ExpectedLog, cfg.MaxKey*cfg.ColumnFamilies)
		if err != nil {
			return err
		}
		r.oracle, inflight = o, inf
	} else {
		r.oracle = NewOracle(cfg.MaxKey * cfg.ColumnFamilies)
	}
	r.oracle.SetRules(Rules{Filter: cfg.Filter, TTL: int64(cfg.TTL / time.Second)})
	if cfg.FaultOneIn > 0 {
		r.faults = newFaultInjector(cfg.FS, cfg.Seed, cfg.FaultOneIn)
	}
	if err := r.openLocked(); err != nil {
		return err
	}
	if err := r.verifyAll(inflight); err != nil {
		r.fail(err)
		r.d.Close()
		return r.failErr
	}
	if cfg.ExpectedLog != "" {
		if err := r.oracle.Persist(cfg.ExpectedLog); err != nil {
			return err
		}
		defer r.oracle.CloseLog()
	}
	if r.faults != nil {
		r.faults.enable(true)
	}
	var deadline time.Time
	if cfg.Duration > 0 {
		deadline = time.Now().Add(cfg.Duration)
	}
	if cfg.ExpectedLog != "" {
		// A crash-mode child is killed at any time: it reports its counts
		// as it goes, for the driver (CrashStats.ChildOps).
		stop, done := make(chan struct{}), make(chan struct{})
		defer func() { close(stop); <-done }() // no write to cfg.Log after Run returns
		go func() {
			defer close(done)
			tk := time.NewTicker(100 * time.Millisecond)
			defer tk.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tk.C:
					fmt.Fprintf(cfg.Log, "stress-progress %s\n", &r.Stats)
				}
			}
		}()
	}
	var wg sync.WaitGroup
	for t := 0; t < cfg.Threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			th := &thread{r: r, rng: rand.New(rand.NewSource(cfg.Seed*1000003 + int64(t))), id: t}
			th.run(deadline)
		}(t)
	}
	wg.Wait()
	if r.faults != nil {
		r.faults.enable(false)
	}
	if r.failed.Load() {
		r.d.Close()
		return r.failErr
	}
	// A clean close and reopen must keep every acknowledged write.
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.reopenLocked(r.ext); err != nil {
		return err
	}
	err := r.verifyAll(nil)
	if cerr := r.d.Close(); cerr != nil && err == nil && r.faults == nil {
		return errors.Wrap(cerr, "close")
	}
	if err != nil {
		r.fail(err)
		return r.failErr
	}
	return nil
}

// reopenLocked closes the DB and opens it with extractor ext. r.mu is held
// exclusively. With faults, the injection is off around it and a failed
// close is expected.
func (r *Runner) reopenLocked(ext string) error {
	if r.faults != nil {
		was := r.faults.enable(false)
		defer r.faults.enable(was)
	}
	if err := r.d.Close(); err != nil && r.faults == nil {
		return errors.Wrap(err, "close before reopen")
	}
	r.ext = ext
	r.cfExt[0] = ext
	r.Stats.Reopens.Add(1)
	return r.openLocked()
}

// verifyAll reads every key with no writes running and checks it exactly,
// then collapses uncertain keys to what was read. inflight (crash mode) are
// the writes that were in flight at the crash: each must be applied
// entirely or not at all.
func (r *Runner) verifyAll(inflight []InFlight) error {
	n := r.oracle.N()
	found := make([]bool, n)
	vers := make([]uint32, n)
	for i := 0; i < n; i++ {
		s := r.oracle.State(i)
		v, err := r.cfOf(i).Get(r.key(i), nil)
		switch {
		case errors.Is(err, db.ErrNotFound):
		case err != nil:
			return errors.Wrapf(err, "verify: get %s", Key(i))
		default:
			found[i] = true
			if r.oracle.rules.on() {
				vers[i], _, _ = decodeFiltered(i, v, r.cfg.ValueSizeMult)
			} else if vs, _ := DecodeValues(i, v, r.cfg.ValueSizeMult); len(vs) > 0 {
				vers[i] = vs[len(vs)-1]
			}
		}
		if r.cfg.DisableWAL {
			// Only structural checks: a present value must be one that was
			// written for this key.
			if found[i] {
				if _, _, err := decodeFiltered(i, v, r.cfg.ValueSizeMult); err != nil || vers[i] > s.Next {
					return errors.Newf("verify (disable_wal): key %s: bad value (version %d, highest written %d): %v", Key(i), vers[i], s.Next, err)
				}
			}
			continue
		}
		if err := r.check(i, s, s, found[i], v, r.cfg.ValueSizeMult); err != nil {
			return errors.Wrap(err, "verify after open")
		}
	}
	if !r.cfg.DisableWAL {
		for _, f := range inflight {
			if err := checkAtomic(f, found, vers, r.oracle.rules.on()); err != nil {
				return err
			}
		}
	}
	for i := 0; i < n; i++ {
		if !found[i] && !r.cfg.DisableWAL {
			if s := r.oracle.State(i); r.oracle.GoneByRules(i, s, s) {
				// Perhaps absent by the filter or TTL, not by a delete
				// of the window that was applied: the state stays as it
				// is. (Collapsing to the delete would refuse the put an
				// IncludeExpired read still finds, expired but not yet
				// compacted away.)
				continue
			}
		}
		// With DisableWAL a crash may lose writes: what was read becomes
		// the expected state either way.
		r.oracle.Resolve(i, found[i], vers[i])
	}
	return nil
}

// check is CheckRead, except that with FIFO compaction, which drops the
// oldest table files, any key may be absent: only a value that is read must
// be one the oracle allows.
func (r *Runner) check(i int, pre, post KeyState, found bool, value []byte, mult int) error {
	if !found && r.cfg.FIFO {
		return nil
	}
	var err error
	if r.oracle.rules.on() {
		err = r.oracle.CheckFiltered(i, pre, post, found, value, mult, false)
		switch {
		case err != nil:
		case found && value[0]&changedBit != 0:
			r.Stats.ReadChanged.Add(1)
		case !found && !MayBeAbsent(pre, post):
			r.Stats.ReadGone.Add(1)
		}
	} else if !found || r.cfg.FIFO {
		err = CheckRead(i, pre, post, found, value, mult)
	} else {
		err = r.oracle.CheckMerged(i, pre, post, value, mult)
	}
	if err != nil {
		err = errors.Wrapf(err, "%s", r.oracle.HistoryString(i))
	}
	return err
}

// checkAtomic checks that a write that was in flight at a crash is applied
// to all its keys or to none.
// Under a filter or TTL an absent key tells nothing (its put may have
// been removed or have expired).
func checkAtomic(f InFlight, found []bool, vers []uint32, filtered bool) error {
	if len(f.Writes) < 2 {
		return nil
	}
	applied := map[bool][]string{}
	for j, w := range f.Writes {
		prev := f.Prev[j]
		var a, known bool
		switch {
		case !w.Del && found[w.Key] && vers[w.Key] == w.Version:
			a, known = true, true
		case filtered && !found[w.Key]:
		case !w.Del:
			a, known = false, true
		case w.Del && found[w.Key]:
			a, known = false, true
		case w.Del && !found[w.Key] && prev.LastDel < prev.Lo:
			a, known = true, true // it was present before the delete
		}
		if known {
			applied[a] = append(applied[a], string(Key(w.Key)))
		}
	}
	if len(applied[true]) > 0 && len(applied[false]) > 0 {
		return errors.Newf("torn write (op %d in flight at the crash): applied to %v, not to %v", f.Op, applied[true], applied[false])
	}
	return nil
}

// thread is one goroutine of the run.
type thread struct {
	r     *Runner
	rng   *rand.Rand
	id    int
	snaps []heldSnapshot
	// fam is the family of the current operation, base its first key
	// index (fam*MaxKey).
	fam, base int
}

type heldSnapshot struct {
	snap         *db.Snapshot
	gen          int
	fam, slotGen int
	lo, hi       int // positions, in family fam
	states       []KeyState
	seen         []snapRead // under a filter or TTL: what it read when taken
}

// setFam makes f the family of the operation.
func (t *thread) setFam(f int) { t.fam, t.base = f, f*t.r.cfg.MaxKey }

// cf is the operation's family (r.mu held).
func (t *thread) cf() *db.ColumnFamily { return t.r.cfs[t.fam] }

// k is the key of key index i, in the operation's family.
func (t *thread) k(i int) []byte { return Key(i - t.base) }

// Positions: p in [base, base+MaxKey] is a place in the operation's
// family in the DB's key order (see keyOrder); at gives the key index
// there, pos the position of an index, bk the key bounding a range at p
// (p may be one past the last: nil, no bound, under a non-bytewise order).
func (t *thread) at(p int) int  { return t.base + t.r.order.at(p-t.base) }
func (t *thread) pos(i int) int { return t.base + t.r.order.posOf(i-t.base) }
func (t *thread) bk(p int) []byte {
	return t.r.order.bound(p-t.base, t.r.cfg.MaxKey)
}

// statesAt returns the oracle's states of positions [lo, hi).
func (t *thread) statesAt(lo, hi int) []KeyState {
	out := make([]KeyState, 0, hi-lo)
	for p := lo; p < hi; p++ {
		out = append(out, t.r.oracle.State(t.at(p)))
	}
	return out
}

// ext is the extractor of the operation's family.
func (t *thread) ext() string {
	if t.fam == 0 {
		return t.r.ext
	}
	return t.r.cfExt[t.fam]
}

func (t *thread) run(deadline time.Time) {
	r := t.r
	defer func() {
		for _, s := range t.snaps {
			s.snap.Release()
		}
	}()
	for n := 0; r.cfg.OpsPerThread == 0 || n < r.cfg.OpsPerThread; n++ {
		if r.failed.Load() {
			return
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return
		}
		if r.cfg.OpsPerThread == 0 && deadline.IsZero() {
			return
		}
		t.op()
	}
}

func (t *thread) oneIn(n int) bool { return n > 0 && t.rng.Intn(n) == 0 }

// op runs one randomly chosen operation.
func (t *thread) op() {
	r := t.r
	cfg := &r.cfg
	total := r.opCount.Add(1)
	r.Stats.Ops.Add(1)
	if cfg.ColumnFamilies > 1 {
		// Only with families, so that a seed's operations stay the same
		// without them.
		t.setFam(t.rng.Intn(cfg.ColumnFamilies))
		if t.oneIn(cfg.CFChurnOneIn) {
			t.churn()
			return
		}
	}
	if cfg.Reopen > 0 && total%int64(cfg.Reopen) == 0 {
		t.reopen()
		return
	}
	switch {
	case t.oneIn(cfg.SwapExtractorOneIn):
		t.swapExtractor()
		return
	case t.oneIn(cfg.CrashImageOneIn):
		t.crashImage()
		return
	case t.oneIn(cfg.ClockStepOneIn):
		t.advanceClock()
		return
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	switch {
	case t.oneIn(cfg.FlushOneIn):
		r.Stats.Flushes.Add(1)
		t.expectOK("flush", t.cf().Flush())
		return
	case t.oneIn(cfg.CompactRangeOneIn):
		t.compactRange()
		return
	case t.oneIn(cfg.SetOptionsOneIn):
		t.setOptions()
		return
	case t.oneIn(cfg.SnapshotOneIn):
		t.takeSnapshot()
		return
	case t.oneIn(cfg.IngestOneIn):
		t.ingest()
		return
	case t.oneIn(cfg.CheckpointOneIn):
		t.checkpoint()
		return
	case t.oneIn(cfg.MergeOneIn):
		t.merge()
		return
	case t.oneIn(cfg.SingleDeleteOneIn):
		t.singleDelete()
		return
	}
	if len(t.snaps) > 0 && t.rng.Intn(8) == 0 {
		t.checkSnapshot()
		return
	}
	p := t.rng.Intn(100)
	for _, c := range []struct {
		pct int
		f   func()
	}{
		{cfg.ReadPercent, t.get}, {cfg.PrefixPercent, t.prefixScan}, {cfg.WritePercent, t.put},
		{cfg.DelPercent, t.del}, {cfg.DelRangePercent, t.delRange}, {cfg.IterPercent, t.iterate},
		{cfg.BatchPercent, t.batch}, {cfg.MultiGetPercent, t.multiGet},
	} {
		if p < c.pct {
			c.f()
			return
		}
		p -= c.pct
	}
	t.get()
}

// expectOK reports err as a failure unless faults are being injected.
func (t *thread) expectOK(what string, err error) bool {
	if err == nil {
		return true
	}
	t.r.Stats.Errors.Add(1)
	if t.r.faults == nil {
		t.r.fail(errors.Wrapf(err, "%s", what))
	}
	return false
}

func (t *thread) key() int { return t.base + t.rng.Intn(t.r.cfg.MaxKey) }

// end is the end of the operation's family's key indexes.
func (t *thread) end() int { return t.base + t.r.cfg.MaxKey }

func (t *thread) wo() *db.WriteOptions {
	return &db.WriteOptions{Sync: t.r.cfg.Sync || t.r.cfg.CrashImageOneIn > 0, DisableWAL: t.r.cfg.DisableWAL}
}

// write runs do with the keys of ws locked and the oracle updated around it.
func (t *thread) write(what string, ws []Write, do func() error) {
	r := t.r
	keys := make([]int, len(ws))
	for j, w := range ws {
		keys[j] = w.Key
	}
	r.oracle.LockKeys(keys)
	defer r.oracle.UnlockKeys(keys)
	t.writeLocked(what, ws, do)
}

// writeLocked is write with the keys of ws already locked. It reports
// whether do succeeded.
func (t *thread) writeLocked(what string, ws []Write, do func() error) bool {
	r := t.r
	op, err := r.oracle.Begin(ws)
	if err != nil {
		r.fail(errors.Wrap(err, "expected-state log"))
		return false
	}
	r.Stats.Writes.Add(1)
	if err := do(); err != nil {
		t.expectOK(what, err)
		if err := r.oracle.Fail(op, ws); err != nil {
			r.fail(errors.Wrap(err, "expected-state log"))
		}
		return false
	}
	if err := r.oracle.Commit(op, ws); err != nil {
		r.fail(errors.Wrap(err, "expected-state log"))
		return false
	}
	return true
}

func (t *thread) put() {
	ws := []Write{{Key: t.key()}}
	t.write("put", ws, func() error {
		return t.cf().Put(t.k(ws[0].Key), Value(ws[0].Key, ws[0].Version, t.r.cfg.ValueSizeMult), t.wo())
	})
}

func (t *thread) del() {
	ws := []Write{{Key: t.key(), Del: true}}
	t.write("delete", ws, func() error { return t.cf().Delete(t.k(ws[0].Key), t.wo()) })
}

func (t *thread) delRange() {
	s := t.key() // a position
	e := min(s+1+t.rng.Intn(8), t.end())
	if t.bk(e) == nil {
		// No key bounds the end under this order: stop before the last.
		if e--; e == s {
			return
		}
	}
	var ws []Write
	for _, i := range t.r.order.sortedIndexes(t.base, s-t.base, e-t.base) {
		ws = append(ws, Write{Key: i, Del: true})
	}
	t.write("delete range", ws, func() error { return t.cf().DeleteRange(t.bk(s), t.bk(e), t.wo()) })
}

func (t *thread) batch() {
	n := 2 + t.rng.Intn(5)
	set := map[int]bool{}
	// With families, the batch spans 2-3 of them (the operation's and
	// others): it must be atomic across them.
	fams := []int{t.fam}
	if nf := t.r.cfg.ColumnFamilies; nf > 1 {
		for _, f := range t.rng.Perm(nf)[:min(nf, 2+t.rng.Intn(2))] {
			if f != t.fam {
				fams = append(fams, f)
			}
		}
		t.r.Stats.CrossBatches.Add(1)
	}
	for len(set) < n && len(set) < t.r.cfg.MaxKey {
		set[fams[len(set)%len(fams)]*t.r.cfg.MaxKey+t.rng.Intn(t.r.cfg.MaxKey)] = true
	}
	var ws []Write
	for k := range set {
		w := Write{Key: k, Del: t.rng.Intn(5) == 0}
		w.Merge = !w.Del && t.r.cfg.MergeOneIn > 0 && t.rng.Intn(4) == 0
		ws = append(ws, w)
	}
	sort.Slice(ws, func(a, b int) bool { return ws[a].Key < ws[b].Key })
	t.write("batch", ws, func() error {
		b := db.NewBatch()
		for _, w := range ws {
			cf, k := t.r.cfOf(w.Key), t.r.key(w.Key)
			if w.Del {
				b.DeleteCF(cf, k)
			} else if w.Merge {
				b.MergeCF(cf, k, Value(w.Key, w.Version, t.r.cfg.ValueSizeMult))
			} else {
				b.PutCF(cf, k, Value(w.Key, w.Version, t.r.cfg.ValueSizeMult))
			}
		}
		return t.r.d.Write(b, t.wo())
	})
}

// readErr classifies a read error: NotFound is an answer, an injected
// fault is tolerated in fault mode, anything else fails the run.
func (t *thread) readErr(what string, i int, err error) (found, ok bool) {
	if err == nil {
		return true, true
	}
	if errors.Is(err, db.ErrNotFound) {
		return false, true
	}
	t.expectOK(fmt.Sprintf("%s %s", what, Key(i)), err)
	return false, false
}

func (t *thread) get() {
	r := t.r
	i := t.key()
	r.Stats.Reads.Add(1)
	pre := r.oracle.State(i)
	v, err := t.cf().Get(t.k(i), nil)
	post := r.oracle.State(i)
	found, ok := t.readErr("get", i, err)
	if !ok {
		return
	}
	if err := r.check(i, pre, post, found, v, r.cfg.ValueSizeMult); err != nil {
		r.fail(errors.Wrapf(err, "get (thread %d, family %s, extractor %q)", t.id, r.names[t.fam], t.ext()))
	}
}

func (t *thread) multiGet() {
	r := t.r
	n := 1 + t.rng.Intn(8)
	idx := make([]int, n)
	keys := make([][]byte, n)
	pre := make([]KeyState, n)
	for j := range idx {
		idx[j] = t.key()
		keys[j] = t.k(idx[j])
		pre[j] = r.oracle.State(idx[j])
	}
	r.Stats.Reads.Add(1)
	vals, errs := t.cf().MultiGet(keys, nil)
	for j, i := range idx {
		post := r.oracle.State(i)
		found, ok := t.readErr("multiget", i, errs[j])
		if !ok {
			continue
		}
		if err := r.check(i, pre[j], post, found, vals[j], r.cfg.ValueSizeMult); err != nil {
			r.fail(errors.Wrapf(err, "multiget of %d keys (thread %d, family %s, extractor %q)", n, t.id, r.names[t.fam], t.ext()))
			return
		}
	}
}

func (t *thread) compactRange() {
	r := t.r
	r.Stats.Compactions.Add(1)
	if t.rng.Intn(3) == 0 {
		t.expectOK("compact range (all)", t.cf().CompactRange(nil, nil))
		return
	}
	s := t.key() // positions
	e := min(s+1+t.rng.Intn(r.cfg.MaxKey/4+1), t.end())
	t.expectOK(fmt.Sprintf("compact range [%s, %s) of %s", t.bk(s), t.bk(e), r.names[t.fam]), t.cf().CompactRange(t.bk(s), t.bk(e)))
}

func (t *thread) setOptions() {
	r := t.r
	r.Stats.SetOptions.Add(1)
	var m map[string]string
	if n := r.cfg.Subcompactions; n > 1 && t.rng.Intn(4) == 0 {
		// A database option: through the default family (DB.SetOptions).
		m = map[string]string{"max_subcompactions": strconv.Itoa(1 + t.rng.Intn(n))}
		t.expectOK(fmt.Sprintf("set_options %v", m), r.cfs[0].SetOptions(m))
		return
	}
	n := 3
	if r.cfg.BlobFiles {
		n = 5
	}
	switch t.rng.Intn(n) {
	case 3:
		m = map[string]string{"enable_blob_files": strconv.FormatBool(t.rng.Intn(4) != 0)}
	case 4:
		m = map[string]string{"enable_blob_garbage_collection": strconv.FormatBool(t.rng.Intn(3) != 0),
			"blob_garbage_collection_age_cutoff": []string{"0.25", "0.5", "1"}[t.rng.Intn(3)]}
	case 0:
		m = map[string]string{"write_buffer_size": strconv.Itoa([]int{32 << 10, 64 << 10, 256 << 10, 1 << 20}[t.rng.Intn(4)])}
	case 1:
		m = map[string]string{"disable_auto_compactions": strconv.FormatBool(t.rng.Intn(4) == 0)}
	default:
		// A bad value must be refused with ErrInvalidArgument.
		err := t.cf().SetOptions(map[string]string{"write_buffer_size": "-1"})
		if !errors.Is(err, db.ErrInvalidArgument) {
			r.fail(errors.Newf("set_options write_buffer_size=-1: got %v, want ErrInvalidArgument", err))
		}
		return
	}
	t.expectOK(fmt.Sprintf("set_options %v", m), t.cf().SetOptions(m))
}

// swapExtractor changes the prefix extractor with SetOptions, or by a
// close and reopen, to a compatible or incompatible one.
func (t *thread) swapExtractor() {
	r := t.r
	ext := extractorChoices[t.rng.Intn(len(extractorChoices))]
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Stats.Swaps.Add(1)
	if t.fam == 0 && t.rng.Intn(4) == 0 {
		t.reopenLocked(ext)
		return
	}
	m := map[string]string{"prefix_extractor": ext}
	set := func() {
		if t.fam == 0 {
			r.ext = ext
		}
		r.cfExt[t.fam] = ext
	}
	if t.expectOK("set_options prefix_extractor="+ext+" on "+r.names[t.fam], t.cf().SetOptions(m)) {
		set()
		return
	}
	// A failed SetOptions may have applied the change anyway (the OPTIONS
	// file write failed after it): set it again without faults so the
	// extractor in force is known.
	was := r.faults.enable(false)
	defer r.faults.enable(was)
	if err := t.cf().SetOptions(m); err != nil && !errors.Is(err, db.ErrClosed) {
		r.fail(errors.Wrapf(err, "set_options prefix_extractor=%q without faults", ext))
		return
	}
	set()
}

func (t *thread) reopen() {
	t.r.mu.Lock()
	defer t.r.mu.Unlock()
	ext := t.r.ext
	if t.rng.Intn(2) == 0 {
		ext = extractorChoices[t.rng.Intn(len(extractorChoices))]
	}
	t.reopenLocked(ext)
}

// reopenLocked reopens with ext and verifies every key: no writes run, so
// the check is exact.
func (t *thread) reopenLocked(ext string) {
	r := t.r
	if err := r.reopenLocked(ext); err != nil {
		r.fail(err)
		return
	}
	if r.faults != nil {
		was := r.faults.enable(false)
		defer r.faults.enable(was)
	}
	if err := r.verifyAll(nil); err != nil {
		r.fail(errors.Wrapf(err, "after reopen with extractor %q", ext))
	}
}

// takeSnapshot takes a snapshot while holding the write locks of a small
// key range, so the expected state of those keys at the snapshot is known.
func (t *thread) takeSnapshot() {
	r := t.r
	if len(t.snaps) >= 3 {
		t.checkSnapshot()
	}
	lo := t.key() // positions
	hi := min(lo+1+t.rng.Intn(16), t.end())
	keys := r.order.sortedIndexes(t.base, lo-t.base, hi-t.base)
	r.oracle.LockKeys(keys)
	s := r.d.NewSnapshot()
	states := t.statesAt(lo, hi)
	r.oracle.UnlockKeys(keys)
	r.Stats.Snapshots.Add(1)
	h := heldSnapshot{snap: s, gen: r.dbGen, fam: t.fam, slotGen: r.slotGen[t.fam], lo: lo, hi: hi, states: states}
	if r.oracle.rules.on() {
		seen, ok := t.snapshotReads(s, lo, hi, states)
		if !ok {
			s.Release()
			return
		}
		h.seen = seen
	}
	t.snaps = append(t.snaps, h)
}

// checkSnapshot reads the keys of the oldest held snapshot through it, by
// Get or by an iterator, and checks them against the state saved when it
// was taken; then releases it.
func (t *thread) checkSnapshot() {
	r := t.r
	h := t.snaps[0]
	t.snaps = t.snaps[1:]
	defer h.snap.Release()
	if h.gen != r.dbGen {
		return // the DB was reopened since: the snapshot is gone
	}
	if h.slotGen != r.slotGen[h.fam] {
		return // its family was dropped since
	}
	defer t.setFam(t.fam)
	t.setFam(h.fam)
	if h.seen != nil {
		t.checkSnapshotExact(h)
		return
	}
	ro := &db.ReadOptions{Snapshot: h.snap}
	if t.rng.Intn(2) == 0 {
		for p := h.lo; p < h.hi; p++ {
			i := t.at(p)
			v, err := t.cf().Get(t.k(i), ro)
			found, ok := t.readErr("snapshot get", i, err)
			if !ok {
				continue
			}
			s := h.states[p-h.lo]
			if err := r.check(i, s, s, found, v, r.cfg.ValueSizeMult); err != nil {
				r.fail(errors.Wrapf(err, "get at snapshot of [%s, %s)", t.bk(h.lo), t.bk(h.hi)))
				return
			}
		}
		return
	}
	ro.LowerBound, ro.UpperBound = t.bk(h.lo), t.bk(h.hi)
	it := t.cf().NewIterator(ro)
	defer it.Close()
	fwd := t.rng.Intn(2) == 0
	t.checkIter(it, fwd, h.lo, h.hi, h.states, h.states, "iterate at snapshot", false, 0)
}

// iterate runs an iterator with random bounds in a random direction,
// TotalOrderSeek or not.
func (t *thread) iterate() {
	t.iter(false)
}

// prefixScan runs a PrefixSameAsStart iterator from a Seek or SeekForPrev.
func (t *thread) prefixScan() {
	t.iter(true)
}

func (t *thread) iter(prefixMode bool) {
	r := t.r
	n := r.cfg.MaxKey
	r.Stats.Iters.Add(1)
	lo, hi := 0, n // positions, in the family
	ro := &db.ReadOptions{TotalOrderSeek: t.rng.Intn(3) == 0, PrefixSameAsStart: prefixMode}
	if t.rng.Intn(2) == 0 {
		lo = t.rng.Intn(n)
		ro.LowerBound = r.order.bound(lo, n)
	}
	if t.rng.Intn(2) == 0 {
		hi = lo + 1 + t.rng.Intn(n-lo)
		ro.UpperBound = r.order.bound(hi, n)
	}
	fwd := t.rng.Intn(2) == 0
	seek := lo + t.rng.Intn(hi-lo)
	useSeek := prefixMode || t.rng.Intn(2) == 0
	if !prefixMode && t.oneIn(r.cfg.IterRefreshOneIn) {
		t.iterRefresh(ro, t.base+lo, t.base+hi, fwd)
		return
	}
	ext := t.ext()
	plo, phi := lo, hi
	if prefixMode && ext != "" {
		e, _ := prefix.Parse(ext)
		sk := Key(r.order.at(seek))
		if e.InDomain(sk) {
			p := append([]byte(nil), e.Transform(sk)...)
			same := func(q int) bool {
				k := Key(r.order.at(q))
				return e.InDomain(k) && bytes.Equal(e.Transform(k), p)
			}
			a, b := seek, seek+1
			for a > 0 && same(a-1) {
				a--
			}
			for b < n && same(b) {
				b++
			}
			plo, phi = max(lo, a), min(hi, b)
		}
	}
	b := t.base
	pre := t.statesAt(b+plo, b+phi)
	it := t.cf().NewIterator(ro)
	defer it.Close()
	post := t.statesAt(b+plo, b+phi)
	what := fmt.Sprintf("iterator (thread %d, family %s, extractor %q, bounds [%d,%d), prefix_same_as_start=%v, total_order_seek=%v, fwd=%v, seek=%v to %d)",
		t.id, r.names[t.fam], ext, lo, hi, prefixMode, ro.TotalOrderSeek, fwd, useSeek, seek)
	t.checkIter(it, fwd, b+plo, b+phi, pre, post, what, useSeek, b+seek)
}

// checkIter positions it (SeekToFirst/SeekToLast, or Seek/SeekForPrev to
// seek if useSeek) and walks up to a limit, checking every key yielded
// against the oracle and that every key skipped in [lo, hi) may be absent.
// lo, hi, seek and the indexes of pre and post are positions (t.at).
func (t *thread) checkIter(it *db.Iterator, fwd bool, lo, hi int, pre, post []KeyState, what string, useSeek bool, seek int) {
	r := t.r
	var cur int // next expected index (fwd) or last+1 (backward)
	switch {
	case fwd && useSeek:
		it.Seek(t.k(t.at(seek)))
		cur = max(seek, lo)
	case fwd:
		it.SeekToFirst()
		cur = lo
	case useSeek:
		it.SeekForPrev(t.k(t.at(seek)))
		cur = min(seek+1, hi)
	default:
		it.SeekToLast()
		cur = hi
	}
	absent := func(a, b int) error {
		for p := a; p < b; p++ {
			if i := t.at(p); !r.cfg.FIFO && !r.oracle.AbsentOK(i, pre[p-lo], post[p-lo]) {
				return errors.Newf("key %s skipped, expected version %s", Key(i), expectDesc(pre[p-lo], post[p-lo]))
			}
		}
		return nil
	}
	limit := 20 + t.rng.Intn(100)
	for steps := 0; ; steps++ {
		if steps == limit {
			return
		}
		if !it.Valid() {
			if err := it.Err(); err != nil {
				t.expectOK(what, err)
				return
			}
			var err error
			if fwd {
				err = absent(cur, hi)
			} else {
				err = absent(lo, cur)
			}
			if err != nil {
				r.fail(errors.Wrapf(err, "%s: at end", what))
			}
			return
		}
		ki, err := KeyIndex(it.Key())
		if err != nil || ki >= r.cfg.MaxKey {
			r.fail(errors.Wrapf(errors.Newf("key %q outside the key space: %v", it.Key(), err), "%s", what))
			return
		}
		i := t.base + ki
		p := t.pos(i)
		if (fwd && (p < cur || p >= hi)) || (!fwd && (p >= cur || p < lo)) {
			r.fail(errors.Newf("%s: yielded key %s outside the expected range / order (at position %d, next expected %d, range [%d,%d))", what, Key(i), p, cur, lo, hi))
			return
		}
		if fwd {
			err = absent(cur, p)
			cur = p + 1
		} else {
			err = absent(p+1, cur)
			cur = p
		}
		if err == nil {
			err = r.check(i, pre[p-lo], post[p-lo], true, it.Value(), r.cfg.ValueSizeMult)
		}
		if err != nil {
			r.fail(errors.Wrapf(err, "%s", what))
			return
		}
		if fwd {
			it.Next()
		} else {
			it.Prev()
		}
	}
}
