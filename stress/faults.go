package stress

import (
	"sync/atomic"

	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/internal/vfs/errorfs"
)

// faultInjector fails reads, writes, syncs, renames and removes at random
// while enabled. The decision for the n-th operation is a hash of the seed
// and n, so it needs no lock.
type faultInjector struct {
	fs     vfs.FS
	seed   uint64
	oneIn  uint64
	n      atomic.Uint64
	on     atomic.Bool
	Fired  atomic.Int64
	Probed atomic.Int64
}

func newFaultInjector(base vfs.FS, seed int64, oneIn int) *faultInjector {
	if base == nil {
		base = vfs.Default
	}
	f := &faultInjector{seed: uint64(seed), oneIn: uint64(oneIn)}
	f.fs = errorfs.Wrap(base, f)
	return f
}

// enable turns injection on or off and returns whether it was on.
func (f *faultInjector) enable(on bool) bool { return f.on.Swap(on) }

// MaybeError implements errorfs.Injector.
func (f *faultInjector) MaybeError(op errorfs.Op, path string) error {
	switch op {
	case errorfs.OpRead, errorfs.OpWrite, errorfs.OpSync, errorfs.OpRename, errorfs.OpRemove:
	default:
		return nil
	}
	if !f.on.Load() {
		return nil
	}
	f.Probed.Add(1)
	if splitmix(f.seed+f.n.Add(1))%f.oneIn != 0 {
		return nil
	}
	f.Fired.Add(1)
	return errorfs.Injected(op, path)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
