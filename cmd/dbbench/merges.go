package main

import (
	"fmt"

	"github.com/stratadb/strata/bench/dbgen"
)

// Merge benchmarks, as db_bench's MergeRandom and ReadRandomMergeRandom:
// keys are drawn from -merge_keys (default -num), values are -value_size
// bytes (use 8 with -merge_operator=uint64add), and the op count is the
// larger of -reads and -writes, or -num when neither is given.

// readWrites is db_bench's readwrites_.
func (b *bench) readWrites() int64 {
	c := b.cfg
	if c.reads < 0 && c.writes < 0 {
		return c.num
	}
	return max(c.reads, c.writes)
}

func (b *bench) mergeKeys() uint64 {
	if b.cfg.mergeKeys < 0 {
		return uint64(max(b.cfg.num, 1))
	}
	return uint64(max(b.cfg.mergeKeys, 1))
}

// mergeRandom merges random values into random keys.
func (b *bench) mergeRandom(t *threadState) error {
	c := b.cfg
	n := b.readWrites()
	d := b.newDuration(c.duration, n)
	vg := dbgen.NewValueGen(c.compRatio, c.valueSize)
	key := make([]byte, b.keySize)
	mk := b.mergeKeys()
	var bytes int64
	for !d.done(1) {
		t.rand.Next() // database selector
		b.kg.Fill(key, t.rand.Next()%mk, int64(mk))
		if err := b.eng.Merge(key, vg.Generate(c.valueSize), b.wo); err != nil {
			return fmt.Errorf("merge error: %w", err)
		}
		bytes += int64(len(key) + c.valueSize)
		t.stats.finishedOps(1, opMerge)
	}
	t.stats.bytes += bytes
	t.stats.addMessage(fmt.Sprintf("( updates:%d)", n))
	return nil
}

// readRandomMergeRandom mixes merges (-mergereadpercent of the ops) and
// reads of random keys.
func (b *bench) readRandomMergeRandom(t *threadState) error {
	c := b.cfg
	n := b.readWrites()
	d := b.newDuration(c.duration, n)
	vg := dbgen.NewValueGen(c.compRatio, c.valueSize)
	key := make([]byte, b.keySize)
	mk := b.mergeKeys()
	var gets, merges, hits int64
	maxLen := 0
	for !d.done(1) {
		t.rand.Next() // database selector
		b.kg.Fill(key, t.rand.Next()%mk, int64(mk))
		if int(t.rand.Next()%100) < c.mergeReadPercent {
			if err := b.eng.Merge(key, vg.Generate(c.valueSize), b.wo); err != nil {
				return fmt.Errorf("merge error: %w", err)
			}
			merges++
			t.stats.finishedOps(1, opMerge)
			continue
		}
		v, ok, err := b.eng.Get(key)
		if err != nil {
			return fmt.Errorf("Get returned an error: %w", err)
		}
		if ok {
			hits++
			maxLen = max(maxLen, len(v))
		}
		gets++
		t.stats.finishedOps(1, opRead)
	}
	t.stats.addMessage(fmt.Sprintf("(reads:%d merges:%d total:%d hits:%d maxlength:%d)", gets, merges, n, hits, maxLen))
	return nil
}
