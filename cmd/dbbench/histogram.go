package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync/atomic"
)

// histBuckets are db_bench's (monitoring/histogram.cc) bucket upper limits
// in microseconds: 1, 2, then each ×1.5 rounded down to two significant
// digits, up to the largest uint64.
var histBuckets = func() []uint64 {
	b := []uint64{1, 2}
	v := 2.0
	for {
		v *= 1.5
		if v > math.MaxUint64 {
			return b
		}
		x := uint64(v)
		pow := uint64(1)
		for x/10 > 10 {
			x /= 10
			pow *= 10
		}
		b = append(b, x*pow)
	}
}()

// bucketIndex returns the first bucket whose limit is >= v.
func bucketIndex(v uint64) int {
	last := len(histBuckets) - 1
	if v >= histBuckets[last] {
		return last
	}
	return sort.Search(last, func(i int) bool { return histBuckets[i] >= v })
}

// histogram records latencies in microseconds. One thread writes it
// (Add); Merge and String run after the writer is done.
type histogram struct {
	min, max, num, sum uint64
	sumSquares         float64
	buckets            []uint64 // len(histBuckets)
}

func newHistogram() *histogram {
	return &histogram{min: math.MaxUint64, buckets: make([]uint64, len(histBuckets))}
}

func (h *histogram) Add(v uint64) {
	h.buckets[bucketIndex(v)]++
	h.min = min(h.min, v)
	h.max = max(h.max, v)
	h.num++
	h.sum += v
	h.sumSquares += float64(v) * float64(v)
}

func (h *histogram) Merge(o *histogram) {
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
	h.num += o.num
	h.sum += o.sum
	h.sumSquares += o.sumSquares
	for i, c := range o.buckets {
		h.buckets[i] += c
	}
}

func (h *histogram) Average() float64 {
	if h.num == 0 {
		return 0
	}
	return float64(h.sum) / float64(h.num)
}

func (h *histogram) StdDev() float64 {
	if h.num == 0 {
		return 0
	}
	n, s := float64(h.num), float64(h.sum)
	return math.Sqrt(max((h.sumSquares*n-s*s)/(n*n), 0))
}

// Percentile interpolates linearly inside the bucket holding the p-th
// percentile and clamps to [min, max], as db_bench does.
func (h *histogram) Percentile(p float64) float64 {
	return percentileOf(h.buckets, h.num, h.min, h.max, p)
}

func percentileOf(buckets []uint64, num, lo, hi uint64, p float64) float64 {
	threshold := float64(num) * p / 100
	var cum uint64
	for b, c := range buckets {
		cum += c
		if float64(cum) < threshold {
			continue
		}
		left := uint64(0)
		if b > 0 {
			left = histBuckets[b-1]
		}
		right := histBuckets[b]
		pos := 0.0
		if c != 0 {
			pos = (threshold - float64(cum-c)) / float64(c)
		}
		r := float64(left) + float64(right-left)*pos
		return min(max(r, float64(lo)), float64(hi))
	}
	return float64(hi)
}

// String formats the histogram in db_bench's layout.
func (h *histogram) String() string {
	var sb strings.Builder
	lo, hi := h.min, h.max
	if h.num == 0 {
		lo, hi = 0, 0
	}
	fmt.Fprintf(&sb, "Count: %d Average: %.4f  StdDev: %.2f\n", h.num, h.Average(), h.StdDev())
	fmt.Fprintf(&sb, "Min: %d  Median: %.4f  Max: %d\n", lo, h.Percentile(50), hi)
	fmt.Fprintf(&sb, "Percentiles: P50: %.2f P75: %.2f P99: %.2f P99.9: %.2f P99.99: %.2f\n",
		h.Percentile(50), h.Percentile(75), h.Percentile(99), h.Percentile(99.9), h.Percentile(99.99))
	sb.WriteString("------------------------------------------------------\n")
	if h.num == 0 {
		return sb.String()
	}
	mult := 100 / float64(h.num)
	var cum uint64
	for b, c := range h.buckets {
		if c == 0 {
			continue
		}
		cum += c
		open, left := '(', uint64(0)
		if b == 0 {
			open = '['
		} else {
			left = histBuckets[b-1]
		}
		fmt.Fprintf(&sb, "%c %7d, %7d ] %8d %7.3f%% %7.3f%% ", open, left, histBuckets[b], c, mult*float64(c), mult*float64(cum))
		sb.WriteString(strings.Repeat("#", int(mult*float64(c)/5+0.5)))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// intervalHist is a histogram many threads add to at once, read by the
// reporter: it only counts per bucket, with atomics.
type intervalHist struct {
	buckets []atomic.Uint64 // len(histBuckets)
}

func newIntervalHist() *intervalHist {
	return &intervalHist{buckets: make([]atomic.Uint64, len(histBuckets))}
}

func (h *intervalHist) Add(v uint64) { h.buckets[bucketIndex(v)].Add(1) }

// snapshot copies the cumulative bucket counts into dst.
func (h *intervalHist) snapshot(dst []uint64) {
	for i := range h.buckets {
		dst[i] = h.buckets[i].Load()
	}
}
