//go:build !linux || race

package memtable

// offHeapArenas: every arena is on the Go heap. Race-detector builds keep
// them there on Linux too: the detector only watches Go-heap memory, and
// the skiplist's publication order is what it should check.
const offHeapArenas = false

func mapArena(int) ([]byte, error) { panic("memtable: no mapped arenas in this build") }
func unmapArena([]byte)            { panic("memtable: no mapped arenas in this build") }
func parkArena([]byte)             {}
func unparkArena([]byte)           {}
