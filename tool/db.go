package tool

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
)

func init() {
	registerCF("db", "scan", "DIR [--hex] [--from=K] [--to=K] [--prefix=P] [--limit=N] [--merge-operator=NAME]", dbScan)
	registerCF("db", "get", "DIR KEY [--hex] [--merge-operator=NAME]", dbGet)
	registerCF("db", "put", "DIR KEY VALUE [--hex] [--create-if-missing] [--merge-operator=NAME]", dbPut)
	registerCF("db", "delete", "DIR KEY [--hex] [--merge-operator=NAME]", dbDelete)
}

// dbScan prints "KEY : VALUE" per live key, as ldb scan.
func dbScan(t *T, c *cmdline) error {
	if err := c.need(1, "DIR"); err != nil {
		return err
	}
	ro := &db.ReadOptions{}
	if c.hasFrom {
		k, err := c.key(c.from)
		if err != nil {
			return err
		}
		ro.LowerBound = k
	}
	if c.hasTo {
		k, err := c.key(c.to)
		if err != nil {
			return err
		}
		ro.UpperBound = k
	}
	p, err := c.prefixKey()
	if err != nil {
		return err
	}
	d, err := t.open(c, c.args[0], false)
	if err != nil {
		return err
	}
	defer d.Close()
	cf, err := c.family(d, c.args[0])
	if err != nil {
		return err
	}
	// --from and --to are in the family's order; so is every comparison
	// of bounds below.
	cmp := bytes.Compare
	if c.cmp != nil && !c.bytewise {
		cmp = c.cmp.Compare
	}
	filterPrefix := false
	if p != nil {
		if c.bytewise {
			ro.LowerBound, ro.UpperBound = prefixBounds(p, ro.LowerBound, ro.UpperBound)
		} else {
			// In another order those keys need not be one range that
			// bounds can name: the scan keeps the keys with the prefix.
			filterPrefix = true
		}
	}
	if ro.LowerBound != nil && ro.UpperBound != nil && cmp(ro.LowerBound, ro.UpperBound) >= 0 {
		return nil
	}
	it := cf.NewIterator(ro)
	n := int64(0)
	for it.SeekToFirst(); it.Valid() && (c.limit < 0 || n < c.limit); it.Next() {
		if filterPrefix && !bytes.HasPrefix(it.Key(), p) {
			continue
		}
		fmt.Fprintf(c.out, "%s : %s\n", c.format(it.Key()), c.format(it.Value()))
		n++
	}
	if err := it.Err(); err != nil {
		it.Close()
		return errors.Wrapf(err, "strata: scanning %s", c.args[0])
	}
	return it.Close()
}

// dbGet prints the value of KEY, as ldb get.
func dbGet(t *T, c *cmdline) error {
	if err := c.need(2, "DIR KEY"); err != nil {
		return err
	}
	k, err := c.key(c.args[1])
	if err != nil {
		return err
	}
	d, err := t.open(c, c.args[0], false)
	if err != nil {
		return err
	}
	defer d.Close()
	cf, err := c.family(d, c.args[0])
	if err != nil {
		return err
	}
	v, err := cf.Get(k, nil)
	if errors.Is(err, db.ErrNotFound) {
		// ldb's words for a missing key, so that scripts written for ldb
		// read the same stderr (and exit status 1); still
		// db.ErrNotFound for a program embedding the tool.
		return &ldbError{msg: "Failed: Get failed: NotFound: ", cause: err}
	}
	if err != nil {
		return errors.Wrapf(err, "strata: get %q", c.args[1])
	}
	fmt.Fprintln(c.out, c.format(v))
	return nil
}

// ldbError is an error printed in ldb's words. It unwraps to its cause, so
// that errors.Is (the standard library's and cockroachdb's) still finds the
// engine's sentinel.
type ldbError struct {
	msg   string
	cause error
}

func (e *ldbError) Error() string { return e.msg }
func (e *ldbError) Unwrap() error { return e.cause }

// dbPut writes KEY=VALUE and prints "OK", as ldb put.
func dbPut(t *T, c *cmdline) error {
	if err := c.need(3, "DIR KEY VALUE"); err != nil {
		return err
	}
	k, err := c.key(c.args[1])
	if err != nil {
		return err
	}
	v, err := c.key(c.args[2])
	if err != nil {
		return err
	}
	return t.write(c, func(cf *db.ColumnFamily) error { return cf.Put(k, v, &db.WriteOptions{Sync: true}) })
}

// dbDelete deletes KEY and prints "OK", as ldb delete.
func dbDelete(t *T, c *cmdline) error {
	if err := c.need(2, "DIR KEY"); err != nil {
		return err
	}
	k, err := c.key(c.args[1])
	if err != nil {
		return err
	}
	return t.write(c, func(cf *db.ColumnFamily) error { return cf.Delete(k, &db.WriteOptions{Sync: true}) })
}

// write opens the database for writing, applies fn to the --column-family
// family, closes it and prints "OK".
func (t *T) write(c *cmdline, fn func(cf *db.ColumnFamily) error) error {
	d, err := t.open(c, c.args[0], true)
	if err != nil {
		return err
	}
	cf, err := c.family(d, c.args[0])
	if err != nil {
		d.Close()
		return err
	}
	if err := fn(cf); err != nil {
		d.Close()
		return errors.Wrapf(err, "strata: writing to %s", c.args[0])
	}
	if err := d.Close(); err != nil {
		return errors.Wrapf(err, "strata: closing %s", c.args[0])
	}
	fmt.Fprintln(c.out, "OK")
	return nil
}
