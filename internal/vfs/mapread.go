package vfs

import "io"

// ReadMapper is implemented by files that can serve reads from a read-only
// shared mapping of their contents (RocksDB's allow_mmap_reads).
type ReadMapper interface {
	// MapForReading maps the first size bytes of the file. It reports
	// false when the file cannot be mapped; the file is then read as
	// before.
	MapForReading(size int64) (MappedReader, bool)
}

// MappedReader reads a file through a mapping of it. ReadAt copies out of
// the mapping: no system call for pages already in the page cache. A fault
// while copying (the file shrank under the mapping, or the disk failed to
// read a page) is returned as an error, not a crash. Close unmaps and
// closes the file; no ReadAt may run during or after it.
type MappedReader interface {
	io.ReaderAt
	Close() error
}

// MapForReading returns a MappedReader for f's first size bytes when f
// supports it, and false otherwise.
func MapForReading(f File, size int64) (MappedReader, bool) {
	if m, ok := f.(ReadMapper); ok && size > 0 {
		return m.MapForReading(size)
	}
	return nil, false
}
