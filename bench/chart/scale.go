package main

// The -scale mode: how time per op grows with the number of keys. It reads
// the results.tsv files that scripts/scale.sh writes, with a header row and
// the columns
//
//	engine  N  workload  micros_op  ops_sec  maxrss_kb  db_bytes  write_amp  line
//
// (write_amp and db_bytes are "-" where they do not apply, micros_op is
// "-" for a failed run) and draws micros/op against N on a log x axis, one
// line with points per engine and workload; or, with -table, prints a
// markdown table of the medians over reps.

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// scaleKey names one cell: an engine's workload at N keys.
type scaleKey struct {
	engine, workload string
	n                int64
}

// scaleRuns holds every rep of every cell.
type scaleRuns struct {
	cells     map[scaleKey]*scaleCell
	ns        []int64  // sorted
	workloads []string // in order of first appearance
}

type scaleCell struct {
	micros, ops, rssKB, dbBytes, writeAmp []float64
}

var scaleHeader = []string{"engine", "N", "workload", "micros_op", "ops_sec", "maxrss_kb", "db_bytes", "write_amp"}

func readScale(paths []string) (*scaleRuns, error) {
	r := &scaleRuns{cells: map[scaleKey]*scaleCell{}}
	seenN := map[int64]bool{}
	for _, path := range paths {
		if err := r.read(path, seenN); err != nil {
			return nil, err
		}
	}
	sort.Slice(r.ns, func(i, j int) bool { return r.ns[i] < r.ns[j] })
	return r, nil
}

func (r *scaleRuns) read(path string, seenN map[int64]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		parts := strings.Split(sc.Text(), "\t")
		if len(parts) < len(scaleHeader) || parts[0] == "engine" {
			continue // header, blank or foreign line
		}
		n, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("%s:%d: N %q: not a positive integer", path, line, parts[1])
		}
		k := scaleKey{engine: parts[0], workload: parts[2], n: n}
		c := r.cells[k]
		if c == nil {
			c = &scaleCell{}
			r.cells[k] = c
		}
		if !seenN[n] {
			seenN[n] = true
			r.ns = append(r.ns, n)
		}
		if !contains(r.workloads, k.workload) {
			r.workloads = append(r.workloads, k.workload)
		}
		for i, dst := range []*[]float64{&c.micros, &c.ops, &c.rssKB, &c.dbBytes, &c.writeAmp} {
			if v, err := strconv.ParseFloat(parts[3+i], 64); err == nil {
				*dst = append(*dst, v)
			}
		}
	}
	return sc.Err()
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// cell returns the cell of k, or an empty one.
func (r *scaleRuns) cell(k scaleKey) *scaleCell {
	if c := r.cells[k]; c != nil {
		return c
	}
	return &scaleCell{}
}

// humanN renders a key count as 300K, 1M or 2.5M.
func humanN(n int64) string {
	switch {
	case n >= 1e6 && n%1e6 == 0:
		return fmt.Sprintf("%dM", n/1e6)
	case n >= 1e6:
		return strconv.FormatFloat(float64(n)/1e6, 'g', 3, 64) + "M"
	case n >= 1e3 && n%1e3 == 0:
		return fmt.Sprintf("%dK", n/1e3)
	default:
		return strconv.FormatInt(n, 10)
	}
}

// drawScale draws median micros/op against N for every engine and
// workload that has data: one colour per workload, one dash pattern and
// glyph per engine. Each output path (.svg, .png, ...) gets the chart.
func drawScale(r *scaleRuns, engines, workloads []string, title string, logY bool, outs []string) error {
	if len(r.ns) == 0 {
		return fmt.Errorf("no rows")
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "keys (N), log scale"
	p.Y.Label.Text = "median micros/op"
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	for _, n := range r.ns {
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: humanN(n)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	// Keep the end points off the frame: a log axis needs positive bounds.
	p.X.Min, p.X.Max = float64(r.ns[0])/1.3, float64(r.ns[len(r.ns)-1])*1.3
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	} else {
		p.Y.Min = 0
	}
	dashes := [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}
	drawn := 0
	for wi, wl := range workloads {
		for ei, eng := range engines {
			var xys plotter.XYs
			for _, n := range r.ns {
				if c := r.cell(scaleKey{eng, wl, n}); len(c.micros) > 0 {
					if y := median(c.micros); y > 0 || !logY {
						xys = append(xys, plotter.XY{X: float64(n), Y: y})
					}
				}
			}
			if len(xys) == 0 {
				continue
			}
			line, points, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			line.Color = plotutil.Color(wi)
			line.Width = vg.Points(1.5)
			line.Dashes = dashes[ei%len(dashes)]
			points.Color = plotutil.Color(wi)
			points.Shape = plotutil.Shape(ei)
			points.Radius = vg.Points(3)
			p.Add(line, points)
			p.Legend.Add(eng+" "+wl, line, points)
			drawn++
		}
	}
	if drawn == 0 {
		return fmt.Errorf("no rows for engines %v and workloads %v", engines, workloads)
	}
	if logY {
		// The Y bounds of a log axis must be positive: pad the data's.
		p.Y.Min, p.Y.Max = p.Y.Min/1.2, p.Y.Max*3 // room for the legend
	} else {
		p.Y.Max *= 1.45 // room for the legend, top left
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.ThumbnailWidth = vg.Points(30)
	p.Add(plotter.NewGrid())
	for _, out := range outs {
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, out); err != nil {
			return err
		}
	}
	return nil
}

// printScaleTable prints, per workload and N, each engine's median
// micros/op, the first engine's median ops/sec over each other engine's
// (with, in brackets, that ratio over the same ratio at the smallest N: the
// drift that "the same ratios hold within 10%" bounds), and each engine's
// median peak RSS, database size and write amplification.
func printScaleTable(w io.Writer, r *scaleRuns, engines, workloads []string) {
	fmt.Fprint(w, "| workload | N |")
	for _, e := range engines {
		fmt.Fprintf(w, " %s µs/op |", e)
	}
	for _, e := range engines[1:] {
		fmt.Fprintf(w, " %s/%s (vs %s) |", engines[0], e, humanN(r.ns[0]))
	}
	for _, col := range []string{"peak RSS MB", "DB GB", "write amp"} {
		for _, e := range engines {
			fmt.Fprintf(w, " %s %s |", e, col)
		}
	}
	fmt.Fprint(w, "\n|---|--:|"+strings.Repeat("--:|", len(engines)-1+4*len(engines))+"\n")
	num := func(xs []float64, scale float64, prec int) string {
		if len(xs) == 0 {
			return "–"
		}
		return strconv.FormatFloat(median(xs)/scale, 'f', prec, 64)
	}
	ratio := func(wl string, n int64, other string) float64 {
		a, b := median(r.cell(scaleKey{engines[0], wl, n}).ops), median(r.cell(scaleKey{other, wl, n}).ops)
		if a <= 0 || b <= 0 {
			return math.NaN()
		}
		return a / b
	}
	for _, wl := range workloads {
		for _, n := range r.ns {
			cells := make([]*scaleCell, len(engines))
			has := false
			for i, e := range engines {
				cells[i] = r.cell(scaleKey{e, wl, n})
				has = has || len(cells[i].micros)+len(cells[i].rssKB) > 0
			}
			if !has {
				continue
			}
			fmt.Fprintf(w, "| %s | %s |", wl, humanN(n))
			for _, c := range cells {
				fmt.Fprintf(w, " %s |", num(c.micros, 1, 3))
			}
			for _, e := range engines[1:] {
				q, q0 := ratio(wl, n, e), ratio(wl, r.ns[0], e)
				switch {
				case math.IsNaN(q):
					fmt.Fprint(w, " – |")
				case math.IsNaN(q0):
					fmt.Fprintf(w, " %.2f× |", q)
				default:
					fmt.Fprintf(w, " %.2f× (%.2f) |", q, q/q0)
				}
			}
			for _, c := range cells {
				fmt.Fprintf(w, " %s |", num(c.rssKB, 1024, 0))
			}
			for _, c := range cells {
				fmt.Fprintf(w, " %s |", num(c.dbBytes, 1e9, 2))
			}
			for _, c := range cells {
				fmt.Fprintf(w, " %s |", num(c.writeAmp, 1, 2))
			}
			fmt.Fprintln(w)
		}
	}
}
