package db

// RocksDB OPTIONS files: the glue between a DB and internal/optionsfile,
// which holds the text format and the comparison of settings.
//
// Strata reads the newest OPTIONS file at Open to check that the database
// can be opened: a comparator other than leveldb.BytewiseComparator, or a
// column family other than "default", refuses Open with ErrInvalidArgument.
// Nothing in the file overrides the caller's Options; the settings that
// differ from what Strata uses, or that name features Strata lacks, are
// listed by the PropOptionsFileReport property. RocksDB rejects an unknown
// key, so Strata writes only keys RocksDB 7.8.3 defines, and omits the rest
// (RocksDB then uses its defaults).
//
// A writable Open writes a new OPTIONS file describing the options in force
// (written to OPTIONS-NNNNNN.dbtmp, synced, renamed, directory synced) and
// keeps only the two newest, as RocksDB does, so RocksDB's tools load
// settings that match the files Strata writes.

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/optionsfile"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
)

// PropOptionsFileReport names the property that lists, one per line, the
// settings of the RocksDB OPTIONS file found at Open that Strata did not
// apply: "[Section] key=value: reason". Empty when every mapped setting
// matched or there was no OPTIONS file.
const PropOptionsFileReport = "strata.options-file-report"

// keptOptionsFiles is how many OPTIONS files a writable Open keeps.
const keptOptionsFiles = 2

// readOptionsFile reads and parses OPTIONS-num.
func (d *DB) readOptionsFile(num uint64) (*optionsfile.File, error) {
	name := base.MakeFilename(base.FileKindOptions, num)
	f, err := d.fs.Open(d.path(name))
	if err != nil {
		return nil, errors.Wrapf(err, "strata: opening %s", name)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, optionsfile.MaxSize+1))
	if err != nil {
		return nil, errors.Wrapf(err, "strata: reading %s", name)
	}
	if len(data) > optionsfile.MaxSize {
		return nil, base.CorruptionErrorf("strata: %s is larger than %d bytes", name, optionsfile.MaxSize)
	}
	return optionsfile.Parse(name, data)
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
	report, err := optionsfile.Check(f, d.optionsEntries())
	if err != nil {
		return err
	}
	if cf := f.Section(optionsfile.SecCF, "default"); cf != nil {
		if v, ok := cf.Values["merge_operator"]; ok {
			d.fileMergeOperator, _ = mergeOperatorID(v)
			if d.opts.MergeOperator == nil && d.fileMergeOperator != "" {
				// The database was written with an operator and none is
				// configured. A writable handle would compact the operands
				// into tables that name no operator and rewrite the OPTIONS
				// file with nullptr, losing the record of how to read them:
				// take the built-in of that name, or refuse. A read-only
				// handle changes nothing: it opens, and reading a key with
				// operands fails with an error naming the operator.
				if op := MergeOperatorByName(v); op != nil {
					d.opts.MergeOperator = op
					report = append(report, cf.Title()+" merge_operator="+v+": no Options.MergeOperator: using the built-in "+optionsMergeOperatorValue(op))
				} else if !d.opts.ReadOnly {
					return errors.Wrapf(ErrInvalidArgument,
						"strata: %s was written with merge operator %s, which is not built in: set Options.MergeOperator (or open ReadOnly)", d.dirname, d.fileMergeOperator)
				}
			}
			if line := mergeOperatorReport(cf.Title(), v, d.opts.MergeOperator); line != "" {
				report = append(report, line)
			}
		}
	}
	d.optionsReport = report
	return nil
}

// optionsEntries lists the options in force in RocksDB's syntax, in the
// order Strata writes them. Mutable options are read as they are now.
func (d *DB) optionsEntries() []optionsfile.Entry {
	o := &d.opts
	var out []optionsfile.Entry
	add := func(section, arg, key, value string) *optionsfile.Entry {
		out = append(out, optionsfile.Entry{Section: section, Arg: arg, Key: key, Value: value})
		return &out[len(out)-1]
	}
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	add(optionsfile.SecVersion, "", "rocksdb_version", "7.8.3").OpenOnly = true
	add(optionsfile.SecVersion, "", "options_file_version", "1.1").OpenOnly = true

	add(optionsfile.SecDB, "", "create_if_missing", strconv.FormatBool(o.CreateIfMissing)).OpenOnly = true
	add(optionsfile.SecDB, "", "error_if_exists", strconv.FormatBool(o.ErrorIfExists)).OpenOnly = true
	add(optionsfile.SecDB, "", "max_background_jobs", itoa(int64(o.MaxBackgroundJobs)))
	add(optionsfile.SecDB, "", "max_open_files", itoa(int64(o.MaxOpenFiles))).OpenOnly = true
	add(optionsfile.SecDB, "", "wal_recovery_mode", o.WALRecoveryMode.String()).OpenOnly = true

	cf := func(key, value string) *optionsfile.Entry { return add(optionsfile.SecCF, "default", key, value) }
	cf("comparator", base.ComparatorName)
	cf("merge_operator", optionsMergeOperatorValue(o.MergeOperator)).OpenOnly = true // reported by mergeOperatorReport
	cf("table_factory", "BlockBasedTable").OpenOnly = true
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
	fifo.Equal = func(file, ours string) bool {
		if o.CompactionStyle != FIFOCompaction {
			return true // irrelevant under level compaction
		}
		f, s := optionsfile.ParseNested(file), optionsfile.ParseNested(ours)
		return f["allow_compaction"] == s["allow_compaction"] && f["max_table_files_size"] == s["max_table_files_size"]
	}
	cf("disable_auto_compactions", strconv.FormatBool(d.comp.disableAuto.Load()))
	cf("level0_file_num_compaction_trigger", itoa(int64(o.Level0FileNumCompactionTrigger)))
	cf("level0_slowdown_writes_trigger", itoa(int64(o.Level0SlowdownWritesTrigger)))
	cf("level0_stop_writes_trigger", itoa(int64(o.Level0StopWritesTrigger)))
	cf("target_file_size_base", itoa(o.TargetFileSizeBase))
	cf("max_bytes_for_level_base", itoa(o.MaxBytesForLevelBase))
	cf("max_bytes_for_level_multiplier", fmt.Sprintf("%f", float64(o.MaxBytesForLevelMultiplier))).Equal = optionsfile.SameFloat
	cf("level_compaction_dynamic_level_bytes", strconv.FormatBool(o.LevelCompactionDynamicLevelBytes))

	t := func(key, value string) *optionsfile.Entry { return add(optionsfile.SecTable, "default", key, value) }
	filter := "nullptr"
	if o.BloomBitsPerKey > 0 {
		filter = fmt.Sprintf("bloomfilter:%d:false", o.BloomBitsPerKey)
	}
	t("filter_policy", filter)
	t("whole_key_filtering", "true")
	t("cache_index_and_filter_blocks", strconv.FormatBool(o.CacheIndexAndFilterBlocks))
	t("cache_index_and_filter_blocks_with_high_priority", strconv.FormatBool(!o.DisableCacheIndexAndFilterBlocksWithHighPriority))
	t("block_size", itoa(int64(o.BlockSize)))
	t("block_restart_interval", "16")
	t("index_block_restart_interval", "1")
	t("index_type", o.IndexType.String())
	t("partition_filters", strconv.FormatBool(o.PartitionFilters && o.IndexType == IndexTwoLevelSearch))
	t("metadata_block_size", itoa(int64(o.MetadataBlockSize)))
	t("data_block_index_type", "kDataBlockBinarySearch").OpenOnly = true
	t("enable_index_compression", "true")
	t("checksum", "kXXH3")
	t("format_version", "5")
	return out
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
	return optionsfile.PrefixExtractorName(h.name)
}

// writeOptionsFileLocked writes a new OPTIONS file for the options in force
// and deletes all but the newest keptOptionsFiles; existing lists the
// OPTIONS files already in the directory. d.mu must be held.
func (d *DB) writeOptionsFileLocked(existing []uint64) error {
	num := d.mu.versions.NextFileNum()
	name := base.MakeFilename(base.FileKindOptions, num)
	tmp := d.path(name + ".dbtmp")
	if err := d.writeFileSynced(tmp, optionsfile.Render(d.optionsEntries())); err != nil {
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
	if err := vfs.WriteFileSynced(d.fs, path, data); err != nil {
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

// mergeOperatorID returns the operator name of an OPTIONS file's
// merge_operator value ("" for nullptr) and its delimiter option (","
// when absent).
func mergeOperatorID(v string) (id, delim string) {
	delim = ","
	if strings.HasPrefix(v, "{") {
		m := optionsfile.ParseNested(v)
		id = m["id"]
		if d, ok := m["delimiter"]; ok {
			delim = unescapeOptionValue(d)
		}
	} else {
		id = v
	}
	if id == "nullptr" {
		id = ""
	}
	return id, delim
}

// unescapeOptionValue undoes RocksDB's escaping of option values (a
// backslash before a special character).
func unescapeOptionValue(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// optionsMergeOperatorValue is the merge_operator value of the OPTIONS file
// for op, in RocksDB's syntax.
func optionsMergeOperatorValue(op MergeOperator) string {
	if op == nil {
		return "nullptr"
	}
	if s, ok := op.(*stringAppend); ok {
		d := s.delim
		if strings.ContainsAny(d, `:;{}=\#`) {
			var b strings.Builder
			for i := 0; i < len(d); i++ {
				if strings.IndexByte(`:;{}=\#`, d[i]) >= 0 {
					b.WriteByte('\\')
				}
				b.WriteByte(d[i])
			}
			d = b.String()
		}
		return "{id=" + s.name + ";delimiter=" + d + ";}"
	}
	return op.Name()
}

// mergeOperatorReport is the OPTIONS file report line for a file's
// merge_operator value v when it differs from the configured op ("" when
// they agree).
func mergeOperatorReport(title, v string, op MergeOperator) string {
	id, _ := mergeOperatorID(v)
	switch {
	case op == nil && id == "":
		return ""
	case op == nil:
		return title + " merge_operator=" + v + ": no Options.MergeOperator: reading a key with merge operands fails"
	case optionsMergeOperatorValue(op) == v || (id == op.Name() && !strings.HasPrefix(v, "{")):
		return ""
	}
	return title + " merge_operator=" + v + ": Strata uses " + optionsMergeOperatorValue(op)
}
