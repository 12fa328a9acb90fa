package stress

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
)

// BankConfig is a bank run (-mode bank): Accounts accounts holding a fixed
// total; Workers goroutines transfer random amounts between them in
// transactions (DB.Update and every kind of NewTransaction: optimistic and
// pessimistic, SnapshotIsolation and Serializable), Readers goroutines
// check the total in DB.View, and probes for write skew and phantoms check
// that Serializable lets neither through (and that SnapshotIsolation
// raises no false conflict).
//
// Every transfer also writes a record of itself (from, to, amount) in the
// same transaction, under a key naming the run, the worker and the
// worker's count of committed transfers: the balances must equal the
// initial ones plus the sum of the recorded transfers, so a transfer that
// is half there (a balance without its record, or one balance without the
// other) breaks the check, and the total is checked on its own.
type BankConfig struct {
	Seed     int64
	Accounts int // 0 = 100
	Workers  int // transfer goroutines; 0 = 4
	Readers  int // View goroutines checking the total; 0 = 2
	// Duration bounds the run; Transfers bounds each worker's committed
	// transfers (0 = until Duration). Both 0: open, verify and close.
	Duration  time.Duration
	Transfers int

	Dir string
	FS  db.FS // nil = the operating system's
	// Sync commits the transactions that are not DB.Update's with
	// TransactionOptions.Sync.
	Sync bool
	// RecycleLogFileNum sets Options.RecycleLogFileNum.
	RecycleLogFileNum int
	// AckLog (the crash child) names a file to which every committed
	// transfer is appended once Commit returned nil; at start the database
	// is verified against it: every transfer it names must be there.
	AckLog string
	// PowerLossEvery, with FS a *vfs.MemFS, takes a crash image (only
	// synced data survives) that often and verifies it: every transfer
	// acknowledged with Sync must be in it.
	PowerLossEvery time.Duration

	Log io.Writer // progress and failures; nil = discard
}

// BankStats counts what a bank run did.
type BankStats struct {
	Transfers, Updates, Conflicts, GaveUp, Views, Verifies, Images atomic.Int64
	// Probes counts the write-skew and phantom probes, interleaved (two
	// transactions stepped by one goroutine) and concurrent (claims of a
	// slot by workers racing).
	Probes, ConcurrentProbes atomic.Int64
	// ProbeRetries counts the concurrent probes' attempts that conflicted
	// (with each other, mostly): a measure of how hard they raced.
	ProbeRetries atomic.Int64
	// Broken counts broken invariants: a wrong total, a transfer not
	// whole, a lost acknowledged transfer, a probe anomaly. A run with
	// Broken > 0 returns an error.
	Broken atomic.Int64
}

func (s *BankStats) String() string {
	return fmt.Sprintf("transfers=%d (of which Update %d) conflicts=%d gave_up=%d views=%d verifies=%d images=%d probes=%d concurrent_probes=%d probe_retries=%d broken=%d",
		s.Transfers.Load(), s.Updates.Load(), s.Conflicts.Load(), s.GaveUp.Load(), s.Views.Load(),
		s.Verifies.Load(), s.Images.Load(), s.Probes.Load(), s.ConcurrentProbes.Load(), s.ProbeRetries.Load(), s.Broken.Load())
}

const (
	bankInitial   = 1000
	bankMetaKey   = "bank/meta"
	bankAcctPfx   = "bank/acct/"
	bankXferPfx   = "bank/xfer/"
	bankClaimPfx  = "bank/claim/"
	bankSkewPfx   = "bank/skew/"
	bankRetries   = 20
	bankProbeSlot = 4 // concurrent probe attempts sharing a slot
)

func bankAcct(i int) []byte { return []byte(fmt.Sprintf("%s%06d", bankAcctPfx, i)) }

func bankXfer(run int64, w, seq int) []byte {
	return []byte(fmt.Sprintf("%s%016x/%03d/%010d", bankXferPfx, run, w, seq))
}

// bankKinds are the transaction kinds a transfer picks from; nil is
// DB.Update (optimistic, SnapshotIsolation, not synced).
var bankKinds = []*db.TransactionOptions{
	nil,
	{},
	{Isolation: db.Serializable},
	{Pessimistic: true, LockTimeout: 200 * time.Millisecond},
	{Pessimistic: true, Isolation: db.Serializable, LockTimeout: 200 * time.Millisecond},
}

type bank struct {
	c     BankConfig
	st    *BankStats
	run   int64
	mu    sync.RWMutex // held for reading by operations, for writing by power-loss images
	d     *db.DB
	opts  func(fs db.FS) *db.Options
	ackMu sync.Mutex
	ack   *os.File
	// acked[w] and synced[w]: worker w's committed transfers, and how many
	// of them a synced commit made durable (power-loss images).
	acked, synced []atomic.Int64
	probeSeq      atomic.Int64 // interleaved probes' keys
	slotSeq       atomic.Int64 // concurrent probes' slots
	stop          atomic.Bool
	errOnce       sync.Once
	err           error
}

func (b *bank) fail(err error) {
	b.st.Broken.Add(1)
	b.errOnce.Do(func() { b.err = err })
	b.stop.Store(true)
	fmt.Fprintf(b.c.Log, "bank: BROKEN: %v\n", err)
}

// RunBank runs a bank run; a broken invariant returns an error.
func RunBank(c BankConfig, st *BankStats) error {
	if c.Accounts <= 0 {
		c.Accounts = 100
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.Readers <= 0 {
		c.Readers = 2
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	b := &bank{c: c, st: st, acked: make([]atomic.Int64, c.Workers), synced: make([]atomic.Int64, c.Workers)}
	// The run id keeps the records of successive crash children apart.
	b.run = time.Now().UnixNano()
	b.opts = func(fs db.FS) *db.Options {
		// Small memtables: transactions validate against tables and
		// memtables both, through flushes and compactions.
		return &db.Options{FS: fs, CreateIfMissing: true, WriteBufferSize: 128 << 10,
			Level0FileNumCompactionTrigger: 2, MaxBytesForLevelBase: 1 << 20,
			RecycleLogFileNum: c.RecycleLogFileNum}
	}
	d, err := db.Open(c.Dir, b.opts(c.FS))
	if err != nil {
		return errors.Wrap(err, "bank: open")
	}
	b.d = d
	if err := b.init(); err != nil {
		d.Close()
		return err
	}
	if err := b.verify(d, "open", b.readAckLog); err != nil {
		b.fail(err)
		d.Close()
		return b.err
	}
	if c.AckLog != "" {
		f, err := os.OpenFile(c.AckLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			d.Close()
			return errors.Wrap(err, "bank: ack log")
		}
		b.ack = f
		defer f.Close()
	}
	if c.Duration == 0 && c.Transfers == 0 {
		return d.Close()
	}
	var deadline time.Time
	if c.Duration > 0 {
		deadline = time.Now().Add(c.Duration)
	}
	done := func() bool { return b.stop.Load() || !deadline.IsZero() && time.Now().After(deadline) }
	var wg sync.WaitGroup
	var workers sync.WaitGroup
	for w := 0; w < c.Workers; w++ {
		workers.Add(1)
		go func(w int) {
			defer workers.Done()
			rng := rand.New(rand.NewSource(c.Seed*1000 + int64(w)))
			for !done() && (c.Transfers == 0 || b.acked[w].Load() < int64(c.Transfers)) {
				b.mu.RLock()
				if rng.Intn(8) == 0 {
					b.concurrentProbe(rng, w)
				} else {
					b.transfer(rng, w)
				}
				b.mu.RUnlock()
			}
		}(w)
	}
	finished := make(chan struct{})
	go func() { workers.Wait(); close(finished) }()
	isDone := func() bool {
		select {
		case <-finished:
			return true
		default:
			return done()
		}
	}
	for r := 0; r < c.Readers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !isDone() {
				b.mu.RLock()
				b.view()
				b.mu.RUnlock()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(c.Seed*1000 + 999))
		for !isDone() {
			b.mu.RLock()
			b.probe(rng)
			b.mu.RUnlock()
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		lastImage := time.Now()
		for !isDone() {
			<-tick.C
			fmt.Fprintf(c.Log, "stress-progress transfers=%d conflicts=%d views=%d probes=%d concurrent_probes=%d probe_retries=%d broken=%d\n",
				st.Transfers.Load(), st.Conflicts.Load(), st.Views.Load(), st.Probes.Load(), st.ConcurrentProbes.Load(), st.ProbeRetries.Load(), st.Broken.Load())
			if c.PowerLossEvery > 0 && time.Since(lastImage) >= c.PowerLossEvery {
				b.powerLoss()
				lastImage = time.Now()
			}
		}
	}()
	workers.Wait()
	wg.Wait()
	if b.err == nil {
		if err := b.verify(d, "end", b.memAcked); err != nil {
			b.fail(err)
		}
	}
	if b.err == nil && c.PowerLossEvery > 0 {
		b.powerLoss()
	}
	if err := d.Close(); err != nil && b.err == nil {
		return errors.Wrap(err, "bank: close")
	}
	if b.err == nil {
		// Reopen: recovery must give back the same bank.
		d, err := db.Open(c.Dir, b.opts(c.FS))
		if err != nil {
			return errors.Wrap(err, "bank: reopen")
		}
		if err := b.verify(d, "reopen", b.memAcked); err != nil {
			b.fail(err)
		}
		if err := d.Close(); err != nil && b.err == nil {
			return errors.Wrap(err, "bank: close after reopen")
		}
	}
	return b.err
}

// init writes the accounts and the meta key in one synced batch when the
// database has none; otherwise it takes the number of accounts from meta.
func (b *bank) init() error {
	v, err := b.d.Get([]byte(bankMetaKey), nil)
	if err == nil {
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return errors.Wrapf(err, "bank: meta %q", v)
		}
		b.c.Accounts = n
		return nil
	}
	if !errors.Is(err, db.ErrNotFound) {
		return errors.Wrap(err, "bank: meta")
	}
	bt := db.NewBatch()
	for i := 0; i < b.c.Accounts; i++ {
		bt.Put(bankAcct(i), []byte(strconv.Itoa(bankInitial)))
	}
	bt.Put([]byte(bankMetaKey), []byte(strconv.Itoa(b.c.Accounts)))
	return errors.Wrap(b.d.Write(bt, &db.WriteOptions{Sync: true}), "bank: init")
}

// update is DB.Update with options: fn in a fresh transaction, retried on
// ErrConflict with a jittered backoff.
func (b *bank) update(rng *rand.Rand, o *db.TransactionOptions, fn func(*db.Transaction) error) error {
	if o == nil {
		b.st.Updates.Add(1)
		return b.d.Update(fn)
	}
	backoff := 50 * time.Microsecond
	for attempt := 0; ; attempt++ {
		tx := b.d.NewTransaction(o)
		err := fn(tx)
		if err == nil {
			err = tx.Commit()
		} else {
			_ = tx.Rollback()
		}
		if err == nil || !errors.Is(err, db.ErrConflict) || attempt == bankRetries {
			return err
		}
		b.st.Conflicts.Add(1)
		time.Sleep(backoff/2 + time.Duration(rng.Int63n(int64(backoff))))
		if backoff < 5*time.Millisecond {
			backoff *= 2
		}
	}
}

func balance(v []byte, err error, key []byte) (int64, error) {
	if err != nil {
		return 0, errors.Wrapf(err, "read %s", key)
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, errors.Wrapf(err, "balance of %s", key)
	}
	return n, nil
}

func (b *bank) transfer(rng *rand.Rand, w int) {
	from := rng.Intn(b.c.Accounts)
	to := rng.Intn(b.c.Accounts - 1)
	if to >= from {
		to++
	}
	want := int64(rng.Intn(bankInitial/2) + 1)
	kind := bankKinds[rng.Intn(len(bankKinds))]
	var o *db.TransactionOptions
	if kind != nil {
		k := *kind
		k.Sync = b.c.Sync
		o = &k
	}
	forUpdate := rng.Intn(2) == 0
	seq := int(b.acked[w].Load())
	rec := bankXfer(b.run, w, seq)
	err := b.update(rng, o, func(tx *db.Transaction) error {
		read := tx.Get
		if forUpdate {
			read = tx.GetForUpdate
		}
		fk, tk := bankAcct(from), bankAcct(to)
		v, err := read(fk)
		fb, err := balance(v, err, fk)
		if err != nil {
			return err
		}
		v, err = read(tk)
		tb, err := balance(v, err, tk)
		if err != nil {
			return err
		}
		amount := min(want, fb)
		if err := tx.Put(fk, []byte(strconv.FormatInt(fb-amount, 10))); err != nil {
			return err
		}
		if err := tx.Put(tk, []byte(strconv.FormatInt(tb+amount, 10))); err != nil {
			return err
		}
		return tx.Put(rec, []byte(fmt.Sprintf("%d %d %d", from, to, amount)))
	})
	switch {
	case err == nil:
	case errors.Is(err, db.ErrConflict):
		b.st.GaveUp.Add(1)
		return
	default:
		b.fail(errors.Wrapf(err, "transfer %s", rec))
		return
	}
	b.acked[w].Add(1)
	if o != nil && o.Sync {
		// A synced commit makes every earlier write of the WAL durable,
		// this worker's unsynced ones included.
		b.synced[w].Store(int64(seq + 1))
	}
	b.st.Transfers.Add(1)
	if b.ack != nil {
		b.ackMu.Lock()
		_, err := fmt.Fprintf(b.ack, "%x %d %d\n", b.run, w, seq)
		b.ackMu.Unlock()
		if err != nil {
			b.fail(errors.Wrap(err, "ack log"))
		}
	}
}

// view checks the total in DB.View, by an iterator over the accounts, and
// that two point reads agree with it.
func (b *bank) view() {
	err := b.d.View(func(tx *db.Transaction) error {
		sum, n, err := sumAccounts(tx)
		if err != nil {
			return err
		}
		if n != b.c.Accounts || sum != int64(b.c.Accounts)*bankInitial {
			b.fail(errors.Newf("view: %d accounts holding %d, want %d holding %d", n, sum, b.c.Accounts, int64(b.c.Accounts)*bankInitial))
		}
		return nil
	})
	if err != nil {
		b.fail(errors.Wrap(err, "view"))
	}
	b.st.Views.Add(1)
}

func sumAccounts(tx *db.Transaction) (int64, int, error) {
	it := tx.NewIterator(&db.ReadOptions{LowerBound: []byte(bankAcctPfx), UpperBound: prefixEnd(bankAcctPfx)})
	var sum int64
	n := 0
	for it.SeekToFirst(); it.Valid(); it.Next() {
		v, err := balance(it.Value(), nil, it.Key())
		if err != nil {
			it.Close()
			return 0, 0, err
		}
		sum += v
		n++
	}
	if err := it.Err(); err != nil {
		it.Close()
		return 0, 0, err
	}
	return sum, n, it.Close()
}

func prefixEnd(p string) []byte {
	e := []byte(p)
	e[len(e)-1]++
	return e
}

// verify checks d: the total, the accounts against the recorded transfers
// (every one whole), the transfers acked (acked lists, per run and worker,
// how many must be there), and the probes' slots.
func (b *bank) verify(d *db.DB, when string, acked func() (map[string]int, error)) error {
	b.st.Verifies.Add(1)
	need, err := acked()
	if err != nil {
		return err
	}
	return d.View(func(tx *db.Transaction) error {
		sum, n, err := sumAccounts(tx)
		if err != nil {
			return err
		}
		if n != b.c.Accounts || sum != int64(b.c.Accounts)*bankInitial {
			return errors.Newf("bank (%s): %d accounts holding %d, want %d holding %d", when, n, sum, b.c.Accounts, int64(b.c.Accounts)*bankInitial)
		}
		want := make([]int64, b.c.Accounts)
		for i := range want {
			want[i] = bankInitial
		}
		have := map[string]int{} // run/worker -> records
		it := tx.NewIterator(&db.ReadOptions{LowerBound: []byte(bankXferPfx), UpperBound: prefixEnd(bankXferPfx)})
		for it.SeekToFirst(); it.Valid(); it.Next() {
			var from, to int
			var amount int64
			if _, err := fmt.Sscanf(string(it.Value()), "%d %d %d", &from, &to, &amount); err != nil || from >= len(want) || to >= len(want) {
				it.Close()
				return errors.Newf("bank (%s): transfer record %s = %q", when, it.Key(), it.Value())
			}
			want[from] -= amount
			want[to] += amount
			k := string(it.Key()[len(bankXferPfx):])
			have[k[:strings.LastIndexByte(k, '/')]]++
		}
		if err := it.Err(); err != nil {
			it.Close()
			return err
		}
		it.Close()
		for i := range want {
			v, err := tx.Get(bankAcct(i))
			got, err := balance(v, err, bankAcct(i))
			if err != nil {
				return err
			}
			if got != want[i] {
				return errors.Newf("bank (%s): account %d holds %d, the recorded transfers make it %d: a transfer is not whole", when, i, got, want[i])
			}
		}
		for rw, n := range need {
			// Records of a worker are numbered from 0 and it commits
			// one at a time: the first n must be there.
			parts := strings.Split(rw, "/")
			run, _ := strconv.ParseInt(parts[0], 16, 64)
			w, _ := strconv.Atoi(parts[1])
			for s := 0; s < n; s++ {
				if _, err := tx.Get(bankXfer(run, w, s)); err != nil {
					return errors.Wrapf(err, "bank (%s): acknowledged transfer %s (of %d acknowledged)", when, bankXfer(run, w, s), n)
				}
			}
			if have[rw] < n {
				return errors.Newf("bank (%s): %d transfers of %s, %d acknowledged", when, have[rw], rw, n)
			}
		}
		return checkProbeSlots(tx, when)
	})
}

// memAcked: this process's committed transfers.
func (b *bank) memAcked() (map[string]int, error) {
	m := map[string]int{}
	for w := range b.acked {
		m[fmt.Sprintf("%016x/%03d", b.run, w)] = int(b.acked[w].Load())
	}
	return m, nil
}

// readAckLog: the transfers the earlier children acknowledged. A last line
// cut short by the kill is skipped (its transfer may or may not be there).
func (b *bank) readAckLog() (map[string]int, error) {
	m := map[string]int{}
	if b.c.AckLog == "" {
		return m, nil
	}
	data, err := os.ReadFile(b.c.AckLog)
	if os.IsNotExist(err) {
		return m, nil
	}
	if err != nil {
		return nil, errors.Wrap(err, "bank: ack log")
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		run, err1 := strconv.ParseInt(f[0], 16, 64)
		w, err2 := strconv.Atoi(f[1])
		s, err3 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		k := fmt.Sprintf("%016x/%03d", run, w)
		m[k] = max(m[k], s+1)
	}
	return m, nil
}

// powerLoss verifies a crash image: the transfers acknowledged with Sync
// before it must be there, whole, and the total.
func (b *bank) powerLoss() {
	mem, ok := b.c.FS.(*vfs.MemFS)
	if !ok {
		return
	}
	b.mu.Lock()
	img := mem.CrashClone()
	need := map[string]int{}
	for w := range b.synced {
		need[fmt.Sprintf("%016x/%03d", b.run, w)] = int(b.synced[w].Load())
	}
	b.mu.Unlock()
	b.st.Images.Add(1)
	d, err := db.Open(b.c.Dir, b.opts(img))
	if err != nil {
		b.fail(errors.Wrap(err, "power loss: open crash image"))
		return
	}
	defer d.Close()
	if err := b.verify(d, "power loss", func() (map[string]int, error) { return need, nil }); err != nil {
		b.fail(err)
	}
}

// probe runs one interleaved probe: two transactions stepped by this
// goroutine, on keys of their own. Write skew: each reads both keys of a
// pair, then each writes a different one. Phantom: each scans a range,
// then each inserts a key into it. Under Serializable the first commits
// and the second conflicts; under SnapshotIsolation both commit (the
// anomaly is allowed, a conflict would be a false one). The two
// transactions' kinds (optimistic or pessimistic) are drawn apart.
func (b *bank) probe(rng *rand.Rand) {
	b.st.Probes.Add(1)
	iso := db.Isolation(rng.Intn(2))
	o1 := &db.TransactionOptions{Isolation: iso, Pessimistic: rng.Intn(2) == 0, LockTimeout: time.Second}
	o2 := &db.TransactionOptions{Isolation: iso, Pessimistic: rng.Intn(2) == 0, LockTimeout: time.Second}
	n := b.probeSeq.Add(1)
	base := fmt.Sprintf("bank/probe/%016x/%010d/", b.run, n)
	t1, t2 := b.d.NewTransaction(o1), b.d.NewTransaction(o2)
	kind := "write skew"
	var err error
	if rng.Intn(2) == 0 {
		a, c := []byte(base+"a"), []byte(base+"b")
		for _, tx := range []*db.Transaction{t1, t2} {
			for _, k := range [][]byte{a, c} {
				if _, e := tx.Get(k); e == nil {
					err = errors.Newf("probe: %s exists", k)
				} else if !errors.Is(e, db.ErrNotFound) {
					err = errors.Wrapf(e, "probe read %s", k)
				}
			}
		}
		if err == nil {
			err = errors.CombineErrors(t1.Put(a, []byte("0")), t2.Put(c, []byte("0")))
		}
	} else {
		kind = "phantom"
		ro := &db.ReadOptions{LowerBound: []byte(base), UpperBound: prefixEnd(base)}
		for _, tx := range []*db.Transaction{t1, t2} {
			it := tx.NewIterator(ro)
			for it.SeekToFirst(); it.Valid(); it.Next() {
				err = errors.Newf("probe: range %s not empty", base)
			}
			err = errors.CombineErrors(err, errors.CombineErrors(it.Err(), it.Close()))
		}
		if err == nil {
			err = errors.CombineErrors(t1.Put([]byte(base+"1"), nil), t2.Put([]byte(base+"2"), nil))
		}
	}
	if err != nil {
		t1.Rollback()
		t2.Rollback()
		b.fail(errors.Wrapf(err, "%s probe", kind))
		return
	}
	e1, e2 := t1.Commit(), t2.Commit()
	desc := fmt.Sprintf("%s probe %s (isolation %d, pessimistic %v/%v): first commit %v, second %v", kind, base, iso, o1.Pessimistic, o2.Pessimistic, e1, e2)
	switch {
	case e1 != nil:
		b.fail(errors.Newf("%s: the first must commit", desc))
	case iso == db.Serializable && !errors.Is(e2, db.ErrConflict):
		b.fail(errors.Newf("%s: Serializable must refuse the second", desc))
	case iso == db.SnapshotIsolation && e2 != nil:
		b.fail(errors.Newf("%s: SnapshotIsolation must let both commit (no false conflicts)", desc))
	}
}

// concurrentProbe: workers racing on shared slots, Serializable, any
// kind. A claim scans its slot's range and inserts its own key only when
// the range is empty: a slot must never hold two keys (a phantom would).
// A skew probe reads both keys of a pair (absent is "on") and turns its
// own off only when both are on: a pair must never be off twice (write
// skew would). checkProbeSlots checks both at every verify.
func (b *bank) concurrentProbe(rng *rand.Rand, w int) {
	b.st.ConcurrentProbes.Add(1)
	o := &db.TransactionOptions{Isolation: db.Serializable, Pessimistic: rng.Intn(2) == 0,
		LockTimeout: 200 * time.Millisecond, Sync: b.c.Sync}
	// Attempts take slots in order, bankProbeSlot to a slot, and each
	// picks one of the 4 newest: attempts of different workers close in
	// time meet on a slot.
	slot := max(b.slotSeq.Add(1)/bankProbeSlot-int64(rng.Intn(4)), 0)
	attempts := int64(0)
	defer func() { b.st.ProbeRetries.Add(max(attempts-1, 0)) }()
	var err error
	if rng.Intn(2) == 0 {
		base := fmt.Sprintf("%s%016x/%010d/", bankClaimPfx, b.run, slot)
		ro := &db.ReadOptions{LowerBound: []byte(base), UpperBound: prefixEnd(base)}
		err = b.update(rng, o, func(tx *db.Transaction) error {
			attempts++
			it := tx.NewIterator(ro)
			it.SeekToFirst()
			empty := !it.Valid()
			if err := errors.CombineErrors(it.Err(), it.Close()); err != nil || !empty {
				return err
			}
			// A pause between the read and the write, so that racing
			// attempts overlap.
			time.Sleep(time.Duration(rng.Intn(300)) * time.Microsecond)
			return tx.Put([]byte(fmt.Sprintf("%s%03d", base, w)), nil)
		})
	} else {
		base := fmt.Sprintf("%s%016x/%010d/", bankSkewPfx, b.run, slot)
		keys := [][]byte{[]byte(base + "a"), []byte(base + "b")}
		mine := keys[w%2]
		err = b.update(rng, o, func(tx *db.Transaction) error {
			attempts++
			for _, k := range keys {
				if _, err := tx.Get(k); err == nil {
					return nil // already off
				} else if !errors.Is(err, db.ErrNotFound) {
					return err
				}
			}
			time.Sleep(time.Duration(rng.Intn(300)) * time.Microsecond)
			return tx.Put(mine, []byte("off"))
		})
	}
	if err != nil && !errors.Is(err, db.ErrConflict) {
		b.fail(errors.Wrap(err, "concurrent probe"))
	}
}

// checkProbeSlots: no claim slot holds two keys, no skew pair is off twice.
func checkProbeSlots(tx *db.Transaction, when string) error {
	for _, pfx := range []string{bankClaimPfx, bankSkewPfx} {
		it := tx.NewIterator(&db.ReadOptions{LowerBound: []byte(pfx), UpperBound: prefixEnd(pfx)})
		var last string
		for it.SeekToFirst(); it.Valid(); it.Next() {
			k := string(it.Key())
			slot := k[:strings.LastIndexByte(k, '/')]
			if slot == last {
				it.Close()
				return errors.Newf("bank (%s): probe slot %s has two keys: a phantom or write skew committed under Serializable", when, slot)
			}
			last = slot
		}
		if err := errors.CombineErrors(it.Err(), it.Close()); err != nil {
			return err
		}
	}
	return nil
}
