package version

import "sort"

// DefaultFamilyName is the name of column family 0, which every VersionSet
// has and which cannot be dropped.
const DefaultFamilyName = "default"

// Family is one column family of a VersionSet: its own current Version and
// log number. Its fields are guarded by the caller's mutex like the rest of
// the VersionSet. A dropped Family keeps its id and name but no current
// Version of its own (the VersionSet dropped its reference).
//
// All families' Versions share the VersionSet's one live list, so that
// LiveFileNums sees every table that any family's Version, current or still
// referenced, holds.
type Family struct {
	id      uint32
	name    string
	current *Version
	logNum  uint64
	dropped bool
}

// ID returns the family's id (0 for the default family).
func (f *Family) ID() uint32 { return f.id }

// Name returns the family's name.
func (f *Family) Name() string { return f.name }

// Current returns the family's current Version (nil once dropped). The
// caller Refs it to keep it past the next LogAndApply.
func (f *Family) Current() *Version { return f.current }

// LogNumber returns the family's log number: WALs numbered below it hold
// nothing of this family that is not in its tables.
func (f *Family) LogNumber() uint64 { return f.logNum }

// Dropped reports whether the family was dropped.
func (f *Family) Dropped() bool { return f.dropped }

// Families returns the live (not dropped) families by id ascending: the
// default family first. The slice is the caller's.
func (vs *VersionSet) Families() []*Family {
	return append([]*Family(nil), vs.fams...)
}

// Family returns the live family with that id, or nil.
func (vs *VersionSet) Family(id uint32) *Family { return vs.famByID[id] }

// FamilyByName returns the live family with that name, or nil.
func (vs *VersionSet) FamilyByName(name string) *Family {
	for _, f := range vs.fams {
		if f.name == name {
			return f
		}
	}
	return nil
}

// MaxColumnFamily returns the largest column family id ever used in this
// database, dropped families included: a new family gets a larger one, so
// ids are never reused (the MANIFEST records it as MaxColumnFamily).
func (vs *VersionSet) MaxColumnFamily() uint32 { return vs.maxColumnFamily }

// MinLogNumber returns the smallest log number of the live families: WALs
// numbered below it hold nothing any family still needs.
func (vs *VersionSet) MinLogNumber() uint64 {
	m := vs.def.logNum
	for _, f := range vs.fams {
		if f.logNum < m {
			m = f.logNum
		}
	}
	return m
}

// addFamily registers a new live family (without a Version yet).
func (vs *VersionSet) addFamily(f *Family) {
	vs.famByID[f.id] = f
	vs.fams = append(vs.fams, f)
	sort.Slice(vs.fams, func(i, j int) bool { return vs.fams[i].id < vs.fams[j].id })
	if f.id == 0 {
		vs.def = f
	}
	if f.id > vs.maxColumnFamily {
		vs.maxColumnFamily = f.id
	}
}

// dropFamily marks f dropped, removes it from the live families and drops
// the VersionSet's reference to its current Version: that Version (and its
// files) stays live while others hold references.
func (vs *VersionSet) dropFamily(f *Family) {
	f.dropped = true
	delete(vs.famByID, f.id)
	for i, g := range vs.fams {
		if g == f {
			vs.fams = append(vs.fams[:i:i], vs.fams[i+1:]...)
			break
		}
	}
	if old := f.current; old != nil {
		f.current = nil
		old.Unref()
	}
}
