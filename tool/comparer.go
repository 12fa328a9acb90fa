package tool

import (
	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/base"
)

// WithComparer makes c available, under its Name, to the verbs that open a
// database one of whose column families orders its keys by c, beside the
// built-in comparators the tool knows by name (leveldb.BytewiseComparator,
// rocksdb.ReverseBytewiseComparator). As with ldb, a family ordered by a
// user comparator cannot be read unless the comparator is given: its order
// is code, not data.
func WithComparer(c db.Comparer) Option {
	return func(t *T) { t.comparers[c.Name()] = c }
}

// comparer returns the comparer of a family whose MANIFEST records the
// comparator name: one given with WithComparer, else a built-in one ("" is
// bytewise), else an error naming the comparator.
func (t *T) comparer(dir, family, name string) (c db.Comparer, builtin bool, err error) {
	if c, ok := t.comparers[name]; ok {
		_, builtin := c.(base.EngineComparer)
		return c, builtin, nil
	}
	switch name {
	case "", base.ComparatorName:
		return db.BytewiseComparer(), true, nil
	case base.ReverseComparatorName:
		return db.ReverseBytewiseComparer(), true, nil
	}
	return nil, false, errors.Wrapf(db.ErrInvalidArgument,
		"strata: %s: column family %q orders its keys with comparator %q, which the tool does not know "+
			"(built in: %s, %s); a program embedding the tool passes it with tool.WithComparer",
		dir, family, name, base.ComparatorName, base.ReverseComparatorName)
}

// engineComparer is the engine's form of c, for the verbs that read the
// MANIFEST and tables below the db package.
func engineComparer(c db.Comparer) *base.Comparer { return base.FromKeyComparer(c) }

// familyComparers reads dir's MANIFEST and sets, in opts, the comparer of
// every column family it records, so that a database whose families are
// not bytewise opens as it was written: the default family's as
// opts.Comparer, another family's in opts.ColumnFamilies when it is a user
// comparer (db.Open settles built-in ones itself, from the MANIFEST and the
// OPTIONS file, keeping the family's other options from the OPTIONS file).
// It sets c.cmp to the comparer of the --column-family family, and
// c.bytewise to whether that is the built-in bytewise order.
func (t *T) familyComparers(c *cmdline, dir string, opts *db.Options) error {
	path, err := currentManifest(dir)
	if err != nil {
		return err
	}
	st, err := replayManifest(path)
	if err != nil {
		return err
	}
	for _, cf := range st.cfs {
		cmp, builtin, err := t.comparer(dir, cf.name, cf.comparator)
		if err != nil {
			return err
		}
		switch {
		case cf.id == 0:
			opts.Comparer = cmp
		case !builtin:
			if opts.ColumnFamilies == nil {
				opts.ColumnFamilies = map[string]*db.ColumnFamilyOptions{}
			}
			opts.ColumnFamilies[cf.name] = &db.ColumnFamilyOptions{Comparer: cmp}
		}
		if cf.name == c.columnFamily {
			c.cmp = cmp
			c.bytewise = builtin && cmp.Name() == base.ComparatorName
		}
	}
	return nil
}

// versionComparer is version.Options.Comparer for the verbs that load the
// MANIFEST themselves: the comparer each family's record names.
func (t *T) versionComparer(dir string) func(family, stored string) (*base.Comparer, error) {
	return func(family, stored string) (*base.Comparer, error) {
		c, _, err := t.comparer(dir, family, stored)
		if err != nil {
			return nil, err
		}
		return engineComparer(c), nil
	}
}

// tableComparer is table.ReaderOptions.ComparerByName: the comparer of a
// table's rocksdb.comparator property, or nil for a name the tool does not
// know (the table is then refused, naming it).
func (t *T) tableComparer(name string) *base.Comparer {
	c, _, err := t.comparer("", "", name)
	if err != nil {
		return nil
	}
	return engineComparer(c)
}
