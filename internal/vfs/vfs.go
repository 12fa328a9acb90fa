// Package vfs is the file-system interface every file access of the engine
// goes through: the OS by default, an in-memory file system for tests, and a
// fault-injecting wrapper (package errorfs) for durability tests.
//
// The public package github.com/stratadb/strata/vfs re-exports FS, File,
// Linker, MemFS, Default, NewMem and ErrLocked as aliases (nothing under
// internal/ may import a public package, so the definitions live here).
// Their method sets and documented behaviour are therefore public API:
// adding a method to FS or File breaks every user's implementation, and the
// public package's comment is the contract users implement. Everything else
// here (the mapped WAL, mapped reads, errorfs) stays internal.
package vfs

import (
	"io"
	"os"
)

// File is an open file. Files returned by Create are write-only in intent
// (writes append); files returned by Open are read-only. ReadAt may be
// called concurrently from many goroutines.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	// Sync makes every byte written so far durable.
	Sync() error
	// Stat describes the file; Size is the number of bytes written so far.
	Stat() (os.FileInfo, error)
}

// FS is a hierarchical file system. Names are slash-separated paths, joined
// with path/filepath.
type FS interface {
	// Create creates the named file for writing, truncating it if it exists.
	Create(name string) (File, error)
	// Open opens the named file for reading.
	Open(name string) (File, error)
	// OpenDir opens a directory so that Sync makes its entries (creations,
	// renames, removals) durable.
	OpenDir(name string) (File, error)
	// Remove removes the named file or empty directory.
	Remove(name string) error
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (not paths) of the entries of dir, in no
	// particular order. It reads the directory once.
	List(dir string) ([]string, error)
	// Stat describes the named file.
	Stat(name string) (os.FileInfo, error)
	// Lock takes an exclusive lock on the named file, creating it if needed.
	// A second Lock of the same file fails until the returned Closer is
	// closed, in this process or another.
	Lock(name string) (io.Closer, error)
}
