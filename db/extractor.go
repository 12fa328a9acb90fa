package db

import "github.com/stratadb/strata/prefix"

// extractorHandle wraps the user's prefix extractor once, at Open or
// SetOptions, so that its identity is a pointer even when the user's type is
// a value type, and so that its Name is computed once.
//
// Invariant: a handle is immutable; two handles with the same name give the
// same prefixes (the Extractor contract).
type extractorHandle struct {
	ext  prefix.Extractor
	name string
}

func newExtractorHandle(e prefix.Extractor) *extractorHandle {
	if e == nil {
		return nil
	}
	return &extractorHandle{ext: e, name: e.Name()}
}

// prefixFilterUsable reports whether table e's prefix filter may be used
// with the current extractor h: one pointer comparison when h is the handle
// already proven compatible with the table, else one Name comparison, after
// which h is remembered as known good, so each reader pays for the string
// comparison at most once per extractor change.
func (d *DB) prefixFilterUsable(e *tableEntry, h *extractorHandle) bool {
	if h == nil {
		return false
	}
	if skipPrefixCheck { // a constant: compiled away unless built with the tag
		return true
	}
	if e.knownGood.Load() == h {
		d.stats.prefixFastPath.Add(1)
		return true
	}
	d.stats.prefixSlowPath.Add(1)
	if h.name != e.prefixName {
		d.stats.prefixIncompatible.Add(1)
		return false
	}
	e.knownGood.Store(h)
	return true
}
