// Command ycsb loads YCSB's usertable into one engine and runs core
// workloads A-F against it with go-ycsb's client, printing go-ycsb's
// per-operation histograms and one RESULT line per phase, then the
// process's peak RSS. Run one engine and thread count per process so that
// the peak RSS is that run's (run.sh does).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"

	"github.com/stratadb/strata/bench/ycsb/harness"
)

func main() {
	engine := flag.String("engine", "strata", "strata|pebble|badger|bbolt")
	dir := flag.String("dir", "", "database directory; removed first (required)")
	records := flag.Int64("records", 1_000_000, "recordcount: records loaded")
	ops := flag.Int64("ops", 1_000_000, "operationcount of each workload")
	opsE := flag.Int64("ops_e", 0, "operationcount of workload E, whose scans cost up to 100 reads each; 0 = -ops")
	threads := flag.Int("threads", 1, "client threads, for the load and every workload")
	workloads := flag.String("workloads", "a,b,c,d,e,f", "workloads to run after the load, in order, on the loaded data")
	cacheMB := flag.Int64("cache_mb", 64, "block cache in MiB (Strata, Pebble, Badger); 0 = each engine's default")
	memtableMB := flag.Int64("memtable_mb", 64, "memtable size in MiB (Strata, Pebble, Badger); 0 = each engine's default")
	memtrace := flag.Duration("memtrace", 0, "sample the resident set at this interval and print a breakdown at each phase's peak (MEM lines); 0 = off")
	traceFile := flag.String("trace", "", "write a Go execution trace (go tool trace) of the whole run to this file")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the workload phases (after the load) to this file")
	mutexProfile := flag.String("mutexprofile", "", "write a mutex contention profile of the workload phases (every event sampled) to this file")
	blockProfile := flag.String("blockprofile", "", "write a blocking profile of the workload phases (every event sampled) to this file")
	traceWorkloads := flag.Bool("trace_workloads", false, "start the -trace at the first workload phase, after the load")
	flag.Parse()
	stopTrace := func() {}
	startTrace := func() {
		f, err := os.Create(*traceFile)
		if err != nil {
			fail(err)
		}
		if err := trace.Start(f); err != nil {
			fail(err)
		}
		stopTrace = func() {
			trace.Stop()
			if err := f.Close(); err != nil {
				fail(err)
			}
		}
	}
	if *traceFile != "" && !*traceWorkloads {
		startTrace()
	}
	defer func() { stopTrace() }()
	if *dir == "" {
		fail(fmt.Errorf("-dir is required"))
	}
	for _, w := range strings.Split(*workloads, ",") {
		if _, ok := harness.Workloads[w]; !ok {
			fail(fmt.Errorf("-workloads: unknown workload %q (a-f)", w))
		}
	}
	if err := os.RemoveAll(*dir); err != nil {
		fail(err)
	}
	pr := harness.Params{Records: *records, Ops: *ops, Threads: *threads}
	d, desc, err := harness.Open(*engine, *dir, harness.Budget{CacheBytes: *cacheMB << 20, MemtableBytes: *memtableMB << 20},
		pr.Properties(""))
	if err != nil {
		fail(err)
	}
	fmt.Printf("ENGINE %s threads=%d records=%d ops=%d GOMAXPROCS=%d start=%s\n  %s\n",
		*engine, *threads, *records, *ops, runtime.GOMAXPROCS(0), time.Now().UTC().Format(time.RFC3339), desc)

	ctx := context.Background()
	phases := append([]string{""}, strings.Split(*workloads, ",")...)
	prof := &profiles{cpu: *cpuProfile, mutex: *mutexProfile, block: *blockProfile}
	for _, w := range phases {
		if w != "" && !prof.started {
			if *traceFile != "" && *traceWorkloads {
				startTrace()
			}
			prof.start()
		}
		ppr := pr
		if w == "e" && *opsE > 0 {
			ppr.Ops = *opsE
		}
		var mt *harness.MemTrace
		if *memtrace > 0 {
			mt = harness.StartMemTrace(d, *memtrace)
		}
		cpu0 := processCPU()
		r, err := harness.RunPhase(ctx, ppr, w, d)
		if err != nil {
			fail(err)
		}
		r.CPUSeconds = processCPU() - cpu0
		if mt != nil {
			fmt.Printf("MEM phase=%s\n%s", phaseName(w), mt.Stop())
		}
		report(*engine, *threads, r)
		if w == "" {
			rss, err := harness.PeakRSS()
			if err != nil {
				fail(err)
			}
			fmt.Printf("RSS engine=%s threads=%d after=load peak_rss_mb=%.1f\n", *engine, *threads, float64(rss)/(1<<20))
		}
	}
	prof.stop()
	if err := d.Close(); err != nil {
		fail(err)
	}
	rss, err := harness.PeakRSS()
	if err != nil {
		fail(err)
	}
	fmt.Printf("RSS engine=%s threads=%d after=all peak_rss_mb=%.1f\n", *engine, *threads, float64(rss)/(1<<20))
}

// report prints go-ycsb's per-operation rows and a RESULT line whose
// latencies are TOTAL's (every DB call of the phase).
func report(engine string, threads int, r harness.Result) {
	for _, s := range r.Stats {
		fmt.Printf("  %-20s count=%d avg=%d min=%d p50=%d p90=%d p95=%d p99=%d p99.9=%d p99.99=%d max=%d (us)\n",
			s.Op, s.Count, s.Avg, s.Min, s.P50, s.P90, s.P95, s.P99, s.P999, s.P9999, s.Max)
	}
	t, _ := r.Op("TOTAL")
	errs := int64(0)
	for _, s := range r.Stats {
		if strings.HasSuffix(s.Op, "_ERROR") {
			errs += s.Count
		}
	}
	cpu := ""
	if cpuMeasured {
		cpu = fmt.Sprintf(" cpu_us_per_op=%.2f", r.CPUSeconds*1e6/float64(r.Ops))
	}
	fmt.Printf("RESULT engine=%s threads=%d phase=%s ops=%d secs=%.2f ops_per_sec=%.0f p50=%d p99=%d p99.9=%d p99.99=%d max=%d errors=%d%s\n",
		engine, threads, r.Phase, r.Ops, r.Seconds, r.OpsPerSec(), t.P50, t.P99, t.P999, t.P9999, t.Max, errs, cpu)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ycsb:", err)
	os.Exit(1)
}

func phaseName(w string) string {
	if w == "" {
		return "load"
	}
	return w
}

// profiles are the -cpuprofile, -mutexprofile and -blockprofile outputs:
// started before the first workload phase, so that the load's writes,
// flushes and compactions are not in them, and written after the last.
type profiles struct {
	cpu, mutex, block string
	started           bool
	cpuFile           *os.File
}

func (p *profiles) start() {
	if p.started {
		return
	}
	p.started = true
	if p.cpu != "" {
		f, err := os.Create(p.cpu)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		p.cpuFile = f
	}
	if p.mutex != "" {
		runtime.SetMutexProfileFraction(1)
	}
	if p.block != "" {
		runtime.SetBlockProfileRate(1)
	}
}

func (p *profiles) stop() {
	if !p.started {
		return
	}
	if p.cpuFile != nil {
		pprof.StopCPUProfile()
		if err := p.cpuFile.Close(); err != nil {
			fail(err)
		}
	}
	write := func(name, file string) {
		if file == "" {
			return
		}
		f, err := os.Create(file)
		if err != nil {
			fail(err)
		}
		if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
			fail(err)
		}
		if err := f.Close(); err != nil {
			fail(err)
		}
	}
	write("mutex", p.mutex)
	write("block", p.block)
}
