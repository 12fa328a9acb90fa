//go:build !linux || race

package offheap

// Enabled is false: Alloc returns heap memory and Map is never called.
// Race-detector builds keep memory on the heap on Linux too, where the
// detector can watch it.
const Enabled = false

// Map is not available in this build (Enabled is false).
func Map(int) ([]byte, error) { panic("offheap: no mappings in this build") }

// Unmap is not available in this build.
func Unmap([]byte) { panic("offheap: no mappings in this build") }

// Park does nothing in this build.
func Park([]byte) {}

// Unpark does nothing in this build.
func Unpark([]byte) {}
