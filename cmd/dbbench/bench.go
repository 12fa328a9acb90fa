package main

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratadb/strata/bench/dbgen"
)

// bench runs the -benchmarks list against one engine, db_bench's Benchmark.
// Fields below "per benchmark" are reset before each benchmark, as in
// db_bench's Run loop; the engine may be reopened between benchmarks.
type bench struct {
	cfg      *config
	dir      string
	eng      engine
	out      io.Writer     // result lines
	errOut   io.Writer     // notes
	progress *progressLine // on errOut when it is a terminal; nil = none
	kg       dbgen.KeyGen
	seedBase int64
	rep      *reporter // nil = no -report_file
	fams     *families // nil = one family
	cfe      cfEngine  // eng's families, when fams is set

	threadsStarted int64 // seeds thread n of the process with seedBase+n

	// txnTotals sums randomtransaction's counts over its threads.
	txnTotals struct {
		sync.Mutex
		done, aborts int64
	}

	// per benchmark
	num, reads, writes, deletes int64
	batch                       int64
	keySize                     int
	wo                          writeOpts
}

// method is a benchmark body, run once by each thread.
type method func(t *threadState) error

// threadState is one benchmark thread's generator, stats and the state
// shared with its siblings.
type threadState struct {
	tid    int
	rand   *dbgen.MT64
	stats  stats
	shared *sharedState
}

// sharedState is what the threads of one benchmark run share.
type sharedState struct {
	total int
	done  atomic.Int32 // threads finished
}

// othersDone reports whether every thread except the caller has finished.
func (s *sharedState) othersDone() bool { return int(s.done.Load())+1 >= s.total }

// resetPerBenchmark applies db_bench's per-benchmark defaults.
func (b *bench) resetPerBenchmark() {
	c := b.cfg
	b.num = c.num
	b.reads = orNum(c.reads, c.num)
	b.writes = orNum(c.writes, c.num)
	b.deletes = orNum(c.deletes, c.num)
	b.batch = c.batchSize
	b.keySize = c.keySize
	b.wo = writeOpts{sync: c.sync, disableWAL: c.disableWAL}
}

func orNum(v, num int64) int64 {
	if v < 0 {
		return num
	}
	return v
}

// benchSpec says how to run one named benchmark.
type benchSpec struct {
	run     method
	fresh   bool // needs an empty database (skipped with -use_existing_db)
	threads int
}

// spec maps a benchmark name to its body, adjusting the per-benchmark
// fields as db_bench does. "stats", "flush" and "waitforcompaction" have
// none: they run no threads.
func (b *bench) spec(name string) benchSpec {
	n := b.cfg.threads
	switch name {
	case "fillseq":
		return benchSpec{b.writeSeq, true, n}
	case "fillbatch":
		b.batch = 1000
		return benchSpec{b.writeSeq, true, n}
	case "fillrandom":
		return benchSpec{b.writeRandom, true, n}
	case "overwrite":
		return benchSpec{b.writeRandom, false, n}
	case "fillsync":
		b.num /= 1000
		b.wo.sync = true
		return benchSpec{b.writeRandom, true, n}
	case "deleterandom":
		return benchSpec{b.deleteRandom, false, n}
	case "readrandom":
		return benchSpec{b.readRandom, false, n}
	case "readmissing":
		b.keySize++
		return benchSpec{b.readRandom, false, n}
	case "multireadrandom":
		fmt.Fprintf(b.errOut, "entries_per_batch = %d\n", b.batch)
		return benchSpec{b.multiReadRandom, false, n}
	case "readseq":
		return benchSpec{b.readSeq, false, n}
	case "readreverse":
		return benchSpec{b.readReverse, false, n}
	case "seekrandom":
		return benchSpec{b.seekRandom, false, n}
	case "readwhilewriting":
		return benchSpec{b.readWhileWriting, false, n + 1}
	case "compact":
		return benchSpec{b.compact, false, n}
	case "mergerandom":
		return benchSpec{b.mergeRandom, false, n}
	case "readrandommergerandom":
		return benchSpec{b.readRandomMergeRandom, false, n}
	case "randomtransaction":
		b.txnTotals.done, b.txnTotals.aborts = 0, 0
		return benchSpec{b.randomTransaction, false, n}
	}
	return benchSpec{}
}

// runAll runs every benchmark in order.
func (b *bench) runAll() error {
	for _, name := range b.cfg.benchmarks {
		b.resetPerBenchmark()
		switch name { // untimed, no result line, as in db_bench
		case "stats":
			b.printStats()
			continue
		case "flush":
			if err := b.eng.Flush(); err != nil {
				return fmt.Errorf("flush: %w", err)
			}
			continue
		case "waitforcompaction":
			if err := b.waitForCompactions(); err != nil {
				return fmt.Errorf("waitforcompaction: %w", err)
			}
			continue
		}
		sp := b.spec(name)
		if sp.fresh {
			if b.cfg.useExistingDB {
				fmt.Fprintf(b.out, "%-12s : skipped (--use_existing_db is true)\n", name)
				continue
			}
			if err := b.reopenFresh(); err != nil {
				return err
			}
		}
		fmt.Fprintf(b.out, "DB path: [%s]\n", b.dir)
		st, err := b.runThreads(sp.threads, sp.run)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		b.progress.clear()
		st.report(b.out, name)
		if name == "randomtransaction" {
			if b.cfg.optimisticTxnDB || b.cfg.transactionDB {
				fmt.Fprintf(b.out, "randomtransaction all threads: transactions:%d aborts:%d\n", b.txnTotals.done, b.txnTotals.aborts)
			}
			if err := b.randomTransactionVerify(); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
}

// runThreads starts n threads seeded as db_bench does, releases them
// together, waits for all and merges their stats.
func (b *bench) runThreads(n int, m method) (*stats, error) {
	shared := &sharedState{total: n}
	threads := make([]*threadState, n)
	for i := range threads {
		b.threadsStarted++
		t := &threadState{tid: i, rand: dbgen.NewMT64(uint64(b.seedBase + b.threadsStarted)), shared: shared}
		t.stats.histOn = b.cfg.histogram
		t.stats.rep = b.rep
		t.stats.progress = b.progress
		threads[i] = t
	}
	errs := make([]error, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i, t := range threads {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			t.stats.begin(time.Now())
			errs[i] = m(t)
			t.stats.stop()
			shared.done.Add(1)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	merged := &stats{}
	for i, t := range threads {
		if errs[i] != nil {
			return nil, errs[i]
		}
		merged.merge(&t.stats)
	}
	return merged, nil
}

// newKeys allocates n key buffers of the current key size.
func (b *bench) newKeys(n int64) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = make([]byte, b.keySize)
	}
	return keys
}

// randomKey fills key from the next draw of t's generator, db_bench's
// GetRandomKey + GenerateKeyFromInt over the whole -num range.
func (b *bench) randomKey(t *threadState, key []byte) uint64 {
	n := t.rand.Next() % uint64(max(b.cfg.num, 1))
	b.kg.Fill(key, n, b.cfg.num)
	return n
}

// duration stops a loop after maxOps ops, or after maxSeconds when that is
// set (checking the clock every opsBetweenChecks ops), db_bench's Duration.
type duration struct {
	maxSeconds       int64
	maxOps           int64
	ops              int64
	opsBetweenChecks int64
	start            time.Time
}

func (b *bench) newDuration(maxSeconds int, maxOps int64) *duration {
	return &duration{maxSeconds: int64(maxSeconds), maxOps: maxOps,
		opsBetweenChecks: b.cfg.opsBetweenChecks, start: time.Now()}
}

// done adds inc ops and reports whether the loop should stop.
func (d *duration) done(inc int64) bool {
	inc = max(inc, 1)
	d.ops += inc
	if d.maxSeconds > 0 {
		g := d.opsBetweenChecks
		if d.ops/g != (d.ops-inc)/g {
			return int64(time.Since(d.start)/time.Second) >= d.maxSeconds
		}
		return false
	}
	return d.ops > d.maxOps
}
