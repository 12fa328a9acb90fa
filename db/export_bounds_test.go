package db

// Test-only access for options_bounds_test.go.

// SetMaxBatchArena lowers the memtable-space limit of one batch so that
// tests reach it without gigabytes of data; it returns a function that puts
// the limit back. Tests using it must not run in parallel.
func SetMaxBatchArena(n int64) (restore func()) {
	old := maxBatchArena
	maxBatchArena = n
	return func() { maxBatchArena = old }
}

// MaxBatchArena is the memtable-space limit of one batch.
func MaxBatchArena() int64 { return maxBatchArena }

// BatchArenaNeed is the memtable space b needs, the quantity
// SetMaxBatchArena bounds.
func BatchArenaNeed(b *Batch) int64 { return int64(arenaNeed(&b.b)) }

// MutableOptionsState is what SetOptions may change, comparable with
// require.Equal.
func MutableOptionsState(d *DB) any {
	d.setOptionsMu.Lock()
	defer d.setOptionsMu.Unlock()
	return d.def.saveMutableOptions()
}
