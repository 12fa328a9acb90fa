// Package optionsfile parses, checks and renders RocksDB OPTIONS files.
//
// RocksDB keeps its settings next to the data in OPTIONS-NNNNNN, an INI text
// file (NNNNNN shares the file-number counter of tables, WALs and
// MANIFESTs). Layout, as RocksDB 7.8.3 writes and parses it:
//
//	# comment lines start with '#'; blank lines are ignored
//	[Version]
//	  rocksdb_version=7.8.3
//	  options_file_version=1.1
//	[DBOptions]
//	  key=value                      (one per line, leading spaces ignored)
//	[CFOptions "default"]            (the default column family comes first)
//	  comparator=leveldb.BytewiseComparator
//	  compaction_options_fifo={allow_compaction=false;max_table_files_size=N;}
//	[TableOptions/BlockBasedTable "default"]
//	  filter_policy=bloomfilter:10:false
//
// A value runs from the first '=' to the end of the line, less an unescaped
// '#' comment; nested structs are written "{k=v;k=v;}". RocksDB rejects an
// unknown key, so a writer must write only keys RocksDB 7.8.3 defines.
//
// This package holds the pure parts: the text format, and the comparison of
// a parsed file with the entries a database would write. Which entries a
// database has, and reading and writing the files, belong to package db.
package optionsfile

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
)

const (
	// MaxSize bounds what a reader reads of an OPTIONS file (RocksDB
	// writes about 7 KiB).
	MaxSize = 1 << 20

	// Section names.
	SecVersion = "Version"
	SecDB      = "DBOptions"
	SecCF      = "CFOptions"
	SecTable   = "TableOptions/BlockBasedTable"
)

// Section is one [Name "arg"] section of an OPTIONS file.
type Section struct {
	Name, Arg string
	Keys      []string // in file order
	Values    map[string]string
}

// Title is the section's header line, "[Name]" or `[Name "arg"]`.
func (s *Section) Title() string {
	if s.Arg == "" {
		return "[" + s.Name + "]"
	}
	return fmt.Sprintf("[%s %q]", s.Name, s.Arg)
}

func (s *Section) set(k, v string) {
	if _, ok := s.Values[k]; !ok {
		s.Keys = append(s.Keys, k)
	}
	s.Values[k] = v
}

// File is a parsed OPTIONS file: its sections in file order.
type File struct {
	Name     string
	Sections []*Section
}

// Section returns the section [name "arg"], or nil.
func (f *File) Section(name, arg string) *Section {
	for _, s := range f.Sections {
		if s.Name == name && s.Arg == arg {
			return s
		}
	}
	return nil
}

// Parse parses the text of an OPTIONS file; name is for errors. A malformed
// file gives an error wrapping base.ErrCorruption that names the file and
// the line.
func Parse(name string, data []byte) (*File, error) {
	f := &File{Name: name}
	var cur *Section
	for i, raw := range bytes.Split(data, []byte("\n")) {
		line := strings.TrimSpace(stripComment(string(raw)))
		if line == "" {
			continue
		}
		bad := func(why string) error {
			return base.CorruptionErrorf("strata: %s line %d: %s: %q", name, i+1, why, truncateLine(line))
		}
		if line[0] == '[' {
			if line[len(line)-1] != ']' {
				return nil, bad("unterminated section header")
			}
			sname, arg, err := parseSectionTitle(line[1 : len(line)-1])
			if err != nil {
				return nil, bad(err.Error())
			}
			cur = &Section{Name: sname, Arg: arg, Values: make(map[string]string)}
			f.Sections = append(f.Sections, cur)
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		switch {
		case cur == nil:
			return nil, bad("setting outside any section")
		case !ok || strings.TrimSpace(k) == "":
			return nil, bad("want key=value")
		}
		cur.set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	for _, want := range []struct{ name, arg string }{{SecVersion, ""}, {SecDB, ""}, {SecCF, "default"}} {
		if f.Section(want.name, want.arg) == nil {
			s := Section{Name: want.name, Arg: want.arg}
			return nil, base.CorruptionErrorf("strata: %s: no %s section", name, s.Title())
		}
	}
	if s := f.Section(SecVersion, ""); s.Values["rocksdb_version"] == "" || s.Values["options_file_version"] == "" {
		return nil, base.CorruptionErrorf("strata: %s: [Version] lacks rocksdb_version or options_file_version", name)
	}
	return f, nil
}

// stripComment drops a '#' comment that is not escaped with '\'.
func stripComment(s string) string {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '#':
			return s[:i]
		}
	}
	return s
}

func truncateLine(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// parseSectionTitle splits `CFOptions "default"` into its name and argument.
func parseSectionTitle(t string) (name, arg string, err error) {
	t = strings.TrimSpace(t)
	name, rest, ok := strings.Cut(t, " ")
	if !ok {
		return t, "", nil
	}
	rest = strings.TrimSpace(rest)
	if len(rest) < 2 || rest[0] != '"' || rest[len(rest)-1] != '"' {
		return "", "", errors.New("section argument must be quoted")
	}
	return name, rest[1 : len(rest)-1], nil
}

// ParseNested parses a "{k=v;k=v;}" value into its fields.
func ParseNested(v string) map[string]string {
	m := make(map[string]string)
	v = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(v), "{"), "}")
	for _, kv := range strings.Split(v, ";") {
		if k, val, ok := strings.Cut(kv, "="); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(val)
		}
	}
	return m
}

// Entry is one setting a database writes to its OPTIONS file.
type Entry struct {
	Section, Arg, Key, Value string
	// OpenOnly marks settings that describe one Open call (create_if_missing)
	// rather than the database; they are never reported.
	OpenOnly bool
	// Equal compares a file's value with Value; nil means string equality.
	Equal func(file, ours string) bool
}

// Same reports whether a file's value file matches e.
func (e *Entry) Same(file string) bool {
	if e.Equal != nil {
		return e.Equal(file, e.Value)
	}
	return file == e.Value
}

// SameFloat is an Entry.Equal for floating-point values.
func SameFloat(a, b string) bool {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && x == y
}

// Check returns the settings that do not map onto ours (the entries Strata
// would write), one line each: "[Section] key=value: reason". (Comparators
// are the db's to check, against the options a family is opened with.)
func Check(f *File, ours []Entry) ([]string, error) {
	var report []string
	for _, e := range ours {
		if e.OpenOnly {
			continue
		}
		s := f.Section(e.Section, e.Arg)
		if s == nil {
			continue
		}
		v, ok := s.Values[e.Key]
		if !ok || e.Same(v) {
			continue
		}
		report = append(report, fmt.Sprintf("%s %s=%s: Strata uses %s", s.Title(), e.Key, v, e.Value))
	}
	for _, u := range unsupportedSettings {
		for _, s := range f.Sections {
			if s.Name != u.section || (u.section == SecDB) != (s.Arg == "") {
				continue
			}
			if v, ok := s.Values[u.key]; ok && v != u.neutral {
				report = append(report, fmt.Sprintf("%s %s=%s: %s", s.Title(), u.key, v, u.why))
			}
		}
	}
	return report, nil
}

// unsupportedSettings are settings naming features Strata lacks; a value
// other than neutral is reported.
var unsupportedSettings = []struct {
	section, arg, key, neutral, why string
}{
	{SecCF, "default", "compaction_filter", "nullptr", "compaction filters are not supported"},
	{SecCF, "default", "compaction_filter_factory", "nullptr", "compaction filters are not supported"},
	{SecCF, "default", "enable_blob_files", "false", "blob files are not supported"},
	{SecCF, "default", "table_factory", "BlockBasedTable", "only block-based tables are supported"},
	{SecDB, "", "allow_2pc", "false", "two-phase commit is not supported"},
	{SecDB, "", "atomic_flush", "false", "Strata flushes each column family on its own; atomic_flush has no effect"},
}

// PrefixExtractorName is the prefix_extractor value RocksDB can load for an
// extractor named name: a built-in's name, else nullptr ("" means none).
func PrefixExtractorName(name string) string {
	for _, p := range []string{"rocksdb.FixedPrefix.", "rocksdb.CappedPrefix."} {
		if n, ok := strings.CutPrefix(name, p); ok {
			if _, err := strconv.ParseUint(n, 10, 31); err == nil {
				return name
			}
		}
	}
	if name == "rocksdb.Noop" {
		return name
	}
	return "nullptr"
}

// Render renders entries as an OPTIONS file RocksDB 7.8.3 parses, a section
// header before each run of entries of one section.
func Render(entries []Entry) []byte {
	var b bytes.Buffer
	b.WriteString("# This is a RocksDB option file, written by Strata.\n#\n")
	b.WriteString("# Strata reads it only to check compatibility; see docs/rocksdb-compatibility.md.\n")
	var sec, arg string
	for i, e := range entries {
		if i == 0 || e.Section != sec || e.Arg != arg {
			sec, arg = e.Section, e.Arg
			s := Section{Name: sec, Arg: arg}
			fmt.Fprintf(&b, "\n%s\n", s.Title())
		}
		fmt.Fprintf(&b, "  %s=%s\n", e.Key, e.Value)
	}
	return b.Bytes()
}
