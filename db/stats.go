package db

import (
	"sync/atomic"

	"github.com/stratadb/strata/internal/version"
)

// dbStats are the engine's counters, read by GetProperty.
type dbStats struct {
	writes, keysWritten, bytesWritten atomic.Uint64
	flushes, flushMicros              atomic.Uint64
	stalls, stallMicros               atomic.Uint64
	tablesOpened                      atomic.Uint64
	// tableReadersMem is the metadata the open table readers pin (their
	// PinnedBytes), added at open and removed at close.
	tableReadersMem                atomic.Int64
	filterChecks, filterUseful     atomic.Uint64
	prefixFastPath, prefixSlowPath atomic.Uint64
	prefixIncompatible             atomic.Uint64
	compactions, compactionMicros  atomic.Uint64
	// subcompactions counts the key ranges of split compactions (tests
	// read it; no public metric yet).
	subcompactions atomic.Uint64
	// Read by Metrics (metrics.go).
	flushBytes                       atomic.Uint64
	ingestions, ingestedBytes        atomic.Uint64
	walBytes, walSyncs               atomic.Uint64
	tableCacheHits, tableCacheMisses atomic.Uint64
	level                            [version.NumLevels]levelStats
}

// levelStats are per-level compaction counters.
type levelStats struct {
	bytesRead, bytesWritten, bytesMoved atomic.Uint64
	// bytesReadStart is the part of bytesRead read from the level above
	// (RocksDB's Rn), the denominator of the level's write amplification.
	bytesReadStart atomic.Uint64
	compactions    atomic.Uint64
}
