//go:build !linux || race

package offheap

// Enabled is false: Alloc returns heap memory. Race-detector builds keep it
// on the heap on Linux too, where the detector can watch it.
const Enabled = false

func mapMem(int) ([]byte, error) { panic("offheap: no mappings in this build") }
func unmapMem([]byte)            { panic("offheap: no mappings in this build") }
