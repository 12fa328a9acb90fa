package main

import (
	"fmt"
	"io"
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
// or "(failed)" when it has none, then the write-amplification line where
// the engine counts its writes; no result line.
func (b *bench) printStats() {
	for _, p := range statsProperties[:2] {
		if v, ok := b.eng.Property(p); ok {
			fmt.Fprintf(b.out, "\n%s\n", strings.TrimRight(v, "\n"))
			printWriteAmp(b.out, b.eng)
			return
		}
	}
	fmt.Fprintf(b.out, "\n(failed)\n")
}

// writeCounts are the byte counters behind write amplification, counted
// from Open.
type writeCounts struct {
	user    uint64 // batch bytes of user writes
	wal     uint64 // bytes of records written to the WAL
	flush   uint64 // table bytes written by memtable flushes
	compact uint64 // table bytes written by compactions (moves excluded)
}

// writeCounter is implemented by engines that count their writes.
type writeCounter interface {
	WriteCounts() writeCounts
}

// writeAmp is table bytes written (flushes and compactions) over the
// bytes the user wrote; 0 before any write.
func (c writeCounts) writeAmp() float64 {
	if c.user == 0 {
		return 0
	}
	return float64(c.flush+c.compact) / float64(c.user)
}

// printWriteAmp prints, where the engine counts its writes, one line of
// its own that scripts can grep (bench/peers prints the same fields for
// Pebble as "pebble.stats: ..."):
//
//	strata.stats: write_amp=3.214 user_bytes=123 wal_bytes=123 flush_bytes=100 compact_bytes=295
//
// write_amp is (flush_bytes+compact_bytes)/user_bytes: the WAL is not
// counted, nor are trivial moves.
func printWriteAmp(w io.Writer, e engine) {
	wc, ok := e.(writeCounter)
	if !ok {
		return
	}
	c := wc.WriteCounts()
	fmt.Fprintf(w, "strata.stats: write_amp=%.3f user_bytes=%d wal_bytes=%d flush_bytes=%d compact_bytes=%d\n",
		c.writeAmp(), c.user, c.wal, c.flush, c.compact)
}

// compactionWaiter is implemented by engines that can tell when their
// background work is done.
type compactionWaiter interface {
	WaitForCompactions() error
}

// waitForCompactions is db_bench's "waitforcompaction": untimed, no result
// line; it returns once the engine has no flush or compaction running or
// due. Engines that cannot tell return at once.
func (b *bench) waitForCompactions() error {
	if w, ok := b.eng.(compactionWaiter); ok {
		return w.WaitForCompactions()
	}
	return nil
}
