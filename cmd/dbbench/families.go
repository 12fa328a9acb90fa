package main

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
)

// Column families, as db_bench's DBWithColumnFamilies:
// -num_column_families families named ColumnFamilyName(i); at any moment
// -num_hot_column_families of them (0: all) take the operations. A key's
// family is a function of its number (GetCfh(key number)): uniform,
// number % hot, or by -column_family_distribution, the first family whose
// running percentage reaches number % 100. So a read finds the family the
// write of the same number chose. With fewer hot families than families, a
// write benchmark creates the next set of hot families each time it enters
// a new stage (its ops split evenly among num_column_families/num_hot
// stages), and later operations use that newest set, as db_bench's
// CreateNewCf.
//
// db_bench routes only its writes (DoWrite) and Gets (readrandom) by
// family; its readseq and seekrandom read the default family alone. Here
// seekrandom seeks in the family of its seek key and readseq/readreverse
// scan the hot families one after the other (at most -reads entries in
// all), so that with several families those benchmarks read what the
// writes wrote. The other benchmarks (deleterandom, mergerandom,
// multireadrandom, readwhilewriting's writer) use the default family, as
// db_bench's.

// columnFamilyName is db_bench's ColumnFamilyName(i).
func columnFamilyName(i int) string {
	if i == 0 {
		return "default"
	}
	return fmt.Sprintf("column_family_name_%06d", i)
}

// cfEngine is implemented by engines with column families. Families are
// numbered as ColumnFamilyName's argument; only created ones may be named.
type cfEngine interface {
	// WriteCF is Write with keys[i] in family cfs[i], in one atomic batch.
	WriteCF(cfs []int, keys, vals [][]byte, wo writeOpts) error
	GetCF(cf int, key []byte) ([]byte, bool, error)
	NewIteratorCF(cf int, ro readOpts) iter
	// CreateFamilies makes sure families [0, n) exist.
	CreateFamilies(n int) error
}

// families is the bench's family selector (nil with one family).
type families struct {
	total, hot int
	probs      []int        // percentages per hot family; nil = uniform
	created    atomic.Int64 // families [0, created) exist
}

// parseFamilies validates the family flags into c.
func (c *config) parseFamilies() error {
	if c.numColumnFamilies < 1 {
		return fmt.Errorf("-num_column_families must be >= 1")
	}
	if c.numHotColumnFamilies < 0 {
		return fmt.Errorf("-num_hot_column_families must be >= 0")
	}
	hot := c.hotFamilies()
	c.cfProbs = nil
	if c.cfDistribution == "" || c.numColumnFamilies == 1 {
		return nil
	}
	sum := 0
	for _, s := range strings.Split(c.cfDistribution, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || p < 0 {
			return fmt.Errorf("-column_family_distribution: %q is not a percentage", s)
		}
		c.cfProbs = append(c.cfProbs, p)
		sum += p
	}
	if sum != 100 {
		return fmt.Errorf("column_family_distribution items must sum to 100")
	}
	if len(c.cfProbs) != hot {
		return fmt.Errorf("got %d column_family_distribution items; expected %d", len(c.cfProbs), hot)
	}
	return nil
}

// hotFamilies is db_bench's num_hot: -num_hot_column_families when it is
// in (0, num_column_families), else all of them.
func (c *config) hotFamilies() int {
	if c.numHotColumnFamilies > 0 && c.numHotColumnFamilies < c.numColumnFamilies {
		return c.numHotColumnFamilies
	}
	return c.numColumnFamilies
}

func newFamilies(c *config) *families {
	if c.numColumnFamilies <= 1 {
		return nil
	}
	f := &families{total: c.numColumnFamilies, hot: c.hotFamilies(), probs: c.cfProbs}
	f.created.Store(int64(f.hot))
	return f
}

// of returns the family of key number n, db_bench's GetCfh.
func (f *families) of(n uint64) int {
	off := 0
	if f.probs != nil {
		sum, r := 0, int(n%100)
		for sum+f.probs[off] < r {
			sum += f.probs[off]
			off++
		}
	} else {
		off = int(n % uint64(f.hot))
	}
	return int(f.created.Load()) - f.hot + off
}

// stages returns the ops per stage of a write benchmark of maxOps ops, 0
// when all families are hot (no new ones are created).
func (f *families) opsPerStage(maxOps int64) int64 {
	if f == nil || f.hot >= f.total || maxOps <= 0 {
		return 0
	}
	return (maxOps-1)/int64(f.total/f.hot) + 1
}

// enterStage creates the hot families of stage (db_bench's CreateNewCf):
// families up to (stage+1)*hot, never past total.
func (f *families) enterStage(e cfEngine, stage int64) error {
	want := min((stage+1)*int64(f.hot), int64(f.total))
	if want <= f.created.Load() {
		return nil
	}
	if err := e.CreateFamilies(int(want)); err != nil {
		return fmt.Errorf("create column family error: %w", err)
	}
	for {
		cur := f.created.Load()
		if cur >= want || f.created.CompareAndSwap(cur, want) {
			return nil
		}
	}
}
