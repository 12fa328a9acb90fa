package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// writePlot draws throughput and p99 latency over time as two stacked
// panels into an SVG file, so stalls show at a glance. It writes the SVG
// itself (frame, grid, tick labels, one polyline a panel) so that no
// plotting library enters the module that library users download.
func writePlot(path string, points []reportPoint) error {
	var b bytes.Buffer
	svgPlot(&b, points)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("report plot: %w", err)
	}
	return nil
}

// The figure's geometry in SVG user units (pixels).
const (
	plotW, plotH       = 768, 576
	panelH             = plotH / 2
	marginL, marginR   = 80, 20
	marginT, marginB   = 30, 45
	plotTicks          = 4
	plotStroke, plotBG = "#1f77b4", "white"
)

func svgPlot(w io.Writer, points []reportPoint) {
	fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"+
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
		plotW, plotH, plotW, plotH)
	fmt.Fprintf(w, "<rect width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", plotW, plotH, plotBG)
	xmax := 0.0
	for _, p := range points {
		xmax = math.Max(xmax, p.secs)
	}
	svgPanel(w, 0, "throughput", "ops/sec", "", xmax, points, func(p reportPoint) float64 { return p.opsPerS })
	svgPanel(w, panelH, "p99 latency", "micros", "seconds", xmax, points, func(p reportPoint) float64 { return p.p99Micro })
	io.WriteString(w, "</svg>\n")
}

// svgPanel draws one panel whose top edge is at y = top.
func svgPanel(w io.Writer, top float64, title, yLabel, xLabel string, xmax float64, points []reportPoint, y func(reportPoint) float64) {
	left, right := float64(marginL), float64(plotW-marginR)
	bottom, upper := top+panelH-marginB, top+marginT
	ymax := 0.0
	for _, p := range points {
		ymax = math.Max(ymax, y(p))
	}
	xTop, yTop := niceCeil(xmax), niceCeil(ymax)
	px := func(v float64) float64 { return left + (right-left)*v/xTop }
	py := func(v float64) float64 { return bottom - (bottom-upper)*v/yTop }

	fmt.Fprintf(w, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"14\">%s</text>\n",
		(left+right)/2, top+18, title)
	for i := 0; i <= plotTicks; i++ {
		yv, xv := yTop*float64(i)/plotTicks, xTop*float64(i)/plotTicks
		fmt.Fprintf(w, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left, py(yv), right, py(yv))
		fmt.Fprintf(w, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left-6, py(yv)+4, tickLabel(yv))
		fmt.Fprintf(w, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", px(xv), upper, px(xv), bottom)
		fmt.Fprintf(w, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", px(xv), bottom+16, tickLabel(xv))
	}
	fmt.Fprintf(w, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"black\"/>\n",
		left, upper, right-left, bottom-upper)
	fmt.Fprintf(w, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\">%s</text>\n",
		left-58, (upper+bottom)/2, yLabel)
	if xLabel != "" {
		fmt.Fprintf(w, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", (left+right)/2, bottom+34, xLabel)
	}
	if len(points) == 0 {
		return
	}
	var sb strings.Builder
	for i, p := range points {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%.1f,%.1f", px(p.secs), py(y(p)))
	}
	fmt.Fprintf(w, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>\n", plotStroke, sb.String())
}

// niceCeil rounds v > 0 up to 1, 2, 2.5 or 5 times a power of ten (1 for
// v <= 0), so that ticks at quarters of it read well.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

func tickLabel(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%gk", v/1e3)
	default:
		return fmt.Sprintf("%g", v)
	}
}
