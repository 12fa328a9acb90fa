// Package rangedel turns a set of possibly overlapping range tombstones into
// non-overlapping fragments, so that "is this version deleted?" is one binary
// search. It is not covered by the API contract.
package rangedel

import (
	"sort"

	"github.com/stratadb/strata/internal/base"
)

// Fragment is a piece [Start, End) of the key space together with the
// largest sequence number among the tombstones that cover all of it.
type Fragment struct {
	Start, End []byte
	MaxSeq     base.SeqNum
}

// Set is a sorted list of non-overlapping, non-empty fragments.
//
// Invariants: Start < End for each fragment, and frags[i].End <=
// frags[i+1].Start. The zero Set is empty and valid.
type Set struct {
	frags []Fragment
	cmp   *base.Comparer
}

// Build fragments the tombstones visible at snap (Seq < snap). Tombstones
// are not modified; fragments alias their keys. Keys order by cmp (nil:
// bytewise).
func Build(cmp *base.Comparer, tombs []base.Tombstone, snap base.SeqNum) Set {
	cmp = cmp.OrDefault()
	// Collect every boundary, then for each elementary interval take the
	// max seq of the tombstones covering it. Sweep with the tombstones
	// sorted by start: O(n log n + n*k) where k is the overlap depth.
	var vis []base.Tombstone
	for _, t := range tombs {
		if t.Seq < snap && cmp.CompareUser(t.Start, t.End) < 0 {
			vis = append(vis, t)
		}
	}
	if len(vis) == 0 {
		return Set{cmp: cmp}
	}
	bounds := make([][]byte, 0, 2*len(vis))
	for _, t := range vis {
		bounds = append(bounds, t.Start, t.End)
	}
	sort.Slice(bounds, func(i, j int) bool { return cmp.CompareUser(bounds[i], bounds[j]) < 0 })
	uniq := bounds[:1]
	for _, b := range bounds[1:] {
		if cmp.CompareUser(b, uniq[len(uniq)-1]) != 0 {
			uniq = append(uniq, b)
		}
	}
	sort.Slice(vis, func(i, j int) bool { return cmp.CompareUser(vis[i].Start, vis[j].Start) < 0 })
	s := Set{cmp: cmp}
	var active []base.Tombstone
	next := 0
	for i := 0; i+1 < len(uniq); i++ {
		lo, hi := uniq[i], uniq[i+1]
		for next < len(vis) && cmp.CompareUser(vis[next].Start, lo) <= 0 {
			active = append(active, vis[next])
			next++
		}
		// Drop tombstones that ended at or before lo.
		j := 0
		var max base.SeqNum
		for _, t := range active {
			if cmp.CompareUser(t.End, lo) > 0 {
				active[j] = t
				j++
				if t.Seq > max {
					max = t.Seq
				}
			}
		}
		active = active[:j]
		if len(active) == 0 {
			continue
		}
		if n := len(s.frags); n > 0 && s.frags[n-1].MaxSeq == max && cmp.CompareUser(s.frags[n-1].End, lo) == 0 {
			s.frags[n-1].End = hi
			continue
		}
		s.frags = append(s.frags, Fragment{Start: lo, End: hi, MaxSeq: max})
	}
	return s
}

// Empty reports whether the set has no fragments.
func (s *Set) Empty() bool { return len(s.frags) == 0 }

// Fragments returns the fragments in key order.
func (s *Set) Fragments() []Fragment { return s.frags }

// MaxCovering returns the largest tombstone sequence number covering key, or
// 0 when none does.
func (s *Set) MaxCovering(key []byte) base.SeqNum {
	f := s.frags
	if len(f) == 0 {
		return 0
	}
	cmp := s.cmp
	// First fragment whose End > key.
	i := sort.Search(len(f), func(i int) bool { return cmp.CompareUser(f[i].End, key) > 0 })
	if i < len(f) && cmp.CompareUser(f[i].Start, key) <= 0 {
		return f[i].MaxSeq
	}
	return 0
}

// Deleted reports whether the version (key, seq) is deleted by a fragment.
func (s *Set) Deleted(key []byte, seq base.SeqNum) bool {
	if len(s.frags) == 0 {
		return false
	}
	return seq < s.MaxCovering(key)
}

// MaxCoveringIn returns the largest sequence number among the tombstones in
// tombs that are visible at snap and cover key, or 0. It scans linearly: for
// the short per-source lists of a point lookup.
func MaxCoveringIn(cmp *base.Comparer, tombs []base.Tombstone, key []byte, snap base.SeqNum) base.SeqNum {
	cmp = cmp.OrDefault()
	var max base.SeqNum
	for i := range tombs {
		t := &tombs[i]
		if t.Seq < snap && t.Seq > max && cmp.CompareUser(t.Start, key) <= 0 && cmp.CompareUser(key, t.End) < 0 {
			max = t.Seq
		}
	}
	return max
}
