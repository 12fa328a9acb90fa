package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// opType names the operation a latency sample belongs to, as db_bench's
// OperationType; -histogram prints one histogram per type, in this order.
type opType int

const (
	opRead opType = iota
	opWrite
	opDelete
	opSeek
	opMerge
	opOthers
	numOpTypes
)

var opTypeNames = [numOpTypes]string{"read", "write", "delete", "seek", "merge", "op"}

// stats is one thread's measurements, db_bench's Stats. A thread owns its
// stats while it runs; merge and report run after every thread finished.
// micros/op is the summed per-thread busy time over the ops; ops/sec and
// MB/s use wall time from the first start to the last finish.
type stats struct {
	start, finish time.Time
	seconds       float64
	done          int64
	bytes         int64
	message       string
	hist          [numOpTypes]*histogram
	excluded      bool // a background writer's stats are not merged

	// Progress and per-op latency tracking.
	histOn       bool
	progress     *progressLine // nil = no "... finished N ops" lines
	nextReport   int64
	lastOpFinish time.Time
	rep          *reporter // nil = no -report_file
}

func (s *stats) begin(now time.Time) {
	s.start, s.finish, s.lastOpFinish = now, now, now
	s.nextReport = 100
}

func (s *stats) stop() {
	s.finish = time.Now()
	s.seconds = s.finish.Sub(s.start).Seconds()
}

// finishedOps records n operations of type t completed since the last
// call (db_bench's FinishedOps: one latency sample per call).
func (s *stats) finishedOps(n int64, t opType) {
	if s.histOn || s.rep != nil {
		now := time.Now()
		micros := uint64(now.Sub(s.lastOpFinish).Microseconds())
		s.lastOpFinish = now
		if s.histOn {
			if s.hist[t] == nil {
				s.hist[t] = newHistogram()
			}
			s.hist[t].Add(micros)
		}
		if s.rep != nil {
			s.rep.finished(n, micros)
		}
	}
	s.done += n
	if s.progress != nil && s.done >= s.nextReport {
		s.nextReport += progressStep(s.nextReport)
		s.progress.report(s.done)
	}
}

// progressStep is db_bench's growing distance between progress lines.
func progressStep(next int64) int64 {
	switch {
	case next < 1000:
		return 100
	case next < 5000:
		return 500
	case next < 10000:
		return 1000
	case next < 50000:
		return 5000
	case next < 100000:
		return 10000
	case next < 500000:
		return 50000
	}
	return 100000
}

// addMessage appends msg separated by a space, as db_bench's AppendWithSpace.
func (s *stats) addMessage(msg string) {
	if msg == "" {
		return
	}
	if s.message != "" {
		s.message += " "
	}
	s.message += msg
}

func (s *stats) merge(o *stats) {
	if o.excluded {
		return
	}
	for i, h := range o.hist {
		if h == nil {
			continue
		}
		if s.hist[i] == nil {
			s.hist[i] = newHistogram()
		}
		s.hist[i].Merge(h)
	}
	s.done += o.done
	s.bytes += o.bytes
	s.seconds += o.seconds
	if s.start.IsZero() || o.start.Before(s.start) {
		s.start = o.start
	}
	if o.finish.After(s.finish) {
		s.finish = o.finish
	}
	if s.message == "" {
		s.message = o.message
	}
}

// resultLine formats db_bench's result line (with its trailing newline;
// messages that end in "\n", such as readrandom's, add a blank line).
func (s *stats) resultLine(name string) string {
	done := max(s.done, 1)
	elapsed := s.finish.Sub(s.start).Seconds()
	if elapsed <= 0 {
		elapsed = 1e-9
	}
	extra := ""
	if s.bytes > 0 {
		extra = fmt.Sprintf("%6.1f MB/s", float64(s.bytes)/1048576.0/elapsed)
	}
	if s.message != "" {
		if extra != "" {
			extra += " "
		}
		extra += s.message
	}
	sep := ""
	if extra != "" {
		sep = " "
	}
	return fmt.Sprintf("%-12s : %11.3f micros/op %d ops/sec %.3f seconds %d operations;%s%s\n",
		name, s.seconds*1e6/float64(done), int64(float64(done)/elapsed), elapsed, done, sep, extra)
}

// report prints the result line and, with -histogram, the histograms.
func (s *stats) report(w io.Writer, name string) {
	io.WriteString(w, s.resultLine(name))
	for i, h := range s.hist {
		if h != nil {
			fmt.Fprintf(w, "Microseconds per %s:\n%s\n", opTypeNames[i], h.String())
		}
	}
}

// reporter writes -report_file: every interval one CSV line with the
// seconds elapsed, the interval's ops/sec and its p99 latency in
// microseconds; it keeps the points for -report_plot. Threads call
// finished concurrently (atomics); mu guards what the ticker hands to stop.
type reporter struct {
	total    atomic.Int64
	lat      *intervalHist
	interval time.Duration
	stopCh   chan struct{}
	doneCh   chan struct{}

	mu struct {
		sync.Mutex
		points []reportPoint
		err    error
	}
}

type reportPoint struct {
	secs     float64
	opsPerS  float64
	p99Micro float64
}

func (r *reporter) finished(n int64, micros uint64) {
	r.total.Add(n)
	r.lat.Add(micros)
}

// startReporter creates the CSV file and starts the ticker goroutine.
func startReporter(path string, interval time.Duration) (*reporter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("report file: %w", err)
	}
	w := bufio.NewWriter(f)
	if _, err := w.WriteString("secs_elapsed,interval_qps,p99_micros\n"); err != nil {
		f.Close()
		return nil, err
	}
	r := &reporter{lat: newIntervalHist(), interval: interval,
		stopCh: make(chan struct{}), doneCh: make(chan struct{})}
	go r.loop(f, w)
	return r, nil
}

func (r *reporter) loop(f *os.File, w *bufio.Writer) {
	defer close(r.doneCh)
	t := time.NewTicker(r.interval)
	defer t.Stop()
	start, last := time.Now(), time.Now()
	var lastOps int64
	prev := make([]uint64, len(histBuckets))
	cur := make([]uint64, len(histBuckets))
	for {
		select {
		case <-r.stopCh:
			err := w.Flush()
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			r.setErr(err)
			return
		case now := <-t.C:
			ops := r.total.Load()
			r.lat.snapshot(cur)
			p := intervalPoint(now.Sub(start), now.Sub(last), ops-lastOps, prev, cur)
			last, lastOps = now, ops
			copy(prev, cur)
			fmt.Fprintf(w, "%.0f,%.0f,%.1f\n", p.secs, p.opsPerS, p.p99Micro)
			r.setErr(w.Flush())
			r.mu.Lock()
			r.mu.points = append(r.mu.points, p)
			r.mu.Unlock()
		}
	}
}

// intervalPoint computes one report row from cumulative bucket counts.
func intervalPoint(sinceStart, sinceLast time.Duration, ops int64, prev, cur []uint64) reportPoint {
	diff := make([]uint64, len(cur))
	var n uint64
	lo, hi := uint64(0), uint64(0)
	for i := range cur {
		diff[i] = cur[i] - prev[i]
		if diff[i] == 0 {
			continue
		}
		if n == 0 && i > 0 {
			lo = histBuckets[i-1]
		}
		hi = histBuckets[i]
		n += diff[i]
	}
	p := reportPoint{secs: sinceStart.Round(time.Second).Seconds()}
	if s := sinceLast.Seconds(); s > 0 {
		p.opsPerS = float64(ops) / s
	}
	if n > 0 {
		p.p99Micro = percentileOf(diff, n, lo, hi, 99)
	}
	return p
}

func (r *reporter) setErr(err error) {
	if err == nil {
		return
	}
	r.mu.Lock()
	if r.mu.err == nil {
		r.mu.err = err
	}
	r.mu.Unlock()
}

// stop ends the ticker and returns the points and the first write error.
func (r *reporter) stop() ([]reportPoint, error) {
	close(r.stopCh)
	<-r.doneCh
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.points, r.mu.err
}

// printProperties prints each property the engine has, one per block.
func printProperties(w io.Writer, e engine, names []string) {
	for _, n := range names {
		if v, ok := e.Property(n); ok {
			fmt.Fprintf(w, "%s:\n%s\n", n, strings.TrimRight(v, "\n"))
		}
	}
}
