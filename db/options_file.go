package db

// RocksDB OPTIONS files.
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
// unknown key, so Strata writes only keys RocksDB 7.8.3 defines, and omits
// the rest (RocksDB then uses its defaults).
//
// Strata reads the newest OPTIONS file at Open to check that the database
// can be opened: a comparator other than leveldb.BytewiseComparator, or a
// column family other than "default", refuses Open with ErrInvalidArgument.
// Nothing in the file overrides the caller's Options; the settings that
// differ from what Strata uses, or that name features Strata lacks, are
// listed by the PropOptionsFileReport property.
//
// A writable Open writes a new OPTIONS file describing the options in force
// (written to OPTIONS-NNNNNN.dbtmp, synced, renamed, directory synced) and
// keeps only the two newest, as RocksDB does, so RocksDB's tools load
// settings that match the files Strata writes.

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/version"
)

// PropOptionsFileReport names the property that lists, one per line, the
// settings of the RocksDB OPTIONS file found at Open that Strata did not
// apply: "[Section] key=value: reason". Empty when every mapped setting
// matched or there was no OPTIONS file.
const PropOptionsFileReport = "strata.options-file-report"

const (
	// maxOptionsFileSize bounds what Open reads of an OPTIONS file (RocksDB
	// writes about 7 KiB).
	maxOptionsFileSize = 1 << 20
	// keptOptionsFiles is how many OPTIONS files a writable Open keeps.
	keptOptionsFiles = 2

	secVersion = "Version"
	secDB      = "DBOptions"
	secCF      = "CFOptions"
	secTable   = "TableOptions/BlockBasedTable"
)

// optionsSection is one [Name "arg"] section of an OPTIONS file.
type optionsSection struct {
	name, arg string
	keys      []string // in file order
	values    map[string]string
}

func (s *optionsSection) title() string {
	if s.arg == "" {
		return "[" + s.name + "]"
	}
	return fmt.Sprintf("[%s %q]", s.name, s.arg)
}

func (s *optionsSection) set(k, v string) {
	if _, ok := s.values[k]; !ok {
		s.keys = append(s.keys, k)
	}
	s.values[k] = v
}

// optionsFile is a parsed OPTIONS file: its sections in file order.
type optionsFile struct {
	name     string
	sections []*optionsSection
}

func (f *optionsFile) section(name, arg string) *optionsSection {
	for _, s := range f.sections {
		if s.name == name && s.arg == arg {
			return s
		}
	}
	return nil
}

// parseOptionsFile parses the text of an OPTIONS file; name is for errors.
func parseOptionsFile(name string, data []byte) (*optionsFile, error) {
	f := &optionsFile{name: name}
	var cur *optionsSection
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
			cur = &optionsSection{name: sname, arg: arg, values: make(map[string]string)}
			f.sections = append(f.sections, cur)
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
	for _, want := range []struct{ name, arg string }{{secVersion, ""}, {secDB, ""}, {secCF, "default"}} {
		if f.section(want.name, want.arg) == nil {
			s := optionsSection{name: want.name, arg: want.arg}
			return nil, base.CorruptionErrorf("strata: %s: no %s section", name, s.title())
		}
	}
	if s := f.section(secVersion, ""); s.values["rocksdb_version"] == "" || s.values["options_file_version"] == "" {
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

// parseNested parses a "{k=v;k=v;}" value into its fields.
func parseNested(v string) map[string]string {
	m := make(map[string]string)
	v = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(v), "{"), "}")
	for _, kv := range strings.Split(v, ";") {
		if k, val, ok := strings.Cut(kv, "="); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(val)
		}
	}
	return m
}

// readOptionsFile reads and parses OPTIONS-num.
func (d *DB) readOptionsFile(num uint64) (*optionsFile, error) {
	name := base.MakeFilename(base.FileKindOptions, num)
	f, err := d.fs.Open(d.path(name))
	if err != nil {
		return nil, errors.Wrapf(err, "strata: opening %s", name)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxOptionsFileSize+1))
	if err != nil {
		return nil, errors.Wrapf(err, "strata: reading %s", name)
	}
	if len(data) > maxOptionsFileSize {
		return nil, base.CorruptionErrorf("strata: %s is larger than %d bytes", name, maxOptionsFileSize)
	}
	return parseOptionsFile(name, data)
}

// checkOptionsFiles reads the newest of the OPTIONS files nums (ascending),
// refuses what Strata cannot open and records the report of settings that
// do not map. No OPTIONS file is fine: RocksDB does not require one.
func (d *DB) checkOptionsFiles(nums []uint64) error {
	if len(nums) == 0 {
		return nil
	}
	f, err := d.readOptionsFile(nums[len(nums)-1])
	if err != nil {
		return err
	}
	report, err := checkOptionsFile(f, d.optionsEntries())
	if err != nil {
		return err
	}
	d.optionsReport = report
	return nil
}

// checkOptionsFile refuses a file describing what Strata cannot open, and
// otherwise returns the settings that do not map onto ours (the entries
// Strata would write), one line each.
func checkOptionsFile(f *optionsFile, ours []optionsEntry) ([]string, error) {
	for _, s := range f.sections {
		if (s.name == secCF || strings.HasPrefix(s.name, "TableOptions/")) && s.arg != "default" {
			return nil, errors.Wrapf(ErrInvalidArgument,
				"strata: %s: column family %q is not supported (Strata opens only the default column family)", f.name, s.arg)
		}
	}
	cf := f.section(secCF, "default")
	if c, ok := cf.values["comparator"]; ok && c != base.ComparatorName {
		return nil, errors.Wrapf(ErrInvalidArgument,
			"strata: %s: comparator %q is not supported (Strata orders keys with %s only)", f.name, c, base.ComparatorName)
	}
	var report []string
	for _, e := range ours {
		if e.openOnly {
			continue
		}
		s := f.section(e.section, e.arg)
		if s == nil {
			continue
		}
		v, ok := s.values[e.key]
		if !ok || e.same(v) {
			continue
		}
		report = append(report, fmt.Sprintf("%s %s=%s: Strata uses %s", s.title(), e.key, v, e.value))
	}
	for _, u := range unsupportedSettings {
		s := f.section(u.section, u.arg)
		if s == nil {
			continue
		}
		if v, ok := s.values[u.key]; ok && v != u.neutral {
			report = append(report, fmt.Sprintf("%s %s=%s: %s", s.title(), u.key, v, u.why))
		}
	}
	return report, nil
}

// unsupportedSettings are settings naming features Strata lacks; a value
// other than neutral is reported.
var unsupportedSettings = []struct {
	section, arg, key, neutral, why string
}{
	{secCF, "default", "merge_operator", "nullptr", "merge operators are not supported: reading a key with Merge entries fails"},
	{secCF, "default", "compaction_filter", "nullptr", "compaction filters are not supported"},
	{secCF, "default", "compaction_filter_factory", "nullptr", "compaction filters are not supported"},
	{secCF, "default", "enable_blob_files", "false", "blob files are not supported"},
	{secCF, "default", "table_factory", "BlockBasedTable", "only block-based tables are supported"},
	{secDB, "", "allow_2pc", "false", "two-phase commit is not supported"},
	{secDB, "", "atomic_flush", "false", "Strata has one column family; atomic_flush has no effect"},
}

// optionsEntry is one setting Strata writes to its OPTIONS file.
type optionsEntry struct {
	section, arg, key, value string
	// openOnly marks settings that describe one Open call (create_if_missing)
	// rather than the database; they are never reported.
	openOnly bool
	// equal compares a file's value with value; nil means string equality.
	equal func(file, ours string) bool
}

func (e *optionsEntry) same(file string) bool {
	if e.equal != nil {
		return e.equal(file, e.value)
	}
	return file == e.value
}

// optionsEntries lists the options in force in RocksDB's syntax, in the
// order Strata writes them. Mutable options are read as they are now.
func (d *DB) optionsEntries() []optionsEntry {
	o := &d.opts
	var out []optionsEntry
	add := func(section, arg, key, value string) *optionsEntry {
		out = append(out, optionsEntry{section: section, arg: arg, key: key, value: value})
		return &out[len(out)-1]
	}
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	add(secVersion, "", "rocksdb_version", "7.8.3").openOnly = true
	add(secVersion, "", "options_file_version", "1.1").openOnly = true

	add(secDB, "", "create_if_missing", strconv.FormatBool(o.CreateIfMissing)).openOnly = true
	add(secDB, "", "error_if_exists", strconv.FormatBool(o.ErrorIfExists)).openOnly = true
	add(secDB, "", "max_background_jobs", itoa(int64(o.MaxBackgroundJobs)))
	add(secDB, "", "max_open_files", itoa(int64(o.MaxOpenFiles))).openOnly = true
	add(secDB, "", "wal_recovery_mode", o.WALRecoveryMode.String()).openOnly = true

	cf := func(key, value string) *optionsEntry { return add(secCF, "default", key, value) }
	cf("comparator", base.ComparatorName)
	cf("merge_operator", "nullptr").openOnly = true // reported by unsupportedSettings
	cf("table_factory", "BlockBasedTable").openOnly = true
	cf("write_buffer_size", itoa(d.writeBufferSize.Load()))
	cf("max_write_buffer_number", itoa(int64(o.MaxWriteBufferNumber)))
	cf("compression", rocksdbCompressionName(o.Compression))
	cf("prefix_extractor", d.rocksdbPrefixExtractorName())
	cf("num_levels", itoa(version.NumLevels))
	style := "kCompactionStyleLevel"
	if o.CompactionStyle == FIFOCompaction {
		style = "kCompactionStyleFIFO"
	}
	cf("compaction_style", style)
	fifo := cf("compaction_options_fifo", fmt.Sprintf("{allow_compaction=%t;max_table_files_size=%d;}",
		o.FIFOAllowCompaction, o.FIFOMaxTableFilesSize))
	fifo.equal = func(file, ours string) bool {
		if o.CompactionStyle != FIFOCompaction {
			return true // irrelevant under level compaction
		}
		f, s := parseNested(file), parseNested(ours)
		return f["allow_compaction"] == s["allow_compaction"] && f["max_table_files_size"] == s["max_table_files_size"]
	}
	cf("disable_auto_compactions", strconv.FormatBool(d.disableAutoCompactions.Load()))
	cf("level0_file_num_compaction_trigger", itoa(int64(o.Level0FileNumCompactionTrigger)))
	cf("level0_slowdown_writes_trigger", itoa(int64(o.Level0SlowdownWritesTrigger)))
	cf("level0_stop_writes_trigger", itoa(int64(o.Level0StopWritesTrigger)))
	cf("target_file_size_base", itoa(o.TargetFileSizeBase))
	cf("max_bytes_for_level_base", itoa(o.MaxBytesForLevelBase))
	cf("max_bytes_for_level_multiplier", fmt.Sprintf("%f", float64(o.MaxBytesForLevelMultiplier))).equal = sameFloat

	t := func(key, value string) *optionsEntry { return add(secTable, "default", key, value) }
	filter := "nullptr"
	if o.BloomBitsPerKey > 0 {
		filter = fmt.Sprintf("bloomfilter:%d:false", o.BloomBitsPerKey)
	}
	t("filter_policy", filter)
	t("whole_key_filtering", "true")
	t("block_size", itoa(int64(o.BlockSize)))
	t("block_restart_interval", "16")
	t("index_block_restart_interval", "1")
	t("index_type", "kBinarySearch").openOnly = true // tables record their own
	t("data_block_index_type", "kDataBlockBinarySearch").openOnly = true
	t("enable_index_compression", "true")
	t("checksum", "kXXH3")
	t("format_version", "5")
	return out
}

func sameFloat(a, b string) bool {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && x == y
}

// rocksdbCompressionName is RocksDB's CompressionType name for c.
func rocksdbCompressionName(c Compression) string {
	switch c {
	case SnappyCompression:
		return "kSnappyCompression"
	case ZstdCompression:
		return "kZSTD"
	}
	return "kNoCompression"
}

// rocksdbPrefixExtractorName is the prefix_extractor value RocksDB can load
// for the extractor in force: a built-in's name, else nullptr (tables carry
// the extractor name they were written with either way).
func (d *DB) rocksdbPrefixExtractorName() string {
	h := d.extractor.Load()
	if h == nil {
		return "nullptr"
	}
	for _, p := range []string{"rocksdb.FixedPrefix.", "rocksdb.CappedPrefix."} {
		if n, ok := strings.CutPrefix(h.name, p); ok {
			if _, err := strconv.ParseUint(n, 10, 31); err == nil {
				return h.name
			}
		}
	}
	if h.name == "rocksdb.Noop" {
		return h.name
	}
	return "nullptr"
}

// renderOptionsFile renders entries as an OPTIONS file RocksDB 7.8.3 parses.
func renderOptionsFile(entries []optionsEntry) []byte {
	var b bytes.Buffer
	b.WriteString("# This is a RocksDB option file, written by Strata.\n#\n")
	b.WriteString("# Strata reads it only to check compatibility; see docs/rocksdb-compatibility.md.\n")
	var sec, arg string
	for i, e := range entries {
		if i == 0 || e.section != sec || e.arg != arg {
			sec, arg = e.section, e.arg
			s := optionsSection{name: sec, arg: arg}
			fmt.Fprintf(&b, "\n%s\n", s.title())
		}
		fmt.Fprintf(&b, "  %s=%s\n", e.key, e.value)
	}
	return b.Bytes()
}

// writeOptionsFileLocked writes a new OPTIONS file for the options in force
// and deletes all but the newest keptOptionsFiles; existing lists the
// OPTIONS files already in the directory. d.mu must be held.
func (d *DB) writeOptionsFileLocked(existing []uint64) error {
	num := d.mu.versions.NextFileNum()
	name := base.MakeFilename(base.FileKindOptions, num)
	tmp := d.path(name + ".dbtmp")
	if err := d.writeFileSynced(tmp, renderOptionsFile(d.optionsEntries())); err != nil {
		_ = d.fs.Remove(tmp)
		return err
	}
	if err := d.fs.Rename(tmp, d.path(name)); err != nil {
		_ = d.fs.Remove(tmp)
		return errors.Wrapf(err, "strata: renaming %s", tmp)
	}
	if err := d.syncDir(); err != nil {
		return err
	}
	all := append(append([]uint64(nil), existing...), num)
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for _, n := range all[:max(0, len(all)-keptOptionsFiles)] {
		d.removeFile(base.FileKindOptions, n)
	}
	return nil
}

// writeOptionsFile writes a new OPTIONS file after a change of the mutable
// options (SetOptions), keeping the two newest. It lists the directory.
func (d *DB) writeOptionsFile() error {
	if d.opts.ReadOnly {
		return nil
	}
	l, err := d.listDir()
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.writeOptionsFileLocked(l.options)
}

func (d *DB) writeFileSynced(path string, data []byte) error {
	f, err := d.fs.Create(path)
	if err != nil {
		return errors.Wrapf(err, "strata: creating %s", path)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Wrapf(err, "strata: writing %s", path)
	}
	return nil
}

// optionsFileReport is the value of PropOptionsFileReport.
func (d *DB) optionsFileReport() string {
	if len(d.optionsReport) == 0 {
		return ""
	}
	return strings.Join(d.optionsReport, "\n") + "\n"
}

// loadVersions loads the MANIFEST, naming unsupported column families as
// such (the error wraps both version.ErrUnsupportedColumnFamily and
// ErrInvalidArgument).
func loadVersions(d *DB, opts version.Options) (*version.VersionSet, error) {
	vs, err := version.Load(d.fs, d.dirname, opts)
	if err != nil && errors.Is(err, version.ErrUnsupportedColumnFamily) {
		return nil, errors.Wrapf(base.Mark(err, ErrInvalidArgument),
			"strata: %s was written with column families other than \"default\", which Strata does not support", d.dirname)
	}
	return vs, err
}
