package harness

import (
	"fmt"
	"os"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stratadb/strata/internal/offheap"
)

// MemTrace samples the process's resident set every interval and keeps a
// breakdown of it taken at the highest sample: the kernel's view
// (/proc/self/status: anonymous, file-backed and shared-memory pages; the
// largest mappings of /proc/self/smaps), the Go runtime's (runtime/metrics:
// heap objects, free and unscavenged heap, stacks, the GC's goal),
// internal/offheap's mapped bytes, and an engine's own figures where its
// binding reports them (memReporter). It answers "where is the peak", which
// VmHWM alone does not.
type MemTrace struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	best int64
	snap string
	kv   kv
}

// memReporter is implemented by bindings that can say what their engine
// holds (Strata: memtables, block cache usage, pinned table metadata).
type memReporter interface{ memReport() string }

// StartMemTrace starts sampling; Stop returns the breakdown at the peak.
func StartMemTrace(d any, interval time.Duration) *MemTrace {
	t := &MemTrace{stop: make(chan struct{}), done: make(chan struct{})}
	if y, ok := d.(*ycsbDB); ok {
		t.kv = y.kv
	}
	go func() {
		defer close(t.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
				t.sample()
			}
		}
	}()
	return t
}

// Stop ends sampling and returns the breakdown at the highest sample.
func (t *MemTrace) Stop() string {
	close(t.stop)
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.snap
}

func (t *MemTrace) sample() {
	st := statusKB()
	rss := st["VmRSS"]
	if rss <= t.best+256 { // a new peak by 256 KiB at least
		return
	}
	var b strings.Builder
	mb := func(kb int64) string { return fmt.Sprintf("%.1f", float64(kb)/1024) }
	fmt.Fprintf(&b, "MEM peak at %s: VmRSS=%s RssAnon=%s RssFile=%s RssShmem=%s MB\n",
		time.Now().UTC().Format("15:04:05.0"), mb(rss), mb(st["RssAnon"]), mb(st["RssFile"]), mb(st["RssShmem"]))
	names := []string{
		"/memory/classes/heap/objects:bytes",
		"/memory/classes/heap/unused:bytes",
		"/memory/classes/heap/free:bytes",
		"/memory/classes/heap/released:bytes",
		"/memory/classes/heap/stacks:bytes",
		"/memory/classes/total:bytes",
		"/gc/heap/live:bytes",
		"/gc/heap/goal:bytes",
	}
	samples := make([]metrics.Sample, len(names))
	for i, n := range names {
		samples[i].Name = n
	}
	metrics.Read(samples)
	fmt.Fprintf(&b, "MEM   go:")
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			n := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(s.Name, "/memory/classes/"), "/gc/"), ":bytes")
			fmt.Fprintf(&b, " %s=%.1f", n, float64(s.Value.Uint64())/(1<<20))
		}
	}
	fmt.Fprintf(&b, " MB; offheap.LiveBytes=%.1f MB\n", float64(offheap.LiveBytes())/(1<<20))
	if r, ok := t.kv.(memReporter); ok {
		fmt.Fprintf(&b, "MEM   engine: %s\n", r.memReport())
	}
	b.WriteString(largestMappings(8))
	t.mu.Lock()
	t.best, t.snap = rss, b.String()
	t.mu.Unlock()
}

// statusKB returns the kB fields of /proc/self/status.
func statusKB() map[string]int64 {
	raw, err := os.ReadFile("/proc/self/status")
	out := map[string]int64{}
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ":")
		f := strings.Fields(v)
		if !ok || len(f) != 2 || f[1] != "kB" {
			continue
		}
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

// largestMappings lists the n mappings of /proc/self/smaps with the most
// resident pages: address range, size, Rss, and the file if any.
func largestMappings(n int) string {
	raw, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return ""
	}
	type mapping struct {
		head     string
		size     int64
		rss, thp int64
	}
	var ms []mapping
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			lo, hi, _ := strings.Cut(f[0], "-")
			a, _ := strconv.ParseUint(lo, 16, 64)
			z, _ := strconv.ParseUint(hi, 16, 64)
			name := ""
			if len(f) >= 6 {
				name = f[5]
			}
			ms = append(ms, mapping{head: f[0] + " " + f[1] + " " + name, size: int64(z - a)})
			continue
		}
		if len(ms) == 0 || len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "Rss:":
			ms[len(ms)-1].rss = v
		case "AnonHugePages:":
			ms[len(ms)-1].thp = v
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].rss > ms[j].rss })
	var b strings.Builder
	for i := 0; i < n && i < len(ms); i++ {
		fmt.Fprintf(&b, "MEM   map %s size=%.1f rss=%.1f thp=%.1f MB\n", ms[i].head,
			float64(ms[i].size)/(1<<20), float64(ms[i].rss)/1024, float64(ms[i].thp)/1024)
	}
	return b.String()
}
