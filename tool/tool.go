// Package tool holds the verbs of the strata command, so that an
// application can embed them in its own binary, as Pebble's tool package:
//
//	t := tool.New(tool.WithMergeOperator(myOperator))
//	os.Exit(t.Run(os.Args[1:], os.Stdout, os.Stderr))
//
// Verbs are grouped as "db", "wal", "manifest" and "sstable"; see
// docs/tools.md. Where RocksDB's ldb has the same verb (scan, get, dump_wal,
// manifest_dump) the output lines are ldb's for the same database, so the
// two tools' outputs compare line for line.
//
// Every verb opens the database read-only unless it writes (put, delete,
// compact). A directory without a CURRENT file is refused with a clear error
// before anything is opened. Each column family is opened in the order its
// MANIFEST records: the built-in comparators by name, a user comparator
// only when given with WithComparer.
package tool

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
)

// ErrUsage marks an error in the command line (unknown verb, bad flag).
var ErrUsage = errors.New("strata: usage")

// T is a set of verbs; Run executes one.
type T struct {
	mergeOps  map[string]db.MergeOperator
	comparers map[string]db.Comparer
}

// Option configures a T.
type Option func(*T)

// WithMergeOperator makes op available to --merge-operator under its Name,
// beside the built-in operators of db.MergeOperatorByName.
func WithMergeOperator(op db.MergeOperator) Option {
	return func(t *T) { t.mergeOps[op.Name()] = op }
}

// New returns the command set.
func New(opts ...Option) *T {
	t := &T{mergeOps: map[string]db.MergeOperator{}, comparers: map[string]db.Comparer{}}
	for _, o := range opts {
		o(t)
	}
	return t
}

type verb struct {
	group, name, usage string
	run                func(t *T, c *cmdline) error
	// cf: the verb acts on the family --column-family names; the others
	// refuse any family but the default.
	cf bool
}

var verbs []verb

func register(group, name, usage string, run func(t *T, c *cmdline) error) {
	verbs = append(verbs, verb{group: group, name: name, usage: usage, run: run})
}

// registerCF registers a verb that takes --column-family, as the ldb
// commands of the same name take --column_family.
func registerCF(group, name, usage string, run func(t *T, c *cmdline) error) {
	verbs = append(verbs, verb{group: group, name: name, usage: usage + " [--column-family=NAME]", run: run, cf: true})
}

// Usage writes the list of verbs to w.
func (t *T) Usage(w io.Writer) {
	fmt.Fprintln(w, "usage: strata GROUP VERB [ARGS] [FLAGS]")
	vs := append([]verb(nil), verbs...)
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].group < vs[j].group })
	for _, v := range vs {
		fmt.Fprintf(w, "  %s %s %s\n", v.group, v.name, v.usage)
	}
}

// Run executes the verb named by args (e.g. "db", "scan", DIR, "--hex"),
// writing its output to stdout and errors to stderr, and returns the exit
// status: 0 on success, 1 on a failure, 2 on a bad command line.
func (t *T) Run(args []string, stdout, stderr io.Writer) int {
	err := t.run(args, stdout)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, err)
	if errors.Is(err, ErrUsage) || errors.Is(err, flag.ErrHelp) {
		if !errors.Is(err, flag.ErrHelp) {
			t.Usage(stderr)
		}
		return 2
	}
	return 1
}

func (t *T) run(args []string, stdout io.Writer) error {
	if len(args) < 2 {
		return errors.Wrap(ErrUsage, "strata: a group and a verb are required")
	}
	for _, v := range verbs {
		if v.group == args[0] && v.name == args[1] {
			c := newCmdline(v.group+" "+v.name, stdout)
			c.cfVerb = v.cf
			c.parse(args[2:])
			if c.err == nil {
				c.err = c.checkFlags(v)
			}
			return v.run(t, c)
		}
	}
	return errors.Wrapf(ErrUsage, "strata: unknown verb %q", strings.Join(args[:2], " "))
}

// cmdline holds the flags every verb accepts and the positional arguments.
// Flags may come before, between or after the positional arguments, as
// ldb's.
type cmdline struct {
	fs                 *flag.FlagSet
	out                io.Writer
	hex                bool
	from, to, prefix   string
	hasFrom, hasTo     bool
	limit              int64
	mergeOperator      string
	columnFamily       string
	cfVerb             bool // the verb takes --column-family
	printValue, header bool
	createIfMissing    bool
	// cmp is the order of the --column-family family once the database is
	// open (nil before, and for a database the verb creates: bytewise);
	// bytewise says it is the built-in bytewise one.
	cmp      db.Comparer
	bytewise bool
	args     []string
	err      error
}

func newCmdline(name string, out io.Writer) *cmdline {
	c := &cmdline{out: out, bytewise: true}
	fs := flag.NewFlagSet("strata "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&c.hex, "hex", false, "keys and values in and out as 0x-prefixed hex")
	fs.Func("from", "first key (inclusive)", func(s string) error { c.from, c.hasFrom = s, true; return nil })
	fs.Func("to", "last key (exclusive)", func(s string) error { c.to, c.hasTo = s, true; return nil })
	fs.StringVar(&c.prefix, "prefix", "", "only keys with this prefix")
	fs.Int64Var(&c.limit, "limit", -1, "at most this many keys (-1: all)")
	fs.StringVar(&c.mergeOperator, "merge-operator", "", "merge operator name (db.MergeOperatorByName)")
	// ldb spells it --column_family; both spellings are accepted so that
	// ldb command lines carry over.
	fs.StringVar(&c.columnFamily, "column-family", db.DefaultColumnFamilyName, "column family (db scan, get, put, delete, compact)")
	fs.StringVar(&c.columnFamily, "column_family", db.DefaultColumnFamilyName, "ldb's spelling of --column-family")
	fs.BoolVar(&c.printValue, "print-value", false, "wal dump: print values")
	fs.BoolVar(&c.header, "header", false, "wal dump: print a header line")
	fs.BoolVar(&c.createIfMissing, "create-if-missing", false, "put: create the database if it does not exist")
	c.fs = fs
	return c
}

func (c *cmdline) parse(args []string) *cmdline {
	for {
		if err := c.fs.Parse(args); err != nil {
			c.err = errors.Wrapf(ErrUsage, "strata: %v", err)
			return c
		}
		args = c.fs.Args()
		if len(args) == 0 {
			return c
		}
		c.args = append(c.args, args[0])
		args = args[1:]
	}
}

// usageFlags returns the names of the flags a usage string shows
// ("[--hex]", "[--from=K]").
func usageFlags(usage string) map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Fields(usage) {
		if name, ok := strings.CutPrefix(strings.Trim(f, "[]"), "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			m[name] = true
		}
	}
	return m
}

// checkFlags refuses a flag the verb does not use, so that a flag never
// looks as if it had done something: the verb's usage string lists the
// ones it takes. --column-family is left to need, which refuses any family
// but the default on the verbs without one.
func (c *cmdline) checkFlags(v verb) error {
	ok := usageFlags(v.usage)
	var err error
	c.fs.Visit(func(f *flag.Flag) {
		if err != nil || ok[f.Name] || f.Name == "column-family" || f.Name == "column_family" {
			return
		}
		err = errors.Wrapf(ErrUsage, "strata: %s %s does not take --%s", v.group, v.name, f.Name)
	})
	return err
}

// need checks the command line: n positional arguments.
func (c *cmdline) need(n int, what string) error {
	if c.err != nil {
		return c.err
	}
	if len(c.args) != n {
		return errors.Wrapf(ErrUsage, "strata: want %s, got %d arguments", what, len(c.args))
	}
	if !c.cfVerb && c.columnFamily != db.DefaultColumnFamilyName {
		return errors.Wrapf(ErrUsage, "strata: --column-family=%q: this verb reads the default column family only", c.columnFamily)
	}
	return nil
}

// family returns the handle of the --column-family family of d.
func (c *cmdline) family(d *db.DB, dir string) (*db.ColumnFamily, error) {
	cf := d.ColumnFamily(c.columnFamily)
	if cf == nil {
		return nil, errors.Wrapf(db.ErrInvalidArgument, "strata: %s has no column family %q", dir, c.columnFamily)
	}
	return cf, nil
}

// key decodes a key or value argument: hex with --hex (0x prefix optional,
// as ldb's), else the bytes as given.
func (c *cmdline) key(s string) ([]byte, error) {
	if !c.hex {
		return []byte(s), nil
	}
	h := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	b, err := hex.DecodeString(h)
	if err != nil {
		return nil, errors.Wrapf(db.ErrInvalidArgument, "strata: %q is not hex: %v", s, err)
	}
	return b, nil
}

// format prints b as ldb does: "0x" and upper-case hex with --hex, else the
// raw bytes cut at the first NUL (ldb prints C strings): use --hex for
// binary data.
func (c *cmdline) format(b []byte) string {
	if c.hex {
		return toHex(b)
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func toHex(b []byte) string { return "0x" + strings.ToUpper(hex.EncodeToString(b)) }

// checkDB refuses a directory that is not a database.
func checkDB(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "CURRENT")); err != nil {
		if os.IsNotExist(err) {
			return errors.Wrapf(db.ErrInvalidArgument, "strata: %s is not a database (no CURRENT file)", dir)
		}
		return errors.Wrapf(err, "strata: %s", dir)
	}
	return nil
}

// open opens dir, read-only unless write, each column family in the
// order its MANIFEST records (see familyComparers).
func (t *T) open(c *cmdline, dir string, write bool) (*db.DB, error) {
	create := write && c.createIfMissing
	if _, err := os.Stat(dir); create && os.IsNotExist(err) {
		// Nothing there yet: Open creates it.
	} else if err := checkDB(dir); err != nil {
		return nil, err
	}
	opts := &db.Options{ReadOnly: !write, CreateIfMissing: create}
	if _, err := os.Stat(filepath.Join(dir, "CURRENT")); err == nil {
		if err := t.familyComparers(c, dir, opts); err != nil {
			return nil, err
		}
	}
	if c.mergeOperator != "" {
		op := t.mergeOps[c.mergeOperator]
		if op == nil {
			op = db.MergeOperatorByName(c.mergeOperator)
		}
		if op == nil {
			return nil, errors.Wrapf(db.ErrInvalidArgument, "strata: unknown merge operator %q", c.mergeOperator)
		}
		opts.MergeOperator = op
	}
	d, err := db.Open(dir, opts)
	if err != nil {
		return nil, errors.Wrapf(err, "strata: opening %s", dir)
	}
	return d, nil
}
