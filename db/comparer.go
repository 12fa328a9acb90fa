package db

import (
	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/optionsfile"
)

// Comparer orders the keys of a column family, RocksDB's Comparator. Name
// is recorded in the MANIFEST, in the OPTIONS file (comparator=) and in the
// properties of every table (rocksdb.comparator); a database reopened with
// a Comparer of another name (nil means BytewiseComparer) fails Open with
// ErrInvalidArgument, and Ingest refuses a table written with another.
//
// Compare must be a total order on byte strings, returning a negative
// number, zero or a positive number as a sorts before, equal to or after
// b, and must never change for a given Name: the files on disk are sorted
// by it. It must return zero only for identical byte strings (unlike
// RocksDB, Strata does not treat distinct keys that compare equal as one
// key). A prefix extractor used with a Comparer must keep its contract
// under that order: the keys with one prefix are contiguous in it.
// PrefixUpperBound computes a bytewise bound and suits bytewise families
// only.
//
// A Comparer may also have either or both of these methods, found by type
// assertion, which shorten the keys of table indexes (RocksDB's
// FindShortestSeparator and FindShortSuccessor):
//
//	// Separator appends to dst a key k with a <= k < b (given a < b),
//	// as short as it can.
//	Separator(dst, a, b []byte) []byte
//	// Successor appends to dst a key k >= a, as short as it can.
//	Successor(dst, a []byte) []byte
//
// A result that is not strictly between (or after) is ignored and the full
// key kept; without the methods, index keys are the full keys, which is
// always correct. The built-in comparers order the same as RocksDB's.
type Comparer interface {
	Name() string
	Compare(a, b []byte) int
}

// builtinComparer is one of RocksDB's built-in comparators.
type builtinComparer struct{ c *base.Comparer }

func (b builtinComparer) Name() string            { return b.c.Name }
func (b builtinComparer) Compare(x, y []byte) int { return b.c.Compare(x, y) }

// EngineComparer gives the engine's form of the order to the packages that
// take a comparer by its methods (table.ExternalWriterOptions.Comparer), so
// that the built-in bytewise one keeps its shortcuts there too.
func (b builtinComparer) EngineComparer() *base.Comparer { return b.c }

// BytewiseComparer returns RocksDB's default comparator,
// "leveldb.BytewiseComparator": keys in lexicographic order of their
// unsigned bytes (bytes.Compare).
func BytewiseComparer() Comparer { return builtinComparer{base.DefaultComparer} }

// ReverseBytewiseComparer returns RocksDB's
// "rocksdb.ReverseBytewiseComparator": bytewise order reversed, so that
// iteration from First visits the largest key first.
func ReverseBytewiseComparer() Comparer { return builtinComparer{base.ReverseComparer} }

// internalComparer returns the engine's form of c (nil: bytewise). A user
// Comparer whose Name is a built-in one's but whose type is not ours is
// wrapped as any other: the engine's bytewise shortcuts are kept for the
// built-in bytewise comparer only.
func internalComparer(c Comparer) *base.Comparer { return base.FromKeyComparer(c) }

// comparerName returns the Name recorded for c (nil: bytewise).
func comparerName(c Comparer) string {
	if c == nil {
		return base.ComparatorName
	}
	return c.Name()
}

// namesOnlyComparer is version.Options.Comparer for a load that reads only
// the families' names (ListColumnFamilies): a user comparer is not at hand
// there, so a family ordered by one gets a stand-in under its name that
// calls every pair of keys ordered, which lets the load's ordering checks
// pass whatever the order of its files. Nothing reads keys through it.
func namesOnlyComparer(_, stored string) (*base.Comparer, error) {
	if c := base.BuiltinComparer(stored); c != nil {
		return c, nil
	}
	return &base.Comparer{Name: stored, Compare: func(a, b []byte) int { return -1 }}, nil
}

// familyComparer is version.Options.Comparer for Open: it settles the order
// of each family the MANIFEST holds, from the options it is opened with
// (Options.ColumnFamilies, else Options itself for the default family),
// else from the comparator its OPTIONS file section names, and checks it
// against what the MANIFEST (stored) and the OPTIONS file record.
func (d *DB) familyComparer(family, stored string) (*base.Comparer, error) {
	var sec *optionsfile.Section
	fileName := ""
	if d.optionsFile != nil {
		sec = d.optionsFile.Section(optionsfile.SecCF, family)
		fileName = d.optionsFile.Name
	}
	inFile := ""
	if sec != nil {
		inFile = sec.Values["comparator"]
	}
	var cmp *base.Comparer
	if c, ok := d.opts.ColumnFamilies[family]; ok {
		if c != nil {
			cmp = internalComparer(c.Comparer)
		} else {
			cmp = base.DefaultComparer
		}
	} else if family == DefaultColumnFamilyName {
		cmp = internalComparer(d.opts.Comparer)
	} else {
		name := inFile
		if name == "" {
			name = stored
		}
		if cmp = base.BuiltinComparer(name); cmp == nil {
			return nil, errors.Wrapf(ErrInvalidArgument,
				"strata: column family %q orders keys with comparator %s, which is not built in: give it in Options.ColumnFamilies",
				family, name)
		}
	}
	if stored != "" && stored != cmp.Name {
		// RocksDB's message.
		return nil, errors.Wrapf(ErrInvalidArgument, "strata: column family %q: %s: does not match existing comparator %s",
			family, cmp.Name, stored)
	}
	if inFile != "" && inFile != cmp.Name {
		return nil, errors.Wrapf(ErrInvalidArgument, "strata: %s: column family %q: comparator %s does not match the %s it is opened with",
			fileName, family, inFile, cmp.Name)
	}
	return cmp, nil
}
