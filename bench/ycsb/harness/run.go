package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/client"
	"github.com/pingcap/go-ycsb/pkg/measurement"
	"github.com/pingcap/go-ycsb/pkg/prop"
	_ "github.com/pingcap/go-ycsb/pkg/workload" // registers the "core" workload
	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

// Workloads holds YCSB's core workloads A-F as upstream YCSB defines them
// (workloads/workloada..f in brianfrankcooper/YCSB). go-ycsb v1.0.3's
// copies of those files use uniform requests and maxscanlength=1, so the
// upstream values are set here instead: zipfian requests (D: latest), E
// with scans of 1-100 records, uniform in length.
var Workloads = map[string]map[string]string{
	"a": {"readproportion": "0.5", "updateproportion": "0.5", "requestdistribution": "zipfian"},
	"b": {"readproportion": "0.95", "updateproportion": "0.05", "requestdistribution": "zipfian"},
	"c": {"readproportion": "1", "requestdistribution": "zipfian"},
	"d": {"readproportion": "0.95", "insertproportion": "0.05", "requestdistribution": "latest"},
	"e": {"scanproportion": "0.95", "insertproportion": "0.05", "requestdistribution": "zipfian",
		"maxscanlength": "100", "scanlengthdistribution": "uniform"},
	"f": {"readproportion": "0.5", "readmodifywriteproportion": "0.5", "requestdistribution": "zipfian"},
}

// Params are the properties every phase shares.
type Params struct {
	Records int64
	Ops     int64
	Threads int
}

// Properties returns the go-ycsb properties of one phase: workload "" is
// the load phase. Every proportion is set explicitly, since go-ycsb's
// defaults (read 0.95, update 0.05) would otherwise leak into workloads
// that name fewer.
func (pr Params) Properties(name string) *properties.Properties {
	p := properties.NewProperties()
	set := func(k, v string) {
		if _, _, err := p.Set(k, v); err != nil {
			panic(err)
		}
	}
	set(prop.Workload, "core")
	set(prop.RecordCount, strconv.FormatInt(pr.Records, 10))
	set(prop.OperationCount, strconv.FormatInt(pr.Ops, 10))
	set(prop.ThreadCount, strconv.Itoa(pr.Threads))
	set(prop.FieldCount, "10")
	set(prop.FieldLength, "100")
	set(prop.ReadAllFields, "true")
	set(prop.InsertOrder, "hashed")
	set(prop.MeasurementType, "histogram")
	set(prop.OutputStyle, "json")
	// One summary at the end of each phase rather than every 10 s.
	set(prop.LogInterval, "100000")
	for _, k := range []string{prop.ReadProportion, prop.UpdateProportion, prop.InsertProportion,
		prop.ScanProportion, prop.ReadModifyWriteProportion} {
		set(k, "0")
	}
	if name == "" {
		set(prop.DoTransactions, "false")
		return p
	}
	set(prop.DoTransactions, "true")
	for k, v := range Workloads[name] {
		set(k, v)
	}
	return p
}

// OpStats is one row of go-ycsb's histogram summary; latencies in us.
type OpStats struct {
	Op                                             string
	Count                                          int64
	Avg, Min, Max, P50, P90, P95, P99, P999, P9999 int64
}

// Result is one phase's outcome.
type Result struct {
	Phase   string // "load" or the workload letter
	Ops     int64  // operations the client ran (its operationcount or recordcount)
	Seconds float64
	// CPUSeconds is the process's CPU time over the phase, when the
	// caller measured it (cmd/ycsb does).
	CPUSeconds float64
	Stats      []OpStats // sorted by Op; TOTAL is every DB call
}

// OpsPerSec is YCSB's overall throughput: the client's operations over the
// phase's wall time.
func (r Result) OpsPerSec() float64 { return float64(r.Ops) / r.Seconds }

// Op returns the row for op, and whether there is one.
func (r Result) Op(op string) (OpStats, bool) {
	for _, s := range r.Stats {
		if s.Op == op {
			return s, true
		}
	}
	return OpStats{}, false
}

// RunPhase runs one phase (name "" loads) against d with go-ycsb's client,
// measuring every call through go-ycsb's DbWrapper and histograms.
func RunPhase(ctx context.Context, pr Params, name string, d ycsb.DB) (Result, error) {
	p := pr.Properties(name)
	tmp, err := os.MkdirTemp("", "ycsb-measure")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "summary.json")
	if _, _, err := p.Set(prop.MeasurementRawOutputFile, out); err != nil {
		return Result{}, err
	}
	measurement.InitMeasure(p)
	wl, err := ycsb.GetWorkloadCreator("core").Create(p)
	if err != nil {
		return Result{}, err
	}
	defer wl.Close()

	ops := pr.Ops
	phase := name
	if name == "" {
		ops, phase = pr.Records, "load"
	}
	start := time.Now()
	client.NewClient(p, wl, client.DbWrapper{DB: d}).Run(ctx)
	secs := time.Since(start).Seconds()
	measurement.Output()

	raw, err := os.ReadFile(out)
	if err != nil {
		return Result{}, err
	}
	stats, err := parseSummary(raw)
	if err != nil {
		return Result{}, fmt.Errorf("phase %s: %w", phase, err)
	}
	return Result{Phase: phase, Ops: ops, Seconds: secs, Stats: stats}, nil
}

// parseSummary reads go-ycsb's json output style: one object per
// operation, keyed by its header ("Operation", "Count", "99th(us)", ...).
func parseSummary(raw []byte) ([]OpStats, error) {
	var rows []map[string]string
	if len(strings.TrimSpace(string(raw))) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("go-ycsb summary %q: %w", raw, err)
	}
	var res []OpStats
	for _, r := range rows {
		var firstErr error
		num := func(k string) int64 {
			n, err := strconv.ParseInt(r[k], 10, 64)
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("go-ycsb summary field %s=%q: %w", k, r[k], err)
			}
			return n
		}
		s := OpStats{Op: r["Operation"], Count: num("Count"), Avg: num("Avg(us)"), Min: num("Min(us)"),
			Max: num("Max(us)"), P50: num("50th(us)"), P90: num("90th(us)"), P95: num("95th(us)"),
			P99: num("99th(us)"), P999: num("99.9th(us)"), P9999: num("99.99th(us)")}
		if firstErr != nil {
			return nil, firstErr
		}
		res = append(res, s)
	}
	sort.Slice(res, func(i, j int) bool { return res[i].Op < res[j].Op })
	return res, nil
}

// PeakRSS returns the process's peak resident set (VmHWM) in bytes.
func PeakRSS() (int64, error) {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest) // "123456 kB"
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("/proc/self/status: odd VmHWM line %q", line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/self/status: no VmHWM line")
}
