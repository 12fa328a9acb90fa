package vfs

// MappedCreator is implemented by file systems that can create append-only
// files whose writes are copies into a shared memory mapping of the file
// rather than write(2) calls.
//
// The bytes of such a write are in the operating system's page cache as soon
// as Write returns, exactly as after write(2): they survive the process
// being killed, and Sync makes them durable against power loss. What the
// mapping saves is the system call per write. The file is preallocated ahead
// of the writes, so until Close trims it, it ends in zeroes past the last
// byte written (a reader of a log must take a zero-filled header for its
// end, as RocksDB's and Strata's log readers do).
type MappedCreator interface {
	// CreateMapped creates the named file for writing, truncating it if
	// it exists. When the file system cannot map the file (no
	// preallocation, or no shared mappings) it returns a file created as
	// Create would; the caller cannot tell, nor does it need to.
	CreateMapped(name string) (File, error)
}

// CreateMapped creates name through fs's MappedCreator when it has one, and
// through Create otherwise.
func CreateMapped(fs FS, name string) (File, error) {
	if m, ok := fs.(MappedCreator); ok {
		return m.CreateMapped(name)
	}
	return fs.Create(name)
}
