package main

// engine is everything the benchmarks ask of a database. The real adapter
// over *db.DB lives in engine_strata.go; the tests add a map-backed fake.
// Every method may be called from many goroutines at once.
type engine interface {
	// Write applies puts keys[i]=vals[i], or deletes keys when vals is nil,
	// atomically. The slices may be reused once Write returns.
	Write(keys, vals [][]byte, wo writeOpts) error
	// Merge adds a merge operand for key.
	Merge(key, val []byte, wo writeOpts) error
	// Get returns the value of key and whether it exists.
	Get(key []byte) ([]byte, bool, error)
	// MultiGet looks up every key; found[i] reports whether keys[i] exists.
	MultiGet(keys [][]byte) (vals [][]byte, found []bool, err error)
	// NewIterator returns a fresh iterator over the latest state.
	NewIterator(ro readOpts) iter
	Flush() error
	// CompactRange compacts the whole key space.
	CompactRange() error
	// Property returns an engine property, as db.DB.GetProperty.
	Property(name string) (string, bool)
	Close() error
}

// iter is the subset of db.Iterator the benchmarks use, with its contract:
// Key and Value are valid until the iterator moves.
type iter interface {
	SeekToFirst()
	SeekToLast()
	Seek(key []byte)
	Next()
	Prev()
	Valid() bool
	Key() []byte
	Value() []byte
	Err() error
	Close() error
}

type writeOpts struct {
	sync       bool
	disableWAL bool
}

type readOpts struct {
	prefixSameAsStart bool
	totalOrderSeek    bool
}

// openFunc opens the engine described by c in c.db. It is a variable so
// that tests can substitute a fake engine.
var openFunc func(c *config) (engine, error)
