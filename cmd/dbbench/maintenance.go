package main

import (
	"fmt"
	"strings"
)

// compact compacts the whole key space; each thread asks once, as db_bench.
func (b *bench) compact(t *threadState) error {
	if err := b.eng.CompactRange(); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// statsProperties are the engine properties "stats" and -statistics try,
// in order; the engine answers those it knows.
var statsProperties = []string{"strata.stats", "rocksdb.stats", "strata.levelstats",
	"rocksdb.levelstats", "strata.block-cache-stats", "strata.compaction-stats"}

// printStats is db_bench's "stats" benchmark: the engine's stats property,
// or "(failed)" when it has none; no result line.
func (b *bench) printStats() {
	for _, p := range statsProperties[:2] {
		if v, ok := b.eng.Property(p); ok {
			fmt.Fprintf(b.out, "\n%s\n", strings.TrimRight(v, "\n"))
			return
		}
	}
	fmt.Fprintf(b.out, "\n(failed)\n")
}
