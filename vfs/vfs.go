// Package vfs is the file system a Strata database reads and writes
// through (db.Options.FS): Default, the operating system's; NewMem, an
// in-memory file system for tests, with CrashClone to simulate a power
// loss; or a wrapper of either that an application writes itself (to count
// or throttle I/O, inject faults, encrypt at rest).
//
// Every file access of the engine goes through the FS it was opened with:
// the WAL, the MANIFEST, CURRENT, OPTIONS, the tables, the LOCK file, the
// info LOG (when no Logger is set) and the files of a checkpoint.
//
// # Names
//
// The engine builds every name with path/filepath.Join from the directory
// given to db.Open (or DB.Checkpoint) and a file name such as "000012.sst",
// "MANIFEST-000005" or "CURRENT", so an FS sees the platform's separator.
// Names are used as given: an FS resolves relative names as it likes (the
// OS against the working directory, NewMem against its root "/").
//
// # The contract an FS keeps
//
// The engine's durability rests on these; a wrapper must keep every one of
// them, most simply by forwarding to an FS that does.
//
//   - Create(name) creates name for writing (and reading), truncating it if
//     it exists. The engine only appends to the files it creates: Write
//     appends, and nothing rewrites bytes already written.
//   - Open(name) opens name for reading. ReadAt is called concurrently from
//     many goroutines on one File and must be safe for that.
//   - File.Sync returns only once every byte written to the file so far is
//     durable: it survives a power loss, and the file's size with it. The
//     engine acknowledges a write with WriteOptions.Sync, and installs a
//     table or a MANIFEST, on the strength of Sync; a Sync that returns nil
//     without that guarantee loses acknowledged writes on power loss. A
//     failed Sync must return an error: the engine then fails the write
//     or the flush or compaction that asked for it.
//   - File.Stat reports the number of bytes written so far as Size.
//   - OpenDir(dir) opens a directory whose Sync makes its entries durable:
//     the files created in it, renamed into it or removed from it. The
//     engine syncs the directory after each such change it relies on. An
//     FS that cannot make entries durable (Windows) may make it a no-op.
//   - Rename(old, new) atomically replaces the file new with old: after a
//     crash one of the two contents is under new, whole. CURRENT and OPTIONS
//     files are installed this way. The engine also renames a finished
//     checkpoint's directory to its final, free name.
//   - Remove removes a file or an empty directory. MkdirAll creates a
//     directory and its parents, succeeding if it exists.
//   - List(dir) returns the names (not paths) of dir's entries, in any
//     order, reading the directory once.
//   - Stat(name) describes name. Errors must keep their class for
//     errors.Is: a missing file is os.ErrNotExist, from Stat and Open (the
//     engine tells a new database from an existing one, and a free
//     checkpoint name from a taken one, that way).
//   - Lock(name) takes an exclusive lock on name, creating the file if
//     needed, and returns the Closer that releases it. While it is held a
//     second Lock of the same name fails, whether it comes from this
//     process or another; the engine holds the database directory's LOCK
//     file this way from Open to Close, so that two writers never share a
//     database. ErrLocked is the class of that failure for Default and
//     NewMem.
//
// # Optional interfaces
//
// The engine type-asserts its FS for two optional capabilities a wrapper may
// forward: Linker (hard links), which DB.Checkpoint and DB.Ingest use for
// table files and replace by a copy, written through Create and Write and
// synced, when the FS lacks it or the link fails; and Reuser (rename and
// overwrite in place), which db.Options.RecycleLogFileNum uses to write a
// new WAL over an obsolete one, and replaces by Create of a new file when
// the FS lacks it.
//
// Two capabilities of Default are not part of this package and are lost
// through any other FS, wrappers of Default included: the WAL written by
// copying into a shared mapping of the file (db.Options.WALWriteSyscalls,
// docs/wal.md) and reads served from a mapping (db.Options.AllowMmapReads).
// Both are optimizations with a plain fallback: through a wrapper the WAL
// is written with File.Write and tables are read with File.ReadAt, so
// every byte the engine writes or reads goes through the wrapper's files.
// A wrapper type that embeds the FS interface (struct{ vfs.FS }) gets
// exactly that: embedding promotes FS's methods only.
package vfs

import (
	ivfs "github.com/stratadb/strata/internal/vfs"
)

// File is an open file: io.Reader, io.ReaderAt, io.Writer and io.Closer,
// with
//
//	Sync() error                // make every byte written so far durable
//	Stat() (os.FileInfo, error) // Size: the bytes written so far
//
// A file from Create is written by appending and may also be read; a file
// from Open is read (Read from the start, or ReadAt anywhere, concurrently);
// a file from OpenDir is only synced and closed. See the package comment for
// what Sync must guarantee.
//
// File is the engine's own interface (an alias of it), so a File returned by
// Default or NewMem can be wrapped and returned from a wrapper's Create.
type File = ivfs.File

// FS is a hierarchical file system:
//
//	Create(name string) (File, error)            // for writing, truncating
//	Open(name string) (File, error)              // for reading
//	OpenDir(name string) (File, error)           // Sync makes entries durable
//	Remove(name string) error                    // a file or an empty directory
//	Rename(oldname, newname string) error        // atomically replaces newname
//	MkdirAll(dir string, perm os.FileMode) error // dir and its parents
//	List(dir string) ([]string, error)           // entry names, read once
//	Stat(name string) (os.FileInfo, error)
//	Lock(name string) (io.Closer, error)         // exclusive, in and across processes
//
// The package comment has the contract of each method. FS is the engine's
// own interface (an alias of it), so any value of it can be passed as
// db.Options.FS.
type FS = ivfs.FS

// Linker is the optional interface of an FS that can make hard links:
// Link(oldname, newname) gives the existing file oldname the second name
// newname, which must not exist; like a creation, the new entry is durable
// once its directory is synced. Default and NewMem's file systems implement
// it. Without it (a wrapper that does not forward it), checkpoints and
// ingestion copy table files instead of linking them.
type Linker = ivfs.Linker

// Reuser is the optional interface of an FS that can reuse a file:
// ReuseForWrite(oldname, newname) renames oldname to newname and opens it
// for writing at offset 0 without truncating it, so that writes overwrite
// the old bytes (readers see the old bytes past those written); the new
// name is durable once its directory is synced. Default and NewMem's file
// systems implement it.
type Reuser = ivfs.Reuser

// MemFS is an in-memory FS, returned by NewMem. Its files live as long as
// the MemFS value: a database closed and opened again on the same MemFS
// finds everything it wrote.
//
// It models durability strictly, to test what survives a power loss (see
// CrashClone): file contents are durable once File.Sync returns, and a
// directory entry (a file's creation, a rename, a removal, a MkdirAll)
// once its directory is synced through OpenDir(dir).Sync(). Names are
// cleaned with path/filepath.Clean and relative names resolved against the
// root "/", which always exists. Errors are *os.PathError values whose
// class errors.Is recognizes (os.ErrNotExist, os.ErrExist). Every method
// is safe for concurrent use.
//
// Methods beyond FS:
//
//	Link(oldname, newname string) error // Linker
//	ReuseForWrite(oldname, newname string) (File, error) // Reuser
//	CrashClone() *MemFS                 // what a power loss would leave
//	String() string                     // the tree, with live and synced sizes
//
// CrashClone returns a new MemFS holding only what was durable in the
// original: the directory entries made durable by a directory sync, and
// for each file the bytes of its last Sync. Whatever was written after a
// file's last Sync, and every entry change not followed by a sync of its
// directory, is missing from the clone (a file removed but not synced out
// of its directory comes back). Locks and open files are not carried over;
// the original is unchanged and stays usable, so a test can take several
// clones while its database keeps running, and open each one with db.Open.
type MemFS = ivfs.MemFS

// Default is the operating system's file system (package os). File.Sync is
// fdatasync(2) on Linux and fsync(2) on other Unix systems; a directory's
// Sync is fsync(2) on Unix and a no-op on Windows, which has no way to
// make directory entries durable. Lock takes flock(2) on Unix and
// LockFileEx on Windows, and also refuses a second Lock of the same path
// within one process.
//
// Default is the FS db.Open uses when db.Options.FS is nil. It is the only
// FS through which the engine maps the WAL and tables into memory (see the
// package comment).
var Default FS = ivfs.Default

// ErrLocked is the class of the error Default's and MemFS's Lock return
// when the file is already locked, by this process or another: the error
// db.Open returns for a database another DB holds open. Test it with
// errors.Is.
var ErrLocked = ivfs.ErrLocked

// NewMem returns an empty in-memory file system (see MemFS).
func NewMem() *MemFS { return ivfs.NewMem() }

var (
	_ FS     = (*MemFS)(nil)
	_ Linker = (*MemFS)(nil)
	_ Reuser = (*MemFS)(nil)
)
