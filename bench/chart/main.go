// Command benchchart draws the median throughput of each engine, relative to
// one base engine, as grouped bars: one group per workload, one bar per
// engine. It reads the results.tsv files that scripts/run-benchmarks.sh
// (and the peer-engine harness it calls) write (tab-separated: rep, engine,
// config label, db_bench result line).
//
// It is a module of its own, so that gonum stays out of the library's
// module; from the repository root:
//
//	go build -C bench/chart -o /tmp/benchchart .
//	/tmp/benchchart -o docs/img/ratios.svg -base pebble \
//		-engines strata,rocksdb,pebble /tmp/strata-bench/*/results.tsv
//
// Workloads are named benchmark.compression (the compression is the label's
// suffix), or by the label itself when it has none (pr9407fill); the fills
// that only prepare a seek run (label seekfill.*) are skipped. A missing
// engine leaves its bar out of the group. With -table it prints, instead of
// drawing, a markdown table of the median ops/sec of each engine with
// [min-max] over reps, and the ratios of the first engine's median to the
// medians of the -vs engines.
//
// With -scale it reads instead the results.tsv of scripts/scale.sh and
// draws median micros/op against the number of keys (log x axis), one
// line with points per engine and workload (see scale.go):
//
//	/tmp/benchchart -scale -o scale.svg,scale.png /tmp/scale/out/results.tsv
//	/tmp/benchchart -scale -table /tmp/scale/out/results.tsv
//
// -o takes a comma-separated list of files; each gets the chart.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"image/color"
	"log"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

var resultLine = regexp.MustCompile(`^(\S+)\s*:\s*[\d.]+ micros/op (\d+) ops/sec`)

// samples maps workload -> engine -> ops/sec of every rep.
type samples map[string]map[string][]float64

func main() {
	out := flag.String("o", "ratios.svg", "output files, comma-separated (.svg or .png); -scale: scale.svg")
	base := flag.String("base", "pebble", "engine whose median is 1.0")
	engines := flag.String("engines", "strata,rocksdb,pebble", "engines, in bar order")
	only := flag.String("workloads", "", "comma-separated workloads to draw, in order; empty = all")
	title := flag.String("title", "", "chart title")
	table := flag.Bool("table", false, "print a markdown table instead of drawing")
	vs := flag.String("vs", "rocksdb,pebble", "with -table: engines the first engine is compared with")
	scale := flag.Bool("scale", false, "read scripts/scale.sh results: micros/op against N (default -engines strata,pebble, -workloads fillrandom,readrandom,seekrandom)")
	logY := flag.Bool("logy", false, "with -scale: log y axis")
	flag.Parse()

	if *scale {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		engs, wls := "strata,pebble", "fillrandom,readrandom,seekrandom"
		if set["engines"] {
			engs = *engines
		}
		if set["workloads"] {
			wls = *only
		}
		r, err := readScale(flag.Args())
		if err != nil {
			log.Fatal(err)
		}
		if *table {
			if len(r.ns) == 0 {
				log.Fatal("no rows")
			}
			printScaleTable(os.Stdout, r, strings.Split(engs, ","), strings.Split(wls, ","))
			return
		}
		outPath := *out
		if !set["o"] {
			outPath = "scale.svg"
		}
		if err := drawScale(r, strings.Split(engs, ","), strings.Split(wls, ","), *title, *logY, strings.Split(outPath, ",")); err != nil {
			log.Fatal(err)
		}
		return
	}

	s := samples{}
	var order []string
	for _, path := range flag.Args() {
		if err := s.read(path, &order); err != nil {
			log.Fatal(err)
		}
	}
	if *only != "" {
		order = strings.Split(*only, ",")
	}
	if *table {
		printTable(s, order, strings.Split(*engines, ","), strings.Split(*vs, ","))
		return
	}
	if err := draw(s, order, strings.Split(*engines, ","), *base, *title, strings.Split(*out, ",")); err != nil {
		log.Fatal(err)
	}
}

func (s samples) read(path string, order *[]string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Split(sc.Text(), "\t")
		if len(parts) < 4 || strings.HasPrefix(parts[2], "seekfill") {
			continue
		}
		m := resultLine.FindStringSubmatch(parts[3])
		if m == nil {
			continue
		}
		ops, _ := strconv.ParseFloat(m[2], 64)
		w := parts[2] // a label without a compression suffix names the workload
		if i := strings.LastIndexByte(parts[2], '.'); i >= 0 {
			w = m[1] + parts[2][i:]
		}
		if s[w] == nil {
			s[w] = map[string][]float64{}
			*order = append(*order, w)
		}
		s[w][parts[1]] = append(s[w][parts[1]], ops)
	}
	return sc.Err()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	c := append([]float64(nil), xs...)
	sort.Float64s(c)
	if n := len(c); n%2 == 1 {
		return c[n/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

func printTable(s samples, order, engines, vs []string) {
	fmt.Print("| workload |")
	for _, e := range engines {
		fmt.Printf(" %s |", e)
	}
	for _, e := range vs {
		fmt.Printf(" %s/%s |", engines[0], e)
	}
	fmt.Print("\n|---|" + strings.Repeat("--:|", len(engines)+len(vs)) + "\n")
	for _, wl := range order {
		fmt.Printf("| %s |", wl)
		for _, e := range engines {
			xs := s[wl][e]
			switch len(xs) {
			case 0:
				fmt.Print(" – |")
			case 1:
				fmt.Printf(" %s (n=1) |", kilo(xs[0]))
			default:
				lo, hi := xs[0], xs[0]
				for _, x := range xs {
					lo, hi = min(lo, x), max(hi, x)
				}
				fmt.Printf(" %s [%s–%s] |", kilo(median(xs)), kilo(lo), kilo(hi))
			}
		}
		for _, e := range vs {
			if b := median(s[wl][e]); b > 0 && len(s[wl][engines[0]]) > 0 {
				fmt.Printf(" %.2f× |", median(s[wl][engines[0]])/b)
			} else {
				fmt.Print(" – |")
			}
		}
		fmt.Println()
	}
}

// kilo formats ops/sec as 123K or 4.56M.
func kilo(x float64) string {
	if x >= 1e6 {
		return fmt.Sprintf("%.2fM", x/1e6)
	}
	return fmt.Sprintf("%.0fK", x/1e3)
}

func draw(s samples, order, engines []string, base, title string, outs []string) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = fmt.Sprintf("median ops/sec relative to %s", base)
	w := vg.Points(60 / float64(len(engines)))
	for i, eng := range engines {
		vals := make(plotter.Values, len(order))
		for j, wl := range order {
			if b := median(s[wl][base]); b > 0 {
				vals[j] = median(s[wl][eng]) / b
			}
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		bars.LineStyle.Width = 0
		bars.Color = plotutil.Color(i)
		bars.Offset = w * vg.Length(float64(i)-float64(len(engines)-1)/2)
		p.Add(bars)
		p.Legend.Add(eng, bars)
	}
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Color = color.Gray{Y: 96}
	one.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(one)
	p.Legend.Top = true
	p.Legend.Left = true
	p.NominalX(order...)
	p.X.Tick.Label.Rotation = 0.6
	p.X.Tick.Label.XAlign = -0.9
	p.X.Tick.Label.YAlign = -0.6
	for _, out := range outs {
		if err := p.Save(vg.Points(float64(72*len(order)+100)), 4*vg.Inch, out); err != nil {
			return err
		}
	}
	return nil
}
