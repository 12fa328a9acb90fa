// Package invariants says whether this build runs the engine's costlier
// self-checks: heap order in the merging iterator, key order on every
// memtable insert, the ordering of every installed Version. They are on
// only under the build tag `invariants`:
//
//	go test -tags invariants ./...
//
// Call sites test the constant, so the checks compile away otherwise:
//
//	if invariants.Enabled {
//		check()
//	}
//
// A failed check is a bug in Strata, not bad input: checks panic. Damaged
// files are reported as errors (ErrCorruption) whatever the tag.
package invariants
