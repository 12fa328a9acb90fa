package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
)

// memoryReport is what dbbench prints about its own memory at the end of a
// run: the process's peak resident set over the whole run, Close included
// (getrusage's ru_maxrss, the figure GNU time reports as "Maximum resident
// set size"), and the Go heap after the last benchmark, with the database
// still open.
type memoryReport struct {
	peakRSS   int64 // bytes; -1 where the platform does not report it
	heapInuse uint64
	heapSys   uint64
	goSys     uint64 // everything the Go runtime obtained from the OS
	numGC     uint32
}

// readMemory samples the report once. ReadMemStats stops the world briefly,
// so it is only called after the benchmarks.
func readMemory() memoryReport {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memoryReport{peakRSS: peakRSS(), heapInuse: ms.HeapInuse,
		heapSys: ms.HeapSys, goSys: ms.Sys, numGC: ms.NumGC}
}

// print writes the report as one line of its own, in MB of 1048576 bytes
// as db_bench's MB/s:
//
//	strata.memory: peak_rss=123.4 MB heap_inuse=80.1 MB heap_sys=110.0 MB go_sys=120.3 MB gc=42
func (r memoryReport) print(w io.Writer) {
	const mb = 1 << 20
	rss := "n/a"
	if r.peakRSS >= 0 {
		rss = fmt.Sprintf("%.1f MB", float64(r.peakRSS)/mb)
	}
	fmt.Fprintf(w, "strata.memory: peak_rss=%s heap_inuse=%.1f MB heap_sys=%.1f MB go_sys=%.1f MB gc=%d\n",
		rss, float64(r.heapInuse)/mb, float64(r.heapSys)/mb, float64(r.goSys)/mb, r.numGC)
}

// writeHeapProfile writes the heap profile to name, after a GC so that its
// in-use figures are current.
func writeHeapProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	runtime.GC()
	err = pprof.WriteHeapProfile(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
